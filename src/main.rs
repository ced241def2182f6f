//! The `ttftbench` binary: parses the command line, runs the library, maps errors to exit codes
//! (0 ok, 1 run failed or thresholds breached, 2 usage error, 130 interrupted): the one place an
//! error becomes text.

use std::process::ExitCode;

fn main() -> ExitCode {
    let typed: Vec<String> = std::env::args().collect();
    let argv = match ttftbench::cli::config::expand(typed.clone()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let cli = match ttftbench::cli::parse(&argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            if argv.len() != typed.len() {
                eprintln!(
                    "note: the --config file's keys were read as the flags of the same names, before the command line's"
                );
            }
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TTFTBENCH_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    ttftbench::app::raise_fd_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(ttftbench::app::run(cli.command, argv));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
