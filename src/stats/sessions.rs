//! Whole sessions of a level: how long an agent's task took from its first request to the end
//! of its last answer (think and tool time, sub-agents and joins included), how many requests
//! and tool round trips it made, and how many sessions failed or were cut short by the level's
//! end. The worker that ran a session reports it once, when it ends ([`SessionOutcome`],
//! through [`SessionReports`]);
//! memory is one histogram and a few counters, whatever the number of sessions.

use serde::{Deserialize, Serialize};

use super::Dist;
use crate::load::SessionReports;
use crate::metrics::{PercentileMethod, Stats};
use crate::record::{SessionEnd, SessionOutcome};

/// A level's sessions in numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStats {
    /// Sessions that ran to their end.
    pub completed: u64,
    /// Sessions ended by a failed turn.
    pub failed: u64,
    /// Sessions the level's end cut short.
    pub cut_short: u64,
    /// Time to task completion of the completed sessions (ms).
    pub completion: Option<Stats>,
    /// Requests per completed session (average).
    pub turns_avg: f64,
    /// Tool round trips per completed session (average).
    pub tool_round_trips_avg: f64,
}

/// The sessions of one phase or level, as they end.
#[derive(Clone, Debug, Default)]
pub struct SessionDists {
    /// Time to task completion of the completed sessions (ns).
    pub completion: Dist,
    /// Sessions ended by a failed turn.
    pub failed: u64,
    /// Sessions the level's end cut short.
    pub cut: u64,
    /// Requests of the completed sessions, added up.
    pub turns: u64,
    /// Tool round trips of the completed sessions, added up.
    pub tools: u64,
}

impl SessionDists {
    /// Accounts one ended session.
    pub fn record(&mut self, s: SessionOutcome) {
        match s.end {
            SessionEnd::Completed(ns) => {
                self.completion.record(ns);
                self.turns += u64::from(s.turns);
                self.tools += u64::from(s.tool_round_trips);
            }
            SessionEnd::Failed => self.failed += 1,
            SessionEnd::Cut => self.cut += 1,
        }
    }

    /// Adds another phase's (or shard's) sessions.
    pub fn merge(&mut self, other: &SessionDists) {
        self.completion.merge(&other.completion);
        self.failed += other.failed;
        self.cut += other.cut;
        self.turns += other.turns;
        self.tools += other.tools;
    }

    /// The numbers (ms), `None` when no session ended (a level without sessions).
    pub fn summarize(&self, method: PercentileMethod) -> Option<SessionStats> {
        let completed = self.completion.count();
        if completed + self.failed + self.cut == 0 {
            return None;
        }
        let per = |n: u64| {
            if completed == 0 {
                0.0
            } else {
                n as f64 / completed as f64
            }
        };
        Some(SessionStats {
            completed,
            failed: self.failed,
            cut_short: self.cut,
            completion: (completed > 0).then(|| self.completion.stats_by(1e-6, method)),
            turns_avg: per(self.turns),
            tool_round_trips_avg: per(self.tools),
        })
    }
}

/// The engine's collection of a measured phase's sessions, reported by the load's workers.
impl SessionReports for std::sync::Mutex<SessionDists> {
    fn ended(&self, s: SessionOutcome) {
        self.lock().unwrap_or_else(|e| e.into_inner()).record(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(ms: u64, turns: u32, tools: u32) -> SessionOutcome {
        SessionOutcome {
            end: SessionEnd::Completed(ms * 1_000_000),
            turns,
            tool_round_trips: tools,
        }
    }

    #[test]
    fn completed_sessions_are_timed_and_the_others_counted() {
        let mut d = SessionDists::default();
        assert_eq!(d.summarize(PercentileMethod::Linear), None);
        d.record(done(100, 3, 1));
        d.record(done(300, 5, 3));
        let mut other = SessionDists::default();
        for end in [SessionEnd::Failed, SessionEnd::Cut, SessionEnd::Cut] {
            other.record(SessionOutcome {
                end,
                turns: 9,
                tool_round_trips: 9,
            });
        }
        d.merge(&other);
        let s = d.summarize(PercentileMethod::Linear).unwrap();
        assert_eq!((s.completed, s.failed, s.cut_short), (2, 1, 2));
        let c = s.completion.unwrap();
        assert_eq!((c.count, c.avg, c.min, c.max), (2, 200.0, 100.0, 300.0));
        // Only completed sessions count towards the per-session averages.
        assert_eq!((s.turns_avg, s.tool_round_trips_avg), (4.0, 2.0));
    }

    #[test]
    fn sessions_that_all_failed_have_no_completion_time() {
        let mut d = SessionDists::default();
        d.record(SessionOutcome {
            end: SessionEnd::Failed,
            turns: 2,
            tool_round_trips: 0,
        });
        let s = d.summarize(PercentileMethod::Linear).unwrap();
        assert_eq!((s.completed, s.failed, s.completion), (0, 1, None));
        assert_eq!(s.turns_avg, 0.0);
    }
}
