//! Where a run's results go besides its artifact directory, the same for `profile` and `perf`:
//! a [`Publisher`] receives each finished level ([`LevelReport`]) and the run's end
//! ([`RunEnd`]), and feeds the channels the plan's [`Outputs`] asked for — JSON lines on stdout
//! (`--output json`), a Prometheus Pushgateway (`--push-gateway`, per level), a JUnit report
//! (`--junit`, [`junit`]) and the GitHub step summary (`GITHUB_STEP_SUMMARY`,
//! [`step_summary`]). A channel that fails after the run started never fails the run: a push
//! warns once per level; a report file that cannot be written is an error at the end (its path
//! was checked before the first request).
//!
//! `--output json` prints, one object per line: each finished level's object (the fields of the
//! level's JSON file), then one summary object whose `"type"` is `"run_summary"`:
//!
//! ```text
//! {"type":"run_summary","mode":"profile","model":"gpt2","levels":["concurrency1"],
//!  "exit_code":0,"interrupted":false,"slo_checks":1,"slo_failed":0,
//!  "untrustworthy_levels":[],"knee":"...","verdict":["..."]}
//! ```

pub mod junit;
pub mod pushgateway;
pub mod step_summary;

use std::io::Write;

use serde_json::{Value, json};

use crate::analysis::slo::SloResult;
use crate::error::{Error, Result};
use crate::metrics::{Metric, MetricRef, MetricSource, Stat, SystemMetric, Validity};
use crate::plan::outputs::Outputs;

/// A latency distribution's headline statistics, in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latencies {
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Latencies {
    /// `(stat name, value)` pairs in a fixed order.
    pub fn named(&self) -> [(&'static str, f64); 5] {
        [
            ("avg", self.avg),
            ("p50", self.p50),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
        ]
    }
}

/// A level's key numbers in one shape for every mode (read through [`MetricSource`], so
/// `profile`'s summaries and `perf`'s levels give the same fields).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyMetrics {
    /// Time to first token (first response for `perf --streaming`).
    pub ttft: Option<Latencies>,
    /// Inter-token latency.
    pub itl: Option<Latencies>,
    /// Request latency.
    pub latency: Option<Latencies>,
    /// Requests (`perf`: inferences) per second.
    pub request_throughput: Option<f64>,
    /// Output tokens per second.
    pub output_token_throughput: Option<f64>,
    /// Input and output tokens per second.
    pub total_token_throughput: Option<f64>,
    /// Successful requests.
    pub requests: u64,
    /// Failed requests.
    pub errors: u64,
    /// Failed share of all requests.
    pub error_rate: Option<f64>,
}

impl KeyMetrics {
    /// The key numbers of any level.
    pub fn of(src: &impl MetricSource) -> KeyMetrics {
        let dist = |m: Metric| {
            let s = |stat| {
                src.metric(MetricRef::Dist(m, stat))
                    .filter(|v| v.is_finite())
            };
            Some(Latencies {
                avg: s(Stat::Avg)?,
                p50: s(Stat::P50)?,
                p90: s(Stat::P90)?,
                p95: s(Stat::P95)?,
                p99: s(Stat::P99)?,
            })
        };
        let sys = |m| src.metric(MetricRef::System(m)).filter(|v| v.is_finite());
        KeyMetrics {
            ttft: dist(Metric::TimeToFirstToken),
            itl: dist(Metric::InterTokenLatency),
            latency: dist(Metric::RequestLatency),
            request_throughput: sys(SystemMetric::RequestThroughput),
            output_token_throughput: sys(SystemMetric::OutputTokenThroughput),
            total_token_throughput: sys(SystemMetric::TotalTokenThroughput),
            requests: sys(SystemMetric::RequestCount).unwrap_or(0.0) as u64,
            errors: sys(SystemMetric::ErrorCount).unwrap_or(0.0) as u64,
            error_rate: sys(SystemMetric::ErrorRate),
        }
    }
}

/// One finished level as every channel sees it.
#[derive(Debug, Clone)]
pub struct LevelReport {
    /// The level's load.
    pub stimulus: crate::load::Stimulus,
    /// The level's JSON object (the fields of its JSON file).
    pub doc: Value,
    /// Its `--slo` results.
    pub slo: Vec<SloResult>,
    /// Whether its numbers can be trusted.
    pub validity: Validity,
    /// Its key numbers.
    pub key: KeyMetrics,
}

impl LevelReport {
    /// The level's name (`concurrency8`, `request_rate10.0`).
    pub fn name(&self) -> String {
        self.stimulus.name()
    }
}

/// How the run ended, for the final reports.
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    /// The exit code the run earned.
    pub exit_code: u8,
    /// Whether it was interrupted.
    pub interrupted: bool,
    /// The knee recommendation (sweeps of `profile`).
    pub knee: Option<String>,
    /// Where the server's time went (sweeps of `profile`).
    pub verdict: Vec<String>,
}

/// Which front end runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Mode {
    /// `ttftbench profile` (and `demo`).
    Profile,
    /// `ttftbench perf`.
    Perf,
}

impl Mode {
    /// The subcommand's name.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// Feeds one run's levels to the channels its plan asked for.
pub struct Publisher {
    outputs: Outputs,
    mode: Mode,
    model: String,
    push: Option<pushgateway::Pusher>,
    levels: Vec<LevelReport>,
}

impl Publisher {
    /// A publisher for a run of `model` in `mode`.
    pub fn new(outputs: &Outputs, mode: Mode, model: &str) -> Publisher {
        Publisher {
            push: outputs
                .push_gateway
                .as_deref()
                .map(|url| pushgateway::Pusher::new(url, model, mode)),
            outputs: outputs.clone(),
            mode,
            model: model.to_string(),
            levels: Vec::new(),
        }
    }

    /// Console text: on stdout, or on stderr when stdout carries JSON.
    pub fn text(&self, s: &str) {
        console_text(self.outputs.json_stdout(), s);
    }

    /// A level finished: its JSON line, its push, and kept for the end-of-run reports (one
    /// small struct per level, not per request).
    pub async fn level(&mut self, report: LevelReport) {
        if self.outputs.json_stdout() {
            json_line(&report.doc);
        }
        if let Some(p) = &self.push
            && let Err(e) = p.push(&report).await
        {
            eprintln!(
                "warning: pushing level {} to {} failed: {e} (the run goes on; its files are complete)",
                report.name(),
                p.url()
            );
        }
        self.levels.push(report);
    }

    /// The run ended: the summary line, the JUnit file, the step summary.
    pub fn finish(&self, end: &RunEnd) -> Result<()> {
        if self.outputs.json_stdout() {
            json_line(&self.summary_json(end));
        }
        if let Some(path) = &self.outputs.junit {
            let suites: Vec<junit::Suite> = self
                .levels
                .iter()
                .map(|l| junit::level_suite(self.mode, l))
                .collect();
            let name = format!("ttftbench {} {}", self.mode.name(), self.model);
            crate::artifact::write_atomic(path, junit::encode(&name, &suites))
                .map_err(|e| Error::failed(format!("--junit: {e}")))?;
        }
        if let Some(path) = &self.outputs.step_summary {
            let md = step_summary::run(self.mode, &self.model, &self.levels, end);
            step_summary::append(path, &md)?;
        }
        Ok(())
    }

    /// The final summary object of `--output json`.
    pub fn summary_json(&self, end: &RunEnd) -> Value {
        let (checks, failed) = slo_totals(&self.levels);
        json!({
            "type": "run_summary",
            "mode": self.mode.name(),
            "model": self.model,
            "levels": self.levels.iter().map(|l| l.name()).collect::<Vec<_>>(),
            "exit_code": end.exit_code,
            "interrupted": end.interrupted,
            "slo_checks": checks,
            "slo_failed": failed,
            "untrustworthy_levels": self
                .levels
                .iter()
                .filter(|l| !l.validity.trustworthy)
                .map(|l| l.name())
                .collect::<Vec<_>>(),
            "knee": end.knee,
            "verdict": end.verdict,
        })
    }
}

/// The `--slo` checks of `levels`: how many were made, and how many failed.
fn slo_totals(levels: &[LevelReport]) -> (usize, usize) {
    let checks = levels.iter().flat_map(|l| &l.slo);
    (checks.clone().count(), checks.filter(|r| !r.passed).count())
}

/// Writes console text to stdout, or to stderr when stdout is reserved for JSON.
pub fn console_text(json_stdout: bool, s: &str) {
    // A closed pipe (`| head`) is not worth failing a measured run for.
    if json_stdout {
        let _ = std::io::stderr().lock().write_all(s.as_bytes());
    } else {
        let _ = std::io::stdout().lock().write_all(s.as_bytes());
    }
}

/// One compact JSON object and a newline on stdout, flushed so a pipeline sees each level when
/// it ends.
fn json_line(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", serde_json::to_string(v).unwrap_or_default());
    let _ = out.flush();
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::load::Stimulus;

    /// A level with TTFT p99 `ttft_p99` ms against `time_to_first_token.p99<=500ms` and
    /// `request_throughput>=10`, at concurrency `c`.
    pub fn level(c: u32, ttft_p99: f64, trustworthy: bool) -> LevelReport {
        let lat = |p99: f64| Latencies {
            avg: p99 / 2.0,
            p50: p99 / 2.0,
            p90: p99 * 0.8,
            p95: p99 * 0.9,
            p99,
        };
        let slo = |s: &str, actual: Option<f64>, passed: bool| SloResult {
            slo: crate::metrics::parse(s).unwrap(),
            actual,
            passed,
        };
        LevelReport {
            stimulus: Stimulus::Concurrency(c),
            doc: json!({"level": c}),
            slo: vec![
                slo(
                    "time_to_first_token.p99<=500ms",
                    Some(ttft_p99),
                    ttft_p99 <= 500.0,
                ),
                slo("queue_share<=50%", None, false),
            ],
            validity: Validity {
                trustworthy,
                reasons: if trustworthy {
                    vec![]
                } else {
                    vec!["send lag p99 9.0 ms > 2 ms".into()]
                },
                ..Validity::default()
            },
            key: KeyMetrics {
                ttft: Some(lat(ttft_p99)),
                itl: None,
                latency: Some(lat(1000.0)),
                request_throughput: Some(16.5),
                output_token_throughput: Some(520.25),
                total_token_throughput: None,
                requests: 10,
                errors: 1,
                error_rate: Some(1.0 / 11.0),
            },
        }
    }

    #[test]
    fn summary_object_counts_checks_and_levels() {
        let mut p = Publisher::new(&Outputs::default(), Mode::Profile, "gpt2");
        p.levels = vec![level(1, 25.0, true), level(8, 612.0, false)];
        let end = RunEnd {
            exit_code: 1,
            knee: Some("knee at concurrency 1".into()),
            ..RunEnd::default()
        };
        assert_eq!(
            p.summary_json(&end).to_string(),
            r#"{"type":"run_summary","mode":"profile","model":"gpt2","levels":["concurrency1","concurrency8"],"exit_code":1,"interrupted":false,"slo_checks":4,"slo_failed":3,"untrustworthy_levels":["concurrency8"],"knee":"knee at concurrency 1","verdict":[]}"#
        );
    }

    #[test]
    fn key_metrics_read_through_the_metric_source() {
        struct Src;
        impl MetricSource for Src {
            fn metric(&self, m: MetricRef) -> Option<f64> {
                match m {
                    MetricRef::Dist(Metric::RequestLatency, s) => {
                        Some(s.of(&crate::metrics::Stats {
                            avg: 1.0,
                            p50: 2.0,
                            p90: 3.0,
                            p95: 4.0,
                            p99: 5.0,
                            ..Default::default()
                        }))
                    }
                    MetricRef::System(SystemMetric::RequestCount) => Some(7.0),
                    MetricRef::System(SystemMetric::RequestThroughput) => Some(f64::NAN),
                    _ => None,
                }
            }
        }
        let k = KeyMetrics::of(&Src);
        assert_eq!(k.latency.unwrap().named()[4], ("p99", 5.0));
        assert_eq!((k.ttft, k.requests, k.errors), (None, 7, 0));
        assert_eq!(k.request_throughput, None, "NaN is no value");
    }
}
