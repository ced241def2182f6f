//! The subcommands as library functions: what `main` calls after parsing. Each returns the
//! process exit code, or an error (a [`crate::plan::UsageError`] means exit code 2).

use std::time::Duration;

use anyhow::Result;

use crate::cli::{Command, ProfileArgs};
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
    }
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
    if verbosity != Verbosity::Quiet {
        if let Some(d) = &outcome.sweep_dir {
            eprintln!("summary: {}", d.join(crate::artifact::SUMMARY_FILE).display());
        }
        if outcome.interrupted {
            eprintln!("interrupted: artifacts of the levels above are complete and marked interrupted");
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
