//! The subcommands as library functions: what `main` calls after parsing. Each returns the
//! process exit code, or an error (a [`crate::plan::UsageError`] means exit code 2).

use std::time::Duration;

use anyhow::Result;
use clap::Parser;

use crate::cli::{Command, DemoArgs, EngineArgs, ProfileArgs, ServeArgs};
use crate::load::Cancel;
use crate::plan::{RunPlan, Verbosity};
use crate::report::console;
use crate::run::{self, Outcome, Ui};

/// How long in-flight requests may finish after Ctrl-C before they are abandoned.
const GRACE: Duration = Duration::from_secs(10);

/// Runs one subcommand.
pub async fn run(command: Command, argv: Vec<String>) -> Result<u8> {
    match command {
        Command::Profile(args) => profile(&args, &argv).await,
        Command::Serve(args) => serve(&args).await,
        Command::Demo(args) => demo(&args).await,
    }
}

/// The simulator's configuration from `serve` flags.
pub fn sim_config(
    bind: std::net::IpAddr,
    ports: (u16, u16, u16),
    e: &EngineArgs,
) -> Result<crate::sim::SimConfig> {
    let engine = if e.instant {
        crate::sim::EngineConfig::instant()
    } else {
        crate::sim::EngineConfig {
            max_batch: e.max_batch.max(1),
            max_queue: e.max_queue,
            prefill_base_us: e.prefill_base_us,
            prefill_us_per_token: e.prefill_us_per_token,
            decode_base_us: e.decode_base_us,
            decode_us_per_seq: e.decode_us_per_seq,
        }
    };
    let faults = crate::sim::FaultConfig {
        error_rate: e.fault_error_rate,
        cut_rate: e.fault_cut_rate,
        stall_rate: e.fault_stall_rate,
        stall_ms: e.fault_stall_ms,
        malformed_rate: e.fault_malformed_rate,
        unavailable: e.fault_unavailable,
    };
    faults
        .validate()
        .map_err(|err| crate::plan::UsageError(format!("{err:#}")))?;
    Ok(crate::sim::SimConfig {
        bind,
        http_port: ports.0,
        grpc_port: ports.1,
        metrics_port: ports.2,
        engine,
        faults,
        api_key: e.require_api_key.clone(),
        access_token: e.access_token.clone(),
        ..crate::sim::SimConfig::default()
    })
}

async fn serve(a: &ServeArgs) -> Result<u8> {
    use std::io::Write;
    let cfg = sim_config(
        a.address,
        (a.http_port, a.grpc_port, a.metrics_port),
        &a.engine,
    )?;
    let handle = crate::sim::start(cfg).await?;
    // Output errors are ignored: a server whose stdout reader went away keeps serving.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "ttftbench serve: simulated Triton-compatible inference server"
    );
    let _ = writeln!(
        out,
        "HTTP (KServe v2 + OpenAI) listening on {}",
        handle.http_addr
    );
    let _ = writeln!(out, "gRPC (KServe v2) listening on {}", handle.grpc_addr);
    let _ = writeln!(
        out,
        "metrics (Prometheus) listening on {}",
        handle.metrics_addr
    );
    let _ = writeln!(out, "models: {}", handle.model_names().join(", "));
    let _ = out.flush();
    drop(out);
    wait_signal().await?;
    eprintln!("shutting down");
    handle.shutdown().await;
    Ok(0)
}

async fn demo(a: &DemoArgs) -> Result<u8> {
    let cfg = crate::sim::SimConfig::default();
    let sim = crate::sim::start(cfg).await?;
    let mut argv: Vec<String> = [
        "ttftbench",
        "profile",
        "-m",
        "gpt2",
        "--service-kind",
        "triton",
        "--backend",
        "tensorrtllm",
        "--streaming",
        "--synthetic-input-tokens-mean",
        "200",
        "--synthetic-input-tokens-stddev",
        "20",
        "--output-tokens-mean",
        "100",
        "--output-tokens-stddev",
        "10",
        "--num-prompts",
        "100",
        "--measurement-interval",
        "4000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.extend([
        "--concurrency".into(),
        a.concurrency.clone(),
        "--url".into(),
        sim.grpc_target(),
        "--server-metrics-url".into(),
        sim.metrics_url(),
        "--artifact-dir".into(),
        a.artifact_dir.to_string_lossy().into_owned(),
    ]);
    if a.quiet {
        argv.push("--quiet".into());
    }
    let parsed = crate::cli::Cli::try_parse_from(&argv)
        .map_err(|e| crate::plan::UsageError(e.to_string()))?;
    let Command::Profile(args) = parsed.command else {
        return Err(crate::plan::UsageError(
            "demo: internal command line did not parse as profile".into(),
        )
        .into());
    };
    let plan = RunPlan::from_profile(&args, &argv)?;
    if !a.quiet {
        eprintln!(
            "demo: simulated Triton server on {} (gRPC) / {} (HTTP), model gpt2 with {} batch slots",
            sim.grpc_target(),
            sim.http_url(),
            crate::sim::EngineConfig::default().max_batch
        );
        eprintln!("demo: running {}", plan.command_line);
    }
    let cancel = Cancel::new();
    watch_signals(cancel.clone());
    let outcome = run::profile(&plan, cancel, Ui::for_terminal(plan.verbosity)).await?;
    let code = finish(&outcome, plan.verbosity);
    if !a.quiet {
        eprintln!("artifacts: {}", a.artifact_dir.display());
        eprintln!(
            "next: `ttftbench serve` starts the same server on Triton's ports (8000/8001/8002); point the seeds' commands at it, or at your own Triton."
        );
    }
    sim.shutdown().await;
    Ok(code)
}

async fn profile(args: &ProfileArgs, argv: &[String]) -> Result<u8> {
    let plan = RunPlan::from_profile(args, argv)?;
    let cancel = Cancel::new();
    watch_signals(cancel.clone());
    let ui = Ui::for_terminal(plan.verbosity);
    let outcome = run::profile(&plan, cancel, ui).await?;
    Ok(finish(&outcome, plan.verbosity))
}

/// Prints the results table and picks the exit code.
fn finish(outcome: &Outcome, verbosity: Verbosity) -> u8 {
    let summaries: Vec<_> = outcome.levels.iter().map(|l| l.summary.clone()).collect();
    if summaries.is_empty() {
        eprintln!("no level completed");
        return 1;
    }
    print!("{}", console::sweep_table(&summaries));
    if summaries.len() > 1 {
        for line in &outcome.verdict.lines {
            println!("{line}");
        }
    }
    if verbosity != Verbosity::Quiet {
        if let Some(d) = &outcome.sweep_dir {
            eprintln!(
                "summary: {}",
                d.join(crate::artifact::SUMMARY_FILE).display()
            );
        }
        if outcome.interrupted {
            eprintln!(
                "interrupted: artifacts of the levels above are complete and marked interrupted"
            );
        }
    }
    if outcome.all_failed() {
        eprintln!("error: every request failed; see the errors above");
        return 1;
    }
    0
}

/// Ctrl-C / SIGTERM: stop sending, give in-flight requests [`GRACE`] to finish, then abandon them.
/// A second signal abandons them at once.
fn watch_signals(cancel: Cancel) {
    tokio::spawn(async move {
        if wait_signal().await.is_err() {
            return;
        }
        eprintln!(
            "\nstopping: no new requests; waiting up to {}s for in-flight ones (Ctrl-C again to abandon them)",
            GRACE.as_secs()
        );
        cancel.stop_sending();
        tokio::select! {
            _ = tokio::time::sleep(GRACE) => {}
            _ = wait_signal() => {}
        }
        cancel.abort();
    });
}

async fn wait_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
