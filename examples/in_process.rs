//! The engine without the CLI: start the simulated server in this process, profile it over gRPC
//! at two concurrency levels, and read the numbers from the returned summaries.
//!
//! Run with `cargo run --release --example in_process`.

use clap::Parser;
use ttftbench::cli::{Cli, Command};
use ttftbench::load::Interrupt;
use ttftbench::metrics::Metric;
use ttftbench::profile::{self, Ui};
use ttftbench::sim::{self, SimConfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let server = sim::start(SimConfig::default()).await?;
    let out_dir = std::env::temp_dir().join("ttftbench-example");
    let argv: Vec<String> = [
        "ttftbench",
        "profile",
        "-m",
        "gpt2",
        "--streaming",
        "-u",
        &server.grpc_target(),
        "--concurrency",
        "1,8",
        "--request-count",
        "16",
        "--synthetic-input-tokens-mean",
        "128",
        "--output-tokens-mean",
        "32",
        "--artifact-dir",
        out_dir.to_str().unwrap_or("ttftbench-example"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // The same parse-then-plan path the CLI takes.
    let Command::Profile(args) = Cli::try_parse_from(&argv)?.command else {
        anyhow::bail!("not a profile command");
    };
    let plan = args.plan(&argv)?;
    let outcome = profile::run(&plan, Interrupt::new(), Ui::silent()).await?;
    for level in &outcome.levels {
        let s = &level.summary;
        let ttft = s
            .stats
            .get(Metric::TimeToFirstToken)
            .map_or(f64::NAN, |t| t.p50);
        println!(
            "{:>14}: TTFT p50 {:7.2} ms, {:7.1} output tokens/s, files in {}",
            s.stimulus.name(),
            ttft,
            s.stats.output_token_throughput,
            level.dir.display()
        );
    }
    server.shutdown().await;
    Ok(())
}
