//! How a run ends, the same in every mode: which exit code its levels earn and the lines that
//! explain it. Order of precedence: nothing measured or every request failed (1), a level's
//! error share over `--max-error-rate` (1), an objective missed (1), interrupted (130),
//! untrustworthy numbers under `--strict` (1), a single level that never stabilised (1, as
//! perf_analyzer), else 0. Levels with more than [`LOUD_ERROR_SHARE`] of their requests failed
//! get a warning line whatever the code.

use crate::analysis::slo::SloResult;
use crate::load::Stimulus;
use crate::stats::{ErrorCount, LevelSummary};
use std::fmt::Write as _;

/// Error share above which a level gets a warning line under the table.
pub const LOUD_ERROR_SHARE: f64 = 0.01;

pub use crate::plan::DEFAULT_MAX_ERROR_RATE;

/// One finished level, as the exit code sees it.
#[derive(Debug, Clone, Copy)]
pub struct LevelEnd<'a> {
    /// The level's load.
    pub load: Stimulus,
    /// Requests that succeeded.
    pub succeeded: u64,
    /// Failures by kind, most frequent first.
    pub errors: &'a [ErrorCount],
    /// Whether its numbers can be trusted.
    pub trustworthy: bool,
    /// Its objectives' results.
    pub slo: &'a [SloResult],
    /// Whether its stability rule was met (true for fixed stops).
    pub stable: bool,
}

impl<'a> LevelEnd<'a> {
    /// A level of a fixed stop, from its summary.
    pub fn of(summary: &'a LevelSummary, slo: &'a [SloResult]) -> LevelEnd<'a> {
        LevelEnd {
            load: summary.stimulus,
            succeeded: summary.stats.request_count,
            errors: &summary.stats.errors,
            trustworthy: summary.validity.trustworthy,
            slo,
            stable: true,
        }
    }
}

impl LevelEnd<'_> {
    fn failed(&self) -> u64 {
        self.errors.iter().map(|e| e.count).sum()
    }

    /// Failed requests as a share of all the level's requests (0 when it sent none).
    pub fn error_share(&self) -> f64 {
        let failed = self.failed();
        let all = failed + self.succeeded;
        if all == 0 {
            0.0
        } else {
            failed as f64 / all as f64
        }
    }

    /// `concurrency100000: 35807 of 36215 requests failed (98.9 %), most with timeout: …`.
    fn error_line(&self) -> String {
        let failed = self.failed();
        let mut line = format!(
            "{}: {failed} of {} requests failed ({})",
            self.load.name(),
            failed + self.succeeded,
            percent(self.error_share())
        );
        if let Some(e) = self.errors.first() {
            let _ = write!(line, ", most with {}: {}", e.kind, short_error(&e.example));
        }
        line
    }
}

/// `98.9 %`, `0.4 %`, `50 %`.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if (p - p.round()).abs() < 0.05 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// What the run asked for besides its levels.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// `--strict`: untrustworthy levels fail the run.
    pub strict: bool,
    /// A run of one level fails when that level never stabilised (perf_analyzer's rule).
    pub single_level_must_stabilize: bool,
    /// `--max-error-rate`: a level with a larger share of failed requests fails the run.
    pub max_error_rate: f64,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            strict: false,
            single_level_must_stabilize: false,
            max_error_rate: DEFAULT_MAX_ERROR_RATE,
        }
    }
}

/// The exit code and the lines (for stderr) that say why it is not 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// Process exit code.
    pub code: u8,
    /// Why, one line each (for 0 only the levels with many failed requests; objectives print
    /// their own block).
    pub lines: Vec<String>,
}

/// Decides how a run with these levels ends: the exit code's reason after a warning line for
/// every level with more than [`LOUD_ERROR_SHARE`] of its requests failed.
pub fn ending(levels: &[LevelEnd<'_>], interrupted: bool, rules: Rules) -> Ending {
    let mut end = decide(levels, interrupted, rules);
    let loud: Vec<String> = levels
        .iter()
        .filter(|l| l.succeeded > 0 && l.error_share() > LOUD_ERROR_SHARE)
        .map(|l| format!("WARNING {}", l.error_line()))
        .collect();
    end.lines.splice(0..0, loud);
    end
}

/// How a run that may be a shard ends: a shard with no load at any level (`idle`: the levels
/// without load, with why) that was not stopped ends with 0, saying so (its directories say so
/// too, and `merge` counts it); any other run as [`ending`] decides.
pub fn ending_or_idle(
    levels: &[LevelEnd<'_>],
    idle: &[(String, String)],
    interrupted: bool,
    rules: Rules,
) -> Ending {
    match idle.first() {
        Some((_, why)) if levels.is_empty() && !interrupted => Ending {
            code: 0,
            lines: vec![format!(
                "this shard has no load at any level ({why}); nothing was sent"
            )],
        },
        _ => ending(levels, interrupted, rules),
    }
}

fn decide(levels: &[LevelEnd<'_>], interrupted: bool, rules: Rules) -> Ending {
    let fail = |code: u8, line: String| Ending {
        code,
        lines: vec![line],
    };
    if levels.is_empty() {
        return if interrupted {
            fail(130, "interrupted before any level completed".into())
        } else {
            fail(1, "error: no level completed".into())
        };
    }
    if levels.iter().all(|l| l.succeeded == 0) {
        let first = levels.iter().flat_map(|l| l.errors.first()).next();
        return match first {
            // Stopped before any request completed, none having failed: nothing to blame.
            None if interrupted => fail(
                130,
                "interrupted before any request completed: the requests in flight were abandoned and nothing was measured".into(),
            ),
            Some(e) => fail(
                1,
                format!(
                    "error: every request failed; {} failed with {}: {}",
                    e.count,
                    e.kind,
                    short_error(&e.example)
                ),
            ),
            None => fail(1, "error: every request failed".into()),
        };
    }
    if let Some(l) = levels
        .iter()
        .find(|l| l.error_share() > rules.max_error_rate)
    {
        return fail(
            1,
            format!(
                "error: {}: {} of its requests failed, over --max-error-rate {}: its numbers describe the survivors only; lower the load, raise --request-timeout, or fix what the errors say (--max-error-rate 100% accepts it)",
                l.load.name(),
                percent(l.error_share()),
                percent(rules.max_error_rate)
            ),
        );
    }
    if levels.iter().any(|l| l.slo.iter().any(|r| !r.passed)) {
        return Ending {
            code: 1,
            lines: vec![],
        };
    }
    if interrupted {
        return fail(
            130,
            "interrupted: the run stopped before it measured everything planned; the results above and the files cover what was measured, and a level cut short is marked interrupted".into(),
        );
    }
    let untrusted = levels.iter().filter(|l| !l.trustworthy).count();
    if rules.strict && untrusted > 0 {
        return fail(
            1,
            format!(
                "error: --strict: {untrusted} level(s) measured untrustworthy numbers (see above)"
            ),
        );
    }
    if rules.single_level_must_stabilize && levels.len() == 1 && !levels[0].stable {
        return fail(
            1,
            "error: the measurement did not stabilise; see the message above".into(),
        );
    }
    Ending {
        code: 0,
        lines: vec![],
    }
}

/// Whether a run was interrupted: planned requests went unmeasured because a level was cut short
/// (`level_cut`) or a stop left levels unrun (`ran` of `planned`). A stop that came while the
/// last level's last requests finished cut nothing.
pub fn interrupted(level_cut: bool, stopped: bool, (ran, planned): (usize, usize)) -> bool {
    level_cut || (stopped && ran < planned)
}

/// A server's error message in one line: for a Python traceback its last line (the exception),
/// otherwise the message with its white space folded; at most 300 characters.
pub fn short_error(msg: &str) -> String {
    let msg = msg.trim();
    let line = if msg.contains("Traceback (most recent call last)") {
        msg.lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or(msg)
            .to_string()
    } else {
        msg.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    match line.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(n: u64) -> Vec<ErrorCount> {
        vec![ErrorCount {
            kind: "timeout".into(),
            count: n,
            example: "request timed out after 600 s".into(),
            hint: None,
        }]
    }

    fn level(ok: u64, errors: &[ErrorCount]) -> LevelEnd<'_> {
        LevelEnd {
            load: Stimulus::Concurrency(100_000),
            succeeded: ok,
            errors,
            trustworthy: true,
            slo: &[],
            stable: true,
        }
    }

    #[test]
    fn error_share_over_the_limit_fails_and_over_one_percent_warns() {
        let many = errors(35_807);
        let end = ending(&[level(408, &many)], false, Rules::default());
        assert_eq!(end.code, 1);
        assert_eq!(
            end.lines[0],
            "WARNING concurrency100000: 35807 of 36215 requests failed (98.9 %), most with timeout: request timed out after 600 s"
        );
        assert!(end.lines[1].starts_with(
            "error: concurrency100000: 98.9 % of its requests failed, over --max-error-rate 5 %"
        ));
        let lenient = Rules {
            max_error_rate: 1.0,
            ..Rules::default()
        };
        assert_eq!(ending(&[level(408, &many)], false, lenient).code, 0);
        let few = errors(2);
        let end = ending(&[level(98, &few)], false, Rules::default());
        assert_eq!(end.code, 0);
        // llama.cpp's server before connection reuse was fixed: 40 % lost fails the run.
        let lost = errors(40);
        assert_eq!(ending(&[level(60, &lost)], false, Rules::default()).code, 1);
        assert_eq!(end.lines.len(), 1, "{:?}", end.lines);
        assert!(end.lines[0].contains("2 of 100 requests failed (2 %)"));
        let one = errors(1);
        assert!(
            ending(&[level(199, &one)], false, Rules::default())
                .lines
                .is_empty()
        );
    }

    /// Issue 39.4: requests abandoned by a second Ctrl-C are not failures: a level whose only
    /// requests were abandoned ends the run with 130, not "every request failed".
    #[test]
    fn interrupted_runs_exit_130_and_only_when_something_planned_was_lost() {
        let none: Vec<ErrorCount> = Vec::new();
        let end = ending(&[level(0, &none)], true, Rules::default());
        assert_eq!(end.code, 130);
        assert_eq!(
            end.lines,
            [
                "interrupted before any request completed: the requests in flight were abandoned and nothing was measured"
            ]
        );
        assert_eq!(ending(&[level(0, &none)], false, Rules::default()).code, 1);
        let end = ending(&[level(8, &none)], true, Rules::default());
        assert_eq!(end.code, 130);
        assert!(end.lines[0].starts_with("interrupted: "), "{:?}", end.lines);
        // A real failure still says what failed.
        let two = errors(2);
        assert_eq!(ending(&[level(0, &two)], true, Rules::default()).code, 1);
        // A stop while the last level's last requests finished lost nothing; one that left a
        // level unrun, or cut one short, did.
        assert!(!interrupted(false, true, (3, 3)));
        assert!(interrupted(false, true, (2, 3)));
        assert!(interrupted(true, true, (3, 3)));
        assert!(!interrupted(false, false, (2, 3)));
    }
}
