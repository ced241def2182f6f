//! The GitHub Actions step summary: when `GITHUB_STEP_SUMMARY` names a file, a markdown section
//! is appended to it (GitHub shows that file on the job's page). Pure encoders; only
//! [`append`] touches the file.
//!
//! `profile` and `perf` append:
//!
//! ```text
//! ## ttftbench profile: `gpt2`
//!
//! | level | requests | errors | TTFT p99 (ms) | ITL p99 (ms) | latency p99 (ms) | req/s | output tok/s | trustworthy |
//! |---|---:|---:|---:|---:|---:|---:|---:|---|
//! | concurrency1 | 10 | 0 | 25.10 | 1.20 | 60.00 | 16.5 | 520.3 | yes |
//!
//! **SLO: 1 of 2 checks failed**
//!
//! | level | objective | value | result |
//! |---|---|---|---|
//! | concurrency1 | `time_to_first_token.p99<=500ms` | 25.10 ms | pass |
//!
//! **Knee:** <the recommendation>
//!
//! Exit code 1.
//! ```
//!
//! followed, when levels were not trustworthy, by one line per level with the reasons.
//! `compare` appends its markdown report ([`crate::report::compare::markdown`]).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use super::{LevelReport, Mode, RunEnd};
use crate::error::{Error, Result};

/// Appends `text` to the step summary file (creating it), as GitHub expects: other steps'
/// sections stay.
pub fn append(path: &Path, text: &str) -> Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| Error::io("append to GITHUB_STEP_SUMMARY", path, e))
}

/// The section of one `profile` or `perf` run.
pub fn run(mode: Mode, model: &str, levels: &[LevelReport], end: &RunEnd) -> String {
    let mut out = format!("## ttftbench {}: `{}`\n\n", mode.name(), cell(model));
    if levels.is_empty() {
        out.push_str("No level completed.\n\n");
    } else {
        out.push_str(&level_table(levels));
    }
    out.push_str(&slo_table(levels));
    if let Some(k) = &end.knee {
        let _ = writeln!(out, "**Knee:** {}\n", cell(k));
    }
    for line in &end.verdict {
        let _ = writeln!(out, "{}\n", cell(line));
    }
    for l in levels.iter().filter(|l| !l.validity.trustworthy) {
        let _ = writeln!(
            out,
            "**{} is not trustworthy:** {}\n",
            l.name(),
            cell(&l.validity.reasons.join("; "))
        );
    }
    let cut = if end.interrupted {
        " (interrupted)"
    } else {
        ""
    };
    let _ = writeln!(out, "Exit code {}{cut}.\n", end.exit_code);
    out
}

fn level_table(levels: &[LevelReport]) -> String {
    let mut out = String::from(
        "| level | requests | errors | TTFT p99 (ms) | ITL p99 (ms) | latency p99 (ms) | req/s | output tok/s | trustworthy |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let ms = |l: Option<super::Latencies>| l.map_or("-".to_string(), |l| format!("{:.2}", l.p99));
    let rate = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    for l in levels {
        let k = &l.key;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            l.name(),
            k.requests,
            k.errors,
            ms(k.ttft),
            ms(k.itl),
            ms(k.latency),
            rate(k.request_throughput),
            rate(k.output_token_throughput),
            if l.validity.trustworthy { "yes" } else { "no" }
        );
    }
    out.push('\n');
    out
}

fn slo_table(levels: &[LevelReport]) -> String {
    let (total, failed) = super::slo_totals(levels);
    if total == 0 {
        return String::new();
    }
    let checks = crate::analysis::text::count(total as u64, "check");
    let mut out = if failed == 0 {
        format!("**SLO: {checks} passed**\n\n")
    } else {
        format!("**SLO: {failed} of {checks} failed**\n\n")
    };
    out.push_str("| level | objective | value | result |\n|---|---|---|---|\n");
    for l in levels {
        for r in &l.slo {
            let value = r
                .actual
                .map_or("no value".to_string(), |v| r.slo.metric.kind().show(v));
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} |",
                l.name(),
                r.slo,
                value,
                if r.passed { "pass" } else { "**FAIL**" }
            );
        }
    }
    out.push('\n');
    out
}

/// Text safe inside a table cell or a line: pipes escaped, newlines flattened.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::tests::level;

    #[test]
    fn run_section_exact() {
        let levels = [level(1, 25.0, true), level(8, 612.0, false)];
        let end = RunEnd {
            exit_code: 1,
            interrupted: false,
            knee: Some("Knee at concurrency 1 | then flat".into()),
            verdict: vec!["Queue-bound above concurrency 4.".into()],
        };
        let md = run(Mode::Profile, "org/model", &levels, &end);
        let expected = "## ttftbench profile: `org/model`

| level | requests | errors | TTFT p99 (ms) | ITL p99 (ms) | latency p99 (ms) | req/s | output tok/s | trustworthy |
|---|---:|---:|---:|---:|---:|---:|---:|---|
| concurrency1 | 10 | 1 | 25.00 | - | 1000.00 | 16.5 | 520.2 | yes |
| concurrency8 | 10 | 1 | 612.00 | - | 1000.00 | 16.5 | 520.2 | no |

**SLO: 3 of 4 checks failed**

| level | objective | value | result |
|---|---|---|---|
| concurrency1 | `time_to_first_token.p99<=500ms` | 25.00 ms | pass |
| concurrency1 | `queue_share<=50%` | no value | **FAIL** |
| concurrency8 | `time_to_first_token.p99<=500ms` | 612.00 ms | **FAIL** |
| concurrency8 | `queue_share<=50%` | no value | **FAIL** |

**Knee:** Knee at concurrency 1 \\| then flat

Queue-bound above concurrency 4.

**concurrency8 is not trustworthy:** send lag p99 9.0 ms > 2 ms

Exit code 1.

";
        assert_eq!(md, expected);
        let empty = run(Mode::Perf, "m", &[], &RunEnd::default());
        assert_eq!(
            empty,
            "## ttftbench perf: `m`\n\nNo level completed.\n\nExit code 0.\n\n"
        );
    }

    #[test]
    fn append_keeps_earlier_sections() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("summary.md");
        std::fs::write(&p, "earlier step\n").unwrap();
        append(&p, "## ours\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "earlier step\n## ours\n"
        );
    }
}
