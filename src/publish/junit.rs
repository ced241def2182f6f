//! `--junit FILE`: the checks of a run as a JUnit XML report, the format GitLab, Jenkins and
//! GitHub test reporters read. A pure encoder over [`Suite`]s; the file is written atomically.
//!
//! ```text
//! <?xml version="1.0" encoding="UTF-8"?>
//! <testsuites name="ttftbench profile gpt2" tests="2" failures="1" errors="0">
//!   <testsuite name="concurrency8" tests="2" failures="1" errors="0" skipped="0">
//!     <testcase classname="ttftbench.profile.concurrency8" name="time_to_first_token.p99&lt;=500ms">
//!       <failure type="slo" message="612.00 ms breaks &lt;= 500.00 ms"/>
//!       <system-out>value: 612.00 ms
//! limit: &lt;= 500.00 ms</system-out>
//!     </testcase>
//!     <testcase classname="ttftbench.profile.concurrency8" name="trustworthy">
//!       <system-out>value: yes
//! limit: every validity check passes</system-out>
//!     </testcase>
//!   </testsuite>
//! </testsuites>
//! ```
//!
//! One `<testsuite>` per level (`profile`, `perf`) or per compared level (`compare`); one
//! `<testcase>` per check: each `--slo` objective, the level's validity verdict (`trustworthy`:
//! an untrustworthy level is a failure whose message lists the reasons), and for `compare` each
//! limit on each metric (`time_to_first_token.p99:+10%`) plus a `present` case for a level the
//! current run lacks. The value and the limit are in `<system-out>`; a failure's `message`
//! says what broke. Text is escaped for XML, and characters XML 1.0 cannot carry are dropped.

use std::fmt::Write as _;

use super::{LevelReport, Mode};
use crate::report::compare::{Comparison, Status};

/// One check.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The check (`time_to_first_token.p99<=500ms`).
    pub name: String,
    /// Its group (`ttftbench.profile.concurrency8`).
    pub classname: String,
    /// The measured value, in words.
    pub value: String,
    /// The limit, in words.
    pub limit: String,
    /// Why it failed; `None` when it passed.
    pub failure: Option<Failure>,
}

/// A failed check.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Which kind of check (`slo`, `validity`, `regression`).
    pub kind: &'static str,
    /// What broke.
    pub message: String,
}

/// The checks of one level.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// The level's name.
    pub name: String,
    /// Its checks.
    pub cases: Vec<Case>,
}

impl Suite {
    fn failures(&self) -> usize {
        self.cases.iter().filter(|c| c.failure.is_some()).count()
    }
}

/// The report: `<testsuites name=...>` holding one `<testsuite>` per suite.
pub fn encode(name: &str, suites: &[Suite]) -> String {
    let tests: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(Suite::failures).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">",
        esc(name)
    );
    for s in suites {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">",
            esc(&s.name),
            s.cases.len(),
            s.failures()
        );
        for c in &s.cases {
            case(&mut out, c);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn case(out: &mut String, c: &Case) {
    let _ = writeln!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\">",
        esc(&c.classname),
        esc(&c.name)
    );
    if let Some(f) = &c.failure {
        let _ = writeln!(
            out,
            "      <failure type=\"{}\" message=\"{}\"/>",
            esc(f.kind),
            esc(&f.message)
        );
    }
    let _ = writeln!(
        out,
        "      <system-out>value: {}\nlimit: {}</system-out>",
        esc(&c.value),
        esc(&c.limit)
    );
    out.push_str("    </testcase>\n");
}

/// XML-escapes text for an attribute or element; drops characters XML 1.0 forbids (control
/// characters other than tab, newline and carriage return), which an error message from a
/// server could carry.
pub fn esc(s: &str) -> String {
    let allowed = |c: char| {
        matches!(c, '\t' | '\n' | '\r') || !(c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}')
    };
    let kept: String = s.chars().filter(|&c| allowed(c)).collect();
    // HTML's escapes, but XML's name for the apostrophe (`&#39;` cannot come from escaped text).
    crate::report::svg::esc(&kept).replace("&#39;", "&apos;")
}

/// A level's checks: its objectives, then its validity verdict.
pub fn level_suite(mode: Mode, l: &LevelReport) -> Suite {
    let classname = format!("ttftbench.{}.{}", mode.name(), l.name());
    let mut cases: Vec<Case> = l
        .slo
        .iter()
        .map(|r| {
            let kind = r.slo.metric.kind();
            let limit = format!("{} {}", r.slo.op.symbol(), kind.show(r.slo.bound));
            let value = r.actual.map_or_else(
                || {
                    format!(
                        "no value ({})",
                        crate::analysis::slo::missing_reason(r.slo.metric)
                    )
                },
                |v| kind.show(v),
            );
            Case {
                name: r.slo.to_string(),
                classname: classname.clone(),
                failure: (!r.passed).then(|| Failure {
                    kind: "slo",
                    message: format!("{value} breaks {limit}"),
                }),
                value,
                limit,
            }
        })
        .collect();
    let v = &l.validity;
    cases.push(Case {
        name: "trustworthy".into(),
        classname,
        value: if v.trustworthy { "yes" } else { "no" }.into(),
        limit: "every validity check passes".into(),
        failure: (!v.trustworthy).then(|| Failure {
            kind: "validity",
            message: format!("not trustworthy: {}", v.reasons.join("; ")),
        }),
    });
    Suite {
        name: l.name(),
        cases,
    }
}

/// A comparison's checks: one case per limit on each limited metric of each level, and a
/// failing `present` case for each level only the baseline has.
pub fn compare_suites(c: &Comparison) -> Vec<Suite> {
    let mut suites: Vec<Suite> = Vec::new();
    for row in c.rows.iter().filter(|r| r.status != Status::Unchecked) {
        if suites.last().is_none_or(|s| s.name != row.level) {
            suites.push(Suite {
                name: row.level.clone(),
                cases: Vec::new(),
            });
        }
        let kind = row.metric.kind();
        let show = |v: Option<f64>| v.map_or_else(|| "no value".to_string(), |v| kind.show(v));
        let value = format!(
            "{} (baseline {}{})",
            show(row.current),
            show(row.baseline),
            row.change()
                .map_or_else(String::new, |c| format!(", {:+.1}%", c * 100.0))
        );
        for t in &row.limits {
            let broken = match (row.baseline, row.current) {
                (_, None) => Some(format!("the current run has no {} value", row.metric)),
                (Some(b), Some(v)) if t.breached(b, v) => {
                    Some(format!("{value} breaks {}", t.limit_text()))
                }
                _ => None,
            };
            let suite = suites.last_mut().expect("pushed above");
            suite.cases.push(Case {
                name: t.to_string(),
                classname: format!("ttftbench.compare.{}", row.level),
                value: value.clone(),
                limit: t.limit_text(),
                failure: broken.map(|message| Failure {
                    kind: "regression",
                    message,
                }),
            });
        }
    }
    for level in &c.only_in_baseline {
        suites.push(Suite {
            name: level.clone(),
            cases: vec![Case {
                name: "present".into(),
                classname: format!("ttftbench.compare.{level}"),
                value: "missing from the current run".into(),
                limit: "every baseline level is measured again".into(),
                failure: Some(Failure {
                    kind: "regression",
                    message: format!("level {level} is in the baseline but not in the current run"),
                }),
            }],
        });
    }
    suites
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::tests::level;

    #[test]
    fn levels_exact() {
        let suites = [
            level_suite(Mode::Profile, &level(1, 25.0, true)),
            level_suite(Mode::Profile, &level(8, 612.0, false)),
        ];
        let xml = encode("ttftbench profile gpt2", &suites);
        let expected = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="ttftbench profile gpt2" tests="6" failures="4" errors="0">
  <testsuite name="concurrency1" tests="3" failures="1" errors="0" skipped="0">
    <testcase classname="ttftbench.profile.concurrency1" name="time_to_first_token.p99&lt;=500ms">
      <system-out>value: 25.00 ms
limit: &lt;= 500.00 ms</system-out>
    </testcase>
    <testcase classname="ttftbench.profile.concurrency1" name="queue_share&lt;=50%">
      <failure type="slo" message="no value (the server&apos;s queue/compute counters were not read: give --server-metrics-url or -H &apos;triton-access-token: ...&apos; for the statistics API) breaks &lt;= 50.0%"/>
      <system-out>value: no value (the server&apos;s queue/compute counters were not read: give --server-metrics-url or -H &apos;triton-access-token: ...&apos; for the statistics API)
limit: &lt;= 50.0%</system-out>
    </testcase>
    <testcase classname="ttftbench.profile.concurrency1" name="trustworthy">
      <system-out>value: yes
limit: every validity check passes</system-out>
    </testcase>
  </testsuite>
  <testsuite name="concurrency8" tests="3" failures="3" errors="0" skipped="0">
    <testcase classname="ttftbench.profile.concurrency8" name="time_to_first_token.p99&lt;=500ms">
      <failure type="slo" message="612.00 ms breaks &lt;= 500.00 ms"/>
      <system-out>value: 612.00 ms
limit: &lt;= 500.00 ms</system-out>
    </testcase>
    <testcase classname="ttftbench.profile.concurrency8" name="queue_share&lt;=50%">
      <failure type="slo" message="no value (the server&apos;s queue/compute counters were not read: give --server-metrics-url or -H &apos;triton-access-token: ...&apos; for the statistics API) breaks &lt;= 50.0%"/>
      <system-out>value: no value (the server&apos;s queue/compute counters were not read: give --server-metrics-url or -H &apos;triton-access-token: ...&apos; for the statistics API)
limit: &lt;= 50.0%</system-out>
    </testcase>
    <testcase classname="ttftbench.profile.concurrency8" name="trustworthy">
      <failure type="validity" message="not trustworthy: send lag p99 9.0 ms &gt; 2 ms"/>
      <system-out>value: no
limit: every validity check passes</system-out>
    </testcase>
  </testsuite>
</testsuites>
"#;
        assert_eq!(xml, expected);
    }

    #[test]
    fn escaping_drops_what_xml_cannot_carry() {
        assert_eq!(
            esc("a<b>&\"c'\u{1}\td\u{FFFF}é"),
            "a&lt;b&gt;&amp;&quot;c&apos;\tdé"
        );
        let xml = encode("", &[]);
        assert_eq!(
            xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"\" tests=\"0\" failures=\"0\" errors=\"0\">\n</testsuites>\n"
        );
    }
}
