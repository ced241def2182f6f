//! Whether a scored workload's answers hold up under load: accuracy at each level against the
//! lightest level, the determinism check's changed answers, and whether the accuracy is no
//! better than guessing.
//!
//! The test: a one-sided two-proportion z-test of H0 "accuracy at the level is at least the
//! lightest level's" against "it is lower". With `x₁` of `n₁` right at the lightest level and
//! `x` of `n` at the level, the pooled share `p = (x₁ + x) / (n₁ + n)` gives
//! `z = (x₁/n₁ − x/n) / √(p(1−p)(1/n₁ + 1/n))`, and the drop is called when its p-value
//! `1 − Φ(z)` is below `1 − confidence` (the run's `--confidence`, 95 % by default): a drop that
//! chance alone would show less than 5 % of the time. Both levels' requests are taken as
//! independent draws; a level that sends each question once compares the same questions, which
//! makes the test conservative.

use crate::stats::LevelSummary;
use crate::stats::scored::AccuracyStats;

/// One level against the lightest.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelTest {
    /// The level (`concurrency16`).
    pub level: String,
    /// Its load as the tables write it.
    pub load: String,
    /// The z statistic (positive: lower than the lightest level).
    pub z: f64,
    /// The one-sided p-value.
    pub p: f64,
    /// Whether the accuracy is lower beyond chance at the run's confidence.
    pub dropped: bool,
}

/// The accuracy verdict of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// The lightest level, which the others are tested against.
    pub baseline: String,
    /// Every other level with graded answers, in run order.
    pub tests: Vec<LevelTest>,
    /// The verdict in sentences (the test stated).
    pub lines: Vec<String>,
}

/// The verdict of `levels` (`None` when no level graded answers).
pub fn assess(levels: &[LevelSummary]) -> Option<Assessment> {
    let scored: Vec<(&LevelSummary, &AccuracyStats)> = levels
        .iter()
        .filter_map(|l| l.stats.accuracy.as_ref().map(|a| (l, a)))
        .collect();
    let (base, b) = scored
        .iter()
        .min_by(|x, y| x.0.stimulus.value().total_cmp(&y.0.stimulus.value()))
        .copied()?;
    let load = |l: &LevelSummary| {
        format!(
            "{} {}",
            l.stimulus.kind().replace('_', " "),
            crate::analysis::text::load_text(l.stimulus.value())
        )
    };
    let tests: Vec<LevelTest> = scored
        .iter()
        .filter(|(l, _)| !std::ptr::eq(*l, base))
        .map(|(l, a)| {
            let (z, p) = drop_test(b, a);
            LevelTest {
                level: l.stimulus.name(),
                load: load(l),
                z,
                p,
                dropped: p < 1.0 - b.confidence,
            }
        })
        .collect();
    let mut lines = Vec::new();
    lines.extend(chance_line(&load(base), b));
    lines.extend(drop_lines(&load(base), b, &tests, &scored));
    lines.extend(determinism_lines(&scored, &load));
    Some(Assessment {
        baseline: base.stimulus.name(),
        tests,
        lines,
    })
}

/// `(z, one-sided p)` of "`a` is less accurate than `base`".
pub fn drop_test(base: &AccuracyStats, a: &AccuracyStats) -> (f64, f64) {
    let (x1, n1) = (base.correct as f64, base.graded as f64);
    let (x2, n2) = (a.correct as f64, a.graded as f64);
    if n1 == 0.0 || n2 == 0.0 {
        return (0.0, 1.0);
    }
    let p = (x1 + x2) / (n1 + n2);
    let se = (p * (1.0 - p) * (1.0 / n1 + 1.0 / n2)).sqrt();
    if se == 0.0 {
        // Every answer right at both, or every one wrong: no difference to test.
        return (0.0, 1.0);
    }
    let z = (x1 / n1 - x2 / n2) / se;
    (z, 1.0 - normal_cdf(z))
}

/// The standard normal distribution function, from `erfc` (Numerical Recipes' Chebyshev
/// fit, fractional error below 1.2e-7).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn stated(a: &AccuracyStats) -> String {
    crate::analysis::text::interval(a.accuracy, a.low, a.high)
}

/// The accuracy of the lightest level is no better than guessing: say so, since then no drop
/// can be seen.
fn chance_line(load: &str, b: &AccuracyStats) -> Option<String> {
    let c = b.chance?;
    if !b.at_chance() && b.accuracy > c {
        return None;
    }
    let unparsed = match b.unparsed {
        0 => String::new(),
        n => format!(", {n} of them without an answer in the expected form"),
    };
    Some(format!(
        "accuracy at {load} is {} of {} answers{unparsed}, at or below chance ({} by guessing among the options): the model does not answer these questions, so a drop with load cannot show",
        stated(b),
        b.graded,
        pct(c)
    ))
}

fn drop_lines(
    load: &str,
    b: &AccuracyStats,
    tests: &[LevelTest],
    scored: &[(&LevelSummary, &AccuracyStats)],
) -> Vec<String> {
    if tests.is_empty() {
        return Vec::new();
    }
    let of = |t: &LevelTest| {
        scored
            .iter()
            .find(|(l, _)| l.stimulus.name() == t.level)
            .map(|(_, a)| stated(a))
            .unwrap_or_default()
    };
    let rule = format!(
        "one-sided two-proportion z-test against {load}'s {} at {:.0}% confidence",
        stated(b),
        b.confidence * 100.0
    );
    let mut lines: Vec<String> = tests
        .iter()
        .filter(|t| t.dropped)
        .map(|t| {
            format!(
                "accuracy falls with load at {}: {} (z = {:.2}, {}; {rule})",
                t.load,
                of(t),
                t.z,
                p_text(t.p)
            )
        })
        .collect();
    let held: Vec<&str> = tests
        .iter()
        .filter(|t| !t.dropped)
        .map(|t| t.load.as_str())
        .collect();
    if !held.is_empty() {
        lines.push(format!(
            "accuracy holds at {}: no drop beyond chance ({rule})",
            held.join(", ")
        ));
    }
    lines
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".to_string()
    } else {
        format!("p = {p:.3}")
    }
}

/// The determinism check, level by level: prompts whose temperature-0 output changed from
/// their reference (the first output of each in the run).
fn determinism_lines(
    scored: &[(&LevelSummary, &AccuracyStats)],
    load: &dyn Fn(&LevelSummary) -> String,
) -> Vec<String> {
    let checked: Vec<String> = scored
        .iter()
        .filter_map(|(l, a)| {
            let c = a.changed.as_ref()?;
            let example = c.example.as_ref().map_or(String::new(), |e| {
                format!(
                    ", first at prompt {} token {}: {:?} became {:?}",
                    e.prompt, e.token, e.reference, e.now
                )
            });
            Some(format!(
                "{}: {} of {} prompts ({}){example}",
                load(l),
                c.changed,
                c.compared,
                crate::analysis::text::interval(c.share, c.low, c.high)
            ))
        })
        .collect();
    if checked.is_empty() {
        return Vec::new();
    }
    let any = scored
        .iter()
        .any(|(_, a)| a.changed.as_ref().is_some_and(|c| c.changed > 0));
    let head = if any {
        "temperature-0 answers changed with the load"
    } else {
        "temperature-0 answers did not change with the load"
    };
    vec![format!(
        "{head} (each prompt's output against its first in the run): {}",
        checked.join("; ")
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::stats::scored::{ChangedStats, Counts};

    fn level(c: u32, correct: u64, graded: u64, changed: Option<(u64, u64)>) -> LevelSummary {
        let mut l = crate::stats::test_level(Stimulus::Concurrency(c), 10.0);
        let ch = changed.map(|(x, n)| ChangedStats::of(x, n, 0.95, None));
        l.stats.accuracy = Some(
            AccuracyStats::of(
                Counts {
                    graded,
                    correct,
                    unparsed: 0,
                },
                0.95,
                ch,
            )
            .at(0.95, Some(0.25)),
        );
        l
    }

    #[test]
    fn normal_cdf_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-1.644_854) - 0.05).abs() < 1e-6);
    }

    /// 90 % at concurrency 1; 88 % at 4 is chance, 50 % at 16 is a drop.
    #[test]
    fn drop_found_where_it_is() {
        let levels = [
            level(1, 90, 100, None),
            level(4, 88, 100, Some((0, 100))),
            level(16, 50, 100, Some((12, 100))),
        ];
        let a = assess(&levels).unwrap();
        assert_eq!(a.baseline, "concurrency1");
        let dropped: Vec<(&str, bool)> = a
            .tests
            .iter()
            .map(|t| (t.level.as_str(), t.dropped))
            .collect();
        assert_eq!(dropped, [("concurrency4", false), ("concurrency16", true)]);
        let text = a.lines.join("\n");
        assert!(
            text.contains("accuracy falls with load at concurrency 16: 50.0%"),
            "{text}"
        );
        assert!(
            text.contains("one-sided two-proportion z-test against concurrency 1's 90.0%"),
            "{text}"
        );
        assert!(text.contains("accuracy holds at concurrency 4"), "{text}");
        assert!(
            text.contains("temperature-0 answers changed with the load"),
            "{text}"
        );
        assert!(
            text.contains("concurrency 16: 12 of 100 prompts (12.0%"),
            "{text}"
        );
        // z for 90/100 against 50/100 by hand: p = 0.7, se = √(0.21 · 0.02) = 0.0648.
        assert!((a.tests[1].z - 0.4 / (0.21f64 * 0.02).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn chance_is_said() {
        let a = assess(&[level(1, 24, 100, None), level(4, 26, 100, None)]).unwrap();
        assert!(
            a.lines[0].contains("at or below chance (25.0%"),
            "{:?}",
            a.lines
        );
        assert!(assess(&[crate::stats::test_level(Stimulus::Concurrency(1), 1.0)]).is_none());
        assert_eq!(
            drop_test(
                &level(1, 10, 10, None).stats.accuracy.unwrap(),
                &level(2, 10, 10, None).stats.accuracy.unwrap()
            ),
            (0.0, 1.0)
        );
    }
}
