//! How a run ends, the same in every mode: which exit code its levels earn and the lines that
//! explain it. Order of precedence: nothing measured or every request failed (1), an objective
//! missed (1), interrupted (130), untrustworthy numbers under `--strict` (1), a single level that
//! never stabilised (1, as perf_analyzer), else 0.

use crate::analysis::slo::SloResult;
use crate::stats::{ErrorCount, LevelSummary};

/// One finished level, as the exit code sees it.
#[derive(Debug, Clone, Copy)]
pub struct LevelEnd<'a> {
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
            succeeded: summary.stats.request_count,
            errors: &summary.stats.errors,
            trustworthy: summary.validity.trustworthy,
            slo,
            stable: true,
        }
    }
}

/// What the run asked for besides its levels.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rules {
    /// `--strict`: untrustworthy levels fail the run.
    pub strict: bool,
    /// A run of one level fails when that level never stabilised (perf_analyzer's rule).
    pub single_level_must_stabilize: bool,
}

/// The exit code and the lines (for stderr) that say why it is not 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    /// Process exit code.
    pub code: u8,
    /// Why, one line each (empty for 0 and for objectives, which print their own block).
    pub lines: Vec<String>,
}

/// Decides how a run with these levels ends.
pub fn ending(levels: &[LevelEnd<'_>], interrupted: bool, rules: Rules) -> Ending {
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
        return fail(
            1,
            match first {
                Some(e) => format!(
                    "error: every request failed; {} failed with {}: {}",
                    e.count,
                    e.kind,
                    short_error(&e.example)
                ),
                None => "error: every request failed".into(),
            },
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
            "interrupted: the results above cover what was measured before the signal, and the files are complete and marked interrupted".into(),
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
