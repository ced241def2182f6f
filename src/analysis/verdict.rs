//! Where the time goes across a sweep, in words: between consecutive levels, if the server's
//! queue time grew faster than its compute time, scheduling/queueing is the bottleneck, else
//! compute (prefill); a level whose queue is more than half the server time is flagged. This is
//! the reading rule of the Triton TTFT guides, applied to Triton's own counters.

use serde::Serialize;

use crate::stats::LevelSummary;

/// Queue share above which a level is flagged.
pub const QUEUE_SHARE_LIMIT: f64 = 0.5;

/// What limits the step from one level to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// Queue time grew faster than compute time.
    Queueing,
    /// Compute time grew at least as fast as queue time.
    Compute,
    /// Neither moved measurably (both within [`UNCHANGED_MS`]).
    Unchanged,
}

/// Changes smaller than this (ms) in both queue and compute time mean the server did not notice
/// the step.
pub const UNCHANGED_MS: f64 = 0.05;

/// One step of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Lower level's name.
    pub from: String,
    /// Upper level's name.
    pub to: String,
    /// Change in average queue time (ms).
    pub queue_delta_ms: f64,
    /// Change in average compute time (ms).
    pub compute_delta_ms: f64,
    /// Verdict.
    pub bottleneck: Bottleneck,
}

/// The sweep's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Verdict {
    /// Each step between consecutive levels that both have server data.
    pub steps: Vec<Step>,
    /// Levels whose queue share exceeds [`QUEUE_SHARE_LIMIT`].
    pub queue_dominated: Vec<String>,
    /// The verdict in sentences.
    pub lines: Vec<String>,
    /// Whether the server's timing covers only a small part of the client's latency (decoupled
    /// models on Triton), so queue shares were not flagged.
    pub server_partial: bool,
}

/// Server time below this fraction of client latency means the server's statistics miss most of
/// each request.
pub const PARTIAL_COVERAGE: f64 = 0.25;

fn compute_ms(d: &crate::server_metrics::ServerDelta) -> f64 {
    d.avg_compute_input_ms + d.avg_compute_infer_ms + d.avg_compute_output_ms
}

/// Reads the server's view across levels. Levels without server data are skipped; with fewer
/// than one level of data the verdict says so.
pub fn verdict(levels: &[LevelSummary]) -> Verdict {
    let with: Vec<(&LevelSummary, f64, f64)> = levels
        .iter()
        .filter_map(|l| {
            let d = l.server.as_ref()?;
            Some((l, d.avg_queue_ms?, compute_ms(d)))
        })
        .collect();
    let mut v = Verdict::default();
    if with.is_empty() {
        if !levels.is_empty() {
            v.lines.push(
                "no server-side queue/compute data: give --server-metrics-url (Triton's :8002/metrics) or make the statistics API reachable (-H for an access token)".into(),
            );
        }
        return v;
    }
    let label = |l: &LevelSummary| {
        format!(
            "{} {}",
            l.stimulus.kind(),
            super::text::load_text(l.stimulus.value())
        )
    };
    for w in with.windows(2) {
        let (a, qa, ca) = w[0];
        let (b, qb, cb) = w[1];
        let (dq, dc) = (qb - qa, cb - ca);
        let bottleneck = if dq.abs() < UNCHANGED_MS && dc.abs() < UNCHANGED_MS {
            Bottleneck::Unchanged
        } else if dq > dc {
            Bottleneck::Queueing
        } else {
            Bottleneck::Compute
        };
        let what = match bottleneck {
            Bottleneck::Queueing => {
                "queue time grew faster than compute: scheduling/queueing is the bottleneck"
            }
            Bottleneck::Compute => {
                "compute time grew at least as fast as queue time: compute (prefill) is the bottleneck"
            }
            Bottleneck::Unchanged => {
                "server time did not change: the server is not the limit at these loads"
            }
        };
        v.lines.push(format!(
            "{} → {}: queue {dq:+.1} ms, compute {dc:+.1} ms — {what}",
            label(a),
            super::text::load_text(b.stimulus.value())
        ));
        v.steps.push(Step {
            from: a.stimulus.name(),
            to: b.stimulus.name(),
            queue_delta_ms: dq,
            compute_delta_ms: dc,
            bottleneck,
        });
    }
    // Triton times a decoupled model only while its execute call runs; when that covers a small
    // part of what clients wait, the queue share describes scheduling, not generation.
    let covered: Vec<f64> = with
        .iter()
        .filter_map(|(l, _, _)| {
            let client = l.stats.get(crate::metrics::Metric::RequestLatency)?.avg;
            let server = l.server.as_ref()?.avg_request_ms;
            (client > 0.0).then_some(server / client)
        })
        .collect();
    if !covered.is_empty() && covered.iter().all(|c| *c < PARTIAL_COVERAGE) {
        v.server_partial = true;
        v.lines.push(format!(
            "note: the server's statistics cover only {:.0}% of the time clients wait for a response (a decoupled model is timed while its execute call runs, not while it streams), so queue and compute shares describe scheduling, not generation",
            covered.iter().sum::<f64>() / covered.len() as f64 * 100.0
        ));
        return v;
    }
    for (l, _, _) in &with {
        if let Some(share) = l.server.as_ref().and_then(|d| d.queue_share)
            && share > QUEUE_SHARE_LIMIT
        {
            v.queue_dominated.push(l.stimulus.name());
            v.lines.push(format!(
                "{}: queue is {:.0}% of server time (over 50%): tune batching/scheduling (batch slots, instances) or cap concurrency below this level",
                label(l),
                share * 100.0
            ));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::server_metrics::ServerDelta;
    use crate::stats::LevelStats;

    fn level(c: u32, queue: Option<f64>, compute: f64) -> LevelSummary {
        LevelSummary {
            stimulus: Stimulus::Concurrency(c),
            stats: LevelStats {
                request_count: 1,
                duration_s: 1.0,
                ..Default::default()
            },
            server: queue.map(|q| ServerDelta {
                source: "statistics",
                requests: 10,
                failures: 0,
                executions: 10,
                avg_request_ms: q + compute,
                avg_queue_ms: Some(q),
                avg_compute_input_ms: 0.0,
                avg_compute_infer_ms: compute,
                avg_compute_output_ms: 0.0,
                queue_share: Some(q / (q + compute)),
                max_pending: 0.0,
            }),
            streaming: true,
            interrupted: false,
            started_unix_ns: 0,
            validity: Default::default(),
        }
    }

    /// The seeds' example: queue 2 → 8 → 25 → 80 → 190 ms while compute grows slowly.
    #[test]
    fn seed_table_reads_as_compute_then_queueing() {
        let levels = [
            level(1, Some(2.0), 40.0),
            level(4, Some(8.0), 60.0),
            level(8, Some(25.0), 70.0),
            level(16, Some(80.0), 90.0),
            level(32, Some(190.0), 100.0),
        ];
        let v = verdict(&levels);
        let b: Vec<Bottleneck> = v.steps.iter().map(|s| s.bottleneck).collect();
        assert_eq!(
            b,
            [
                Bottleneck::Compute,
                Bottleneck::Queueing,
                Bottleneck::Queueing,
                Bottleneck::Queueing
            ]
        );
        assert_eq!(v.queue_dominated, ["concurrency32"]);
        assert_eq!(
            v.lines[0],
            "concurrency 1 → 4: queue +6.0 ms, compute +20.0 ms — compute time grew at least as fast as queue time: compute (prefill) is the bottleneck"
        );
        assert_eq!(
            v.lines[4],
            "concurrency 32: queue is 66% of server time (over 50%): tune batching/scheduling (batch slots, instances) or cap concurrency below this level"
        );
    }

    #[test]
    fn partial_server_timing_is_explained_not_flagged() {
        let mut levels = [level(1, Some(0.2), 0.3), level(8, Some(3.0), 0.3)];
        for l in levels.iter_mut() {
            l.stats.metrics.push((
                crate::metrics::Metric::RequestLatency,
                crate::metrics::Stats {
                    count: 1,
                    avg: 140.0,
                    ..Default::default()
                },
            ));
        }
        let v = verdict(&levels);
        assert!(v.server_partial);
        assert!(v.queue_dominated.is_empty());
        assert!(
            v.lines
                .last()
                .unwrap()
                .starts_with("note: the server's statistics cover only 1%"),
            "{:?}",
            v.lines
        );
    }

    #[test]
    fn levels_without_server_data_are_skipped_or_explained() {
        let v = verdict(&[
            level(1, None, 0.0),
            level(2, Some(1.0), 10.0),
            level(4, Some(1.0), 20.0),
        ]);
        assert_eq!(v.steps.len(), 1);
        assert_eq!(v.steps[0].from, "concurrency2");
        let v = verdict(&[level(1, None, 0.0)]);
        assert!(v.steps.is_empty());
        assert!(v.lines[0].contains("--server-metrics-url"));
        assert!(verdict(&[]).lines.is_empty());
    }
}
