//! Service-level objectives checked on finished levels: each `--slo` objective (grammar in
//! [`crate::metrics`]) against a level's value, the `slo` JSON array, and the console block.
//!
//! A metric a level has no value for (a queue share without server metrics, TTFT without
//! `--streaming`) fails its objective: a release gate that cannot be checked must not pass.

use serde_json::{Value, json};

use crate::metrics::{MetricRef, MetricSource, Slo, SystemMetric};

/// The outcome of one objective on one level.
#[derive(Debug, Clone, PartialEq)]
pub struct SloResult {
    /// The objective.
    pub slo: Slo,
    /// The level's value, when it has one.
    pub actual: Option<f64>,
    /// Whether the objective holds (a missing value does not).
    pub passed: bool,
}

impl SloResult {
    /// `PASS time_to_first_token.p99<=500ms: 188.48 ms` and, for a missing value, why.
    pub fn line(&self) -> String {
        let verdict = if self.passed { "PASS" } else { "FAIL" };
        let kind = self.slo.metric.kind();
        match self.actual {
            Some(v) => format!("{verdict} {}: {}", self.slo, kind.show(v)),
            None => format!(
                "{verdict} {}: no value ({})",
                self.slo,
                missing_reason(self.slo.metric)
            ),
        }
    }
}

/// Why a level may have no value for a metric, and what to do.
pub fn missing_reason(m: MetricRef) -> &'static str {
    match m {
        MetricRef::System(
            SystemMetric::QueueShare
            | SystemMetric::ServerQueueTime
            | SystemMetric::ServerComputeTime,
        ) => {
            "the server's queue/compute counters were not read: give --server-metrics-url or -H 'triton-access-token: ...' for the statistics API"
        }
        MetricRef::System(SystemMetric::RequestGoodput) => "give --goodput objectives",
        MetricRef::System(
            SystemMetric::TtftP99Drift
            | SystemMetric::LatencyP99Drift
            | SystemMetric::ThroughputDrift,
        ) => {
            "too few timeline intervals for a drift verdict: a level needs at least 30 (--duration, --timeline-interval)"
        }
        MetricRef::System(SystemMetric::ErrorRate) => "no request was measured",
        MetricRef::System(SystemMetric::Accuracy) => {
            "no answer was graded: give a scored workload (--accuracy-benchmark)"
        }
        MetricRef::System(SystemMetric::AnswerChangedShare) => {
            "no output was compared: this is the determinism check's reference level, or requests did not ask for temperature 0; send each prompt more than once here (--request-count above the dataset's size) to compare it within the level"
        }
        MetricRef::Dist(m, _) if m.streaming_only() => {
            "no streamed tokens: profile with --streaming"
        }
        _ => "the level has no samples of this metric",
    }
}

/// Checks every objective against one level.
pub fn evaluate(slos: &[Slo], src: &impl MetricSource) -> Vec<SloResult> {
    slos.iter()
        .map(|slo| {
            let actual = src.metric(slo.metric).filter(|v| v.is_finite());
            SloResult {
                slo: *slo,
                actual,
                passed: actual.is_some_and(|v| slo.op.holds(v, slo.bound)),
            }
        })
        .collect()
}

/// When the repetitions of a level disagree on an objective (`reps`: each repetition's check of
/// it, `None` where it has none), the median's verdict depends on which run one looks at: a
/// warning naming the values and what to do. `None` when they agree.
pub fn noise_warning(level: &str, objective: &Slo, reps: &[Option<&SloResult>]) -> Option<String> {
    let passed = reps.iter().filter(|r| r.is_some_and(|r| r.passed)).count();
    if passed == 0 || passed == reps.len() {
        return None;
    }
    let kind = objective.metric.kind();
    let values: Vec<String> = reps
        .iter()
        .map(|r| {
            r.and_then(|r| r.actual)
                .map_or("-".into(), |v| kind.show(v))
        })
        .collect();
    Some(format!(
        "warning: {level}: SLO {objective} held in {passed} of {} repetitions ({}): its verdict is within the run-to-run noise; add repetitions (--repeat) or measure longer (--measurement-interval, --request-count)",
        reps.len(),
        values.join(", ")
    ))
}

/// The `slo` array of a level's JSON: one object per objective, numbers in the metric's unit.
pub fn json(results: &[SloResult]) -> Value {
    Value::Array(
        results
            .iter()
            .map(|r| {
                json!({
                    "objective": r.slo.to_string(),
                    "metric": r.slo.metric.key(),
                    "op": r.slo.op.symbol(),
                    "bound": r.slo.bound,
                    "unit": r.slo.metric.kind().unit(),
                    "actual": r.actual,
                    "passed": r.passed,
                })
            })
            .collect(),
    )
}

/// The console's SLO block after the results table: one line per objective across the levels
/// (`(load label, results)` pairs, in level order), then the tally.
pub fn console_lines(levels: &[(String, Vec<SloResult>)]) -> Vec<String> {
    let Some((_, first)) = levels.iter().find(|(_, r)| !r.is_empty()) else {
        return vec![];
    };
    let mut out = Vec::new();
    for (i, slo) in first.iter().map(|r| r.slo).enumerate() {
        let cells: Vec<String> = levels
            .iter()
            .filter_map(|(name, rs)| {
                let r = rs.get(i)?;
                Some(format!(
                    "{name} {} {}",
                    if r.passed { "PASS" } else { "FAIL" },
                    r.actual
                        .map_or_else(|| "no value".to_string(), |v| slo.metric.kind().show(v))
                ))
            })
            .collect();
        out.push(format!("SLO {slo}: {}", cells.join(" · ")));
    }
    let total: usize = levels.iter().map(|(_, r)| r.len()).sum();
    let failed: usize = levels
        .iter()
        .map(|(_, r)| r.iter().filter(|x| !x.passed).count())
        .sum();
    let checks = crate::analysis::text::count(total as u64, "check");
    out.push(if failed == 0 {
        format!("SLO: {checks} passed")
    } else {
        format!("SLO: {failed} of {checks} failed (exit code 1)")
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Metric, Stats, parse};
    use crate::stats::LevelSummary;

    fn level(ttft_p99: f64, queue_share: Option<f64>, errors: u64) -> LevelSummary {
        LevelSummary {
            server: queue_share.map(|q| ServerDelta {
                requests: 90,
                executions: 9,
                avg_request_ms: 100.0,
                queue_share: Some(q),
                ..ServerDelta::from_phase_avgs(q * 100.0, 0.0, (1.0 - q) * 100.0, 0.0)
            }),
            ..LevelSummary::new(
                Stimulus::Concurrency(8),
                LevelStats {
                    metrics: vec![(
                        Metric::TimeToFirstToken,
                        Stats {
                            count: 10,
                            avg: ttft_p99 / 2.0,
                            p99: ttft_p99,
                            ..Stats::default()
                        },
                    )],
                    request_count: 90,
                    error_count: errors,
                    duration_s: 1.0,
                    output_token_throughput: 1000.0,
                    total_token_throughput: 3000.0,
                    request_throughput: 9.0,
                    ..Default::default()
                },
            )
        }
    }

    use crate::load::Stimulus;
    use crate::server_metrics::ServerDelta;
    use crate::stats::LevelStats;

    #[test]
    fn repetitions_that_disagree_are_noise() {
        let slo = parse("time_to_first_token.p99<=500ms").unwrap();
        let checks: Vec<SloResult> = [480.0, 530.0, 490.0]
            .iter()
            .map(|&v| evaluate(std::slice::from_ref(&slo), &level(v, None, 0)).remove(0))
            .collect();
        let refs: Vec<Option<&SloResult>> = checks.iter().map(Some).collect();
        assert_eq!(
            noise_warning("concurrency8", &slo, &refs).unwrap(),
            "warning: concurrency8: SLO time_to_first_token.p99<=500ms held in 2 of 3 repetitions (480.00 ms, 530.00 ms, 490.00 ms): its verdict is within the run-to-run noise; add repetitions (--repeat) or measure longer (--measurement-interval, --request-count)"
        );
        assert_eq!(noise_warning("c", &slo, &refs[..1]), None);
        assert_eq!(noise_warning("c", &slo, &[refs[1], refs[1]]), None);
    }

    #[test]
    fn evaluate_table() {
        let slos: Vec<Slo> = [
            "time_to_first_token.p99<=500ms",
            "queue_share<=50%",
            "error_rate<=5%",
            "request_throughput>=10",
        ]
        .iter()
        .map(|s| parse(s).unwrap())
        .collect();
        // (ttft p99, queue share, errors) → pass/fail per objective
        let cases: &[(f64, Option<f64>, u64, [bool; 4])] = &[
            (188.0, Some(0.2), 0, [true, true, true, false]),
            (500.0, Some(0.5), 10, [true, true, false, false]),
            (612.0, Some(0.72), 0, [false, false, true, false]),
            (100.0, None, 0, [true, false, true, false]),
        ];
        for (ttft, q, errors, want) in cases {
            let r = evaluate(&slos, &level(*ttft, *q, *errors));
            let got: Vec<bool> = r.iter().map(|x| x.passed).collect();
            assert_eq!(got, want, "ttft {ttft} queue {q:?} errors {errors}");
        }
        let r = evaluate(&slos, &level(612.0, None, 0));
        assert_eq!(
            r[0].line(),
            "FAIL time_to_first_token.p99<=500ms: 612.00 ms"
        );
        assert!(r[1].line().starts_with(
            "FAIL queue_share<=50%: no value (the server's queue/compute counters were not read"
        ));
        let mut no_stream = level(100.0, None, 0);
        no_stream.streaming = false;
        let r = evaluate(&slos[..1], &no_stream);
        assert!(!r[0].passed);
        assert!(r[0].line().contains("profile with --streaming"));
        // A level without compared outputs (the determinism check's reference) says why.
        let changed = [parse("answer_changed_share<=0").unwrap()];
        let r = evaluate(&changed, &level(100.0, None, 0));
        assert!(!r[0].passed);
        assert!(
            r[0].line()
                .contains("the determinism check's reference level"),
            "{}",
            r[0].line()
        );
    }

    #[test]
    fn console_lines_exact() {
        let slos = [
            parse("time_to_first_token.p99<=500ms").unwrap(),
            parse("queue_share<=50%").unwrap(),
        ];
        let levels: Vec<(String, Vec<SloResult>)> = [
            ("concurrency 1", level(30.0, Some(0.1), 0)),
            ("8", level(612.0, None, 0)),
        ]
        .into_iter()
        .map(|(n, l)| (n.to_string(), evaluate(&slos, &l)))
        .collect();
        assert_eq!(
            console_lines(&levels),
            [
                "SLO time_to_first_token.p99<=500ms: concurrency 1 PASS 30.00 ms · 8 FAIL 612.00 ms",
                "SLO queue_share<=50%: concurrency 1 PASS 10.0% · 8 FAIL no value",
                "SLO: 2 of 4 checks failed (exit code 1)",
            ]
        );
        assert!(console_lines(&[("1".into(), vec![])]).is_empty());
    }

    #[test]
    fn json_exact() {
        let slos = [parse("queue_share<=50%").unwrap()];
        let r = evaluate(&slos, &level(1.0, Some(0.25), 0));
        assert_eq!(
            json(&r).to_string(),
            r#"[{"objective":"queue_share<=50%","metric":"queue_share","op":"<=","bound":0.5,"unit":"fraction","actual":0.25,"passed":true}]"#
        );
    }
}
