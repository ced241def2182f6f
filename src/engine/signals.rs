//! Ctrl-C and SIGTERM: the first stops sending and gives in-flight requests [`GRACE`] to finish;
//! a second (or the end of the grace) abandons them (recorded as `abandoned`, counted apart from
//! errors). Every mode stops the same way, and its artifacts cover what was measured.

use std::time::Duration;

use crate::load::Interrupt;

/// How long in-flight requests may finish after Ctrl-C before they are abandoned.
pub const GRACE: Duration = Duration::from_secs(10);

/// Watches for Ctrl-C / SIGTERM on behalf of `cancel`.
pub fn watch_signals(interrupt: Interrupt) {
    tokio::spawn(async move {
        if wait_signal().await.is_err() {
            return;
        }
        // A live view on the terminal says it in its own place (a line written into it would
        // be drawn over).
        if !super::live::redrawing() {
            eprintln!(
                "\nstopping: no new requests; waiting up to {}s for in-flight ones (Ctrl-C again to abandon them)",
                GRACE.as_secs()
            );
        }
        interrupt.stop_sending();
        tokio::select! {
            _ = tokio::time::sleep(GRACE) => {}
            _ = wait_signal() => {}
        }
        interrupt.abort();
    });
}

/// Resolves at the next Ctrl-C or SIGTERM.
pub async fn wait_signal() -> std::io::Result<()> {
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
