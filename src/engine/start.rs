//! When a level starts: shards of one plan wait for the same wall-clock moment (`--start-at`,
//! then one level slot later for each later level), so the server sees their load together.
//! The wait follows the wall clock, re-read at least once a second, so a clock stepped by NTP
//! while waiting still ends at the agreed moment; the last stretch sleeps on the monotonic clock.
//! A shard that reaches a level after its moment starts at once and records how late it was.

use std::time::Duration;

use serde::Serialize;

use crate::load::Interrupt;
use crate::plan::ShardPlan;
use crate::record::unix_now_ns;

/// How a level's start went against its planned moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LevelStart {
    /// The planned moment (Unix ns).
    pub planned_unix_ns: u64,
    /// When the level actually started (Unix ns).
    pub actual_unix_ns: u64,
    /// Whether the process was already past the moment when it got there (it did not wait).
    pub late: bool,
}

impl LevelStart {
    /// How far after the planned moment the level started (ns; a punctual start is the timer's
    /// wake-up delay, well under a millisecond to a few).
    pub fn delay_ns(&self) -> u64 {
        self.actual_unix_ns.saturating_sub(self.planned_unix_ns)
    }
}

/// With `--start-at`: the line that says when the first level starts (and, with a level slot,
/// how far apart the later ones are), prefixed with the shard; `None` without a start time.
pub fn schedule_line(shard: &ShardPlan) -> Option<String> {
    let at = shard.start_at_unix_ns?;
    let who = if shard.shard.is_whole() {
        String::new()
    } else {
        format!("{}: ", shard.shard)
    };
    let slot = shard.level_slot.map_or_else(String::new, |d| {
        format!(", then a level every {:.0} s", d.as_secs_f64())
    });
    let wait = (at as f64 - unix_now_ns() as f64) / 1e9;
    Some(format!(
        "{who}first level starts at {} ({}){slot}",
        crate::report::html::utc(at),
        if wait >= 0.0 {
            format!("in {wait:.1} s")
        } else {
            format!("{:.1} s ago: starting at once", -wait)
        }
    ))
}

/// Waits until the wall clock reads `at_unix_ns`; `None` when the run was stopped meanwhile.
pub async fn wait_until(at_unix_ns: u64, interrupt: &Interrupt) -> Option<LevelStart> {
    let late = unix_now_ns() > at_unix_ns;
    loop {
        let now = unix_now_ns();
        if now >= at_unix_ns {
            break;
        }
        let remaining = Duration::from_nanos(at_unix_ns - now);
        let step = remaining.min(Duration::from_secs(1));
        tokio::select! {
            _ = tokio::time::sleep(step) => {}
            _ = interrupt.wait_stop() => return None,
        }
    }
    Some(LevelStart {
        planned_unix_ns: at_unix_ns,
        actual_unix_ns: unix_now_ns(),
        late,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_the_moment_and_says_when_it_is_late() {
        let interrupt = Interrupt::new();
        let at = unix_now_ns() + 120_000_000;
        let s = wait_until(at, &interrupt).await.unwrap();
        assert!(s.actual_unix_ns >= at, "never early");
        assert!(!s.late);
        // Generous: the timer wakes within milliseconds on an idle machine.
        assert!(s.delay_ns() < 100_000_000, "{} ns late", s.delay_ns());
        let past = unix_now_ns() - 2_000_000_000;
        let s = wait_until(past, &interrupt).await.unwrap();
        assert!(s.late && s.delay_ns() >= 2_000_000_000);
        interrupt.stop_sending();
        assert_eq!(
            wait_until(unix_now_ns() + 60_000_000_000, &interrupt).await,
            None
        );
    }
}
