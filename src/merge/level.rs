//! One level of a sharded run, added up: the shards' aggregates summed (HDR histograms added,
//! so every percentile is the one a single histogram of all their requests gives; counters
//! summed; the measurement window from the earliest successful send to the latest response of
//! any shard, so throughput is the union's requests over the union's window, as one process
//! computes it), the server's view taken once, and the validity verdict of the whole: the level
//! is not trustworthy when any shard was not, or when the shards did not load the server
//! together. Pure: files are read and written by the caller.

use crate::analysis::slo::{self, SloResult};
use crate::artifact::shard::{ShardPart, ShardRecord, ShardsSection};
use crate::load::Stimulus;
use crate::metrics::{Metric, PercentileMethod, Slo, Validity};
use crate::stats::{Aggregate, LevelSummary};

/// Shards whose level starts lie further apart than this did not load the server together.
pub const MAX_START_SKEW_NS: u64 = 1_000_000_000;

/// One shard's part of the level, as read from its directory.
#[derive(Debug, Clone)]
pub struct ShardLevel {
    /// The directory it was read from.
    pub dir: String,
    /// Its `shard.json`.
    pub record: ShardRecord,
    /// Its summary and aggregate (times in Unix ns); `None` for a shard idle at this level.
    pub measured: Option<(LevelSummary, Aggregate)>,
}

impl ShardLevel {
    /// When its level started (Unix ns), for a shard with load.
    fn started_unix_ns(&self) -> Option<u64> {
        let (s, _) = self.measured.as_ref()?;
        Some(
            self.record
                .start
                .map_or(s.started_unix_ns, |st| st.actual_unix_ns),
        )
    }
}

/// What the plan says about how a level is summarized.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// `--goodput` objectives were given.
    pub goodput: bool,
    /// How percentiles are computed.
    pub method: PercentileMethod,
    /// `--slo` objectives.
    pub slos: Vec<Slo>,
}

/// The merged level.
#[derive(Debug, Clone)]
pub struct MergedLevel {
    /// Its numbers, server view and validity, as one run of the plan's level reports them.
    pub summary: LevelSummary,
    /// The sum of the shards' aggregates (times in Unix ns).
    pub agg: Aggregate,
    /// Its objectives' results.
    pub slo: Vec<SloResult>,
    /// The `shards` section.
    pub shards: ShardsSection,
}

/// Adds up the shards of the plan's level `stimulus` (every shard index once, index order).
pub fn merge(stimulus: Stimulus, shards: &[ShardLevel], rules: &Rules) -> MergedLevel {
    let measured = || shards.iter().filter_map(|s| s.measured.as_ref());
    let mut agg = Aggregate::new();
    for (_, a) in measured() {
        agg.merge(a);
    }
    let mut stats = agg.summarize(rules.goodput, rules.method);
    // A scored level's intervals at the run's confidence, and its chance rate: the shards'.
    let scored = measured().find_map(|(l, _)| l.stats.accuracy.as_ref());
    if let (Some(a), Some(shard)) = (stats.accuracy.as_mut(), scored) {
        *a = a.at(shard.confidence, shard.chance);
    }
    let starts: Vec<u64> = shards
        .iter()
        .filter_map(ShardLevel::started_unix_ns)
        .collect();
    let (first, last) = (
        starts.iter().copied().min().unwrap_or(0),
        starts.iter().copied().max().unwrap_or(0),
    );
    // Every shard saw the same server: its counters once, from the shard whose measurement
    // spanned longest (its before/after readings bracket the others' most).
    let server_from = longest(shards, |l| l.server.clone());
    let validity = merged_validity(stimulus, shards, &agg, last - first, rules.method);
    let summary = LevelSummary {
        stimulus,
        stats,
        server: server_from.as_ref().map(|(_, d)| d.clone()),
        // Every shard watched the same server: its view from the longest-measuring shard.
        engine: longest(shards, |l| l.engine.clone()).map(|(_, e)| e),
        gpu: longest(shards, |l| l.gpu.clone()).map(|(_, g)| g),
        streaming: measured().any(|(l, _)| l.streaming),
        interrupted: measured().any(|(l, _)| l.interrupted),
        started_unix_ns: first,
        ended_unix_ns: measured().map(|(l, _)| l.ended_unix_ns).max().unwrap_or(0),
        validity,
        // Drift is judged on one process's timeline; shards' are not merged into one.
        drift: None,
    };
    let slo = slo::evaluate(&rules.slos, &summary);
    let section = section(shards, last - first, server_from.map(|(i, _)| i));
    MergedLevel {
        summary,
        agg,
        slo,
        shards: section,
    }
}

fn section(shards: &[ShardLevel], skew_ns: u64, server_from: Option<u32>) -> ShardsSection {
    let first = shards.first().map(|s| &s.record);
    ShardsSection {
        count: first.map_or(0, |r| r.shard.count),
        plan_id: first.map_or_else(String::new, |r| r.plan_id.clone()),
        planned_start_unix_ns: shards
            .iter()
            .find_map(|s| s.record.start.map(|st| st.planned_unix_ns)),
        start_skew_ms: skew_ns as f64 / 1e6,
        server_metrics_from: server_from,
        shards: shards
            .iter()
            .map(|s| {
                let m = s.measured.as_ref().map(|(l, _)| l);
                ShardPart {
                    index: s.record.shard.index,
                    dir: s.dir.clone(),
                    requests: m.map_or(0, |l| l.stats.request_count),
                    errors: m.map_or(0, |l| l.stats.error_count),
                    start_delay_ms: s.record.start.filter(|_| m.is_some()).map(|st| {
                        st.actual_unix_ns.saturating_sub(st.planned_unix_ns) as f64 / 1e6
                    }),
                    trustworthy: m.is_none_or(|l| l.validity.trustworthy),
                    idle: s.record.idle.clone(),
                }
            })
            .collect(),
    }
}

/// Not trustworthy when any shard was not (its reasons, prefixed with the shard, except its own
/// sample count: the union's is judged instead), when the
/// shards' starts lie more than [`MAX_START_SKEW_NS`] apart, or when one started more than that
/// after the planned moment. The generator's numbers: the busiest shard's CPU share and stall,
/// the union's send-lag p99, rates and cap delays summed.
fn merged_validity(
    stimulus: Stimulus,
    shards: &[ShardLevel],
    agg: &Aggregate,
    skew_ns: u64,
    method: PercentileMethod,
) -> Validity {
    let mut v = Validity::default();
    for s in shards {
        let Some((l, _)) = &s.measured else {
            continue;
        };
        let lv = &l.validity;
        // A shard's own sample count says nothing about the union's: judged once below.
        v.reasons.extend(
            lv.reasons
                .iter()
                .map(|r| format!("{}: {r}", s.record.shard)),
        );
        v.cpu_share = max_of(v.cpu_share, lv.cpu_share);
        v.cores = v.cores.max(lv.cores);
        v.max_stall_ms = max_of(v.max_stall_ms, lv.max_stall_ms);
        v.delayed_by_cap += lv.delayed_by_cap;
        v.held_back_sends += lv.held_back_sends;
        if let Some(ms) = lv.held_back_ms {
            v.held_back_ms = Some(v.held_back_ms.unwrap_or(0.0) + ms);
        }
        if let Some(r) = lv.achieved_rate {
            v.achieved_rate = Some(v.achieved_rate.unwrap_or(0.0) + r);
        }
        if let Some(st) = s.record.start {
            let delay = st.actual_unix_ns.saturating_sub(st.planned_unix_ns);
            if delay > MAX_START_SKEW_NS {
                v.reasons.push(format!(
                    "{} started {:.1} s after the planned start: the others ran without its load meanwhile",
                    s.record.shard,
                    delay as f64 / 1e9
                ));
            }
        }
    }
    if skew_ns > MAX_START_SKEW_NS {
        v.reasons.push(format!(
            "the shards started this level {:.1} s apart (more than {:.0} s): the server did not see their load together; start them with one --start-at",
            skew_ns as f64 / 1e9,
            MAX_START_SKEW_NS as f64 / 1e9
        ));
    }
    v.unsupported_percentiles = crate::metrics::unsupported_percentiles(agg.ok);
    if let Stimulus::RequestRate { rate, .. } = stimulus {
        v.requested_rate = Some(rate);
    }
    if stimulus.open_loop() {
        let lag = agg.dist(Metric::SendLag);
        v.send_lag_p99_ms = (lag.count() > 0).then(|| lag.percentile(99.0, method) / 1e6);
    }
    v.trustworthy = v.reasons.is_empty();
    v
}

/// `view` of the level of the shard whose measurement spanned longest, among those that have
/// it, with that shard's index.
fn longest<T>(
    shards: &[ShardLevel],
    view: impl Fn(&LevelSummary) -> Option<T>,
) -> Option<(u32, T)> {
    shards
        .iter()
        .filter_map(|s| Some((s.record.shard.index, &s.measured.as_ref()?.0)))
        .filter_map(|(i, l)| Some((l.stats.duration_s, i, view(l)?)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, i, v)| (i, v))
}

/// The larger of two optional values, or the one there is.
fn max_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.into_iter().chain(b).reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::shard::{LevelRecord, SHARD_FORMAT, StartRecord};
    use crate::load::Shard;
    use crate::record::RequestRecord;

    fn rec(sent_ms: u64, ttft_ms: u64) -> RequestRecord {
        let ms = 1_000_000;
        let t0 = 1_767_225_600_000_000_000u64;
        RequestRecord {
            intended_ns: t0 + sent_ms * ms,
            sent_ns: t0 + sent_ms * ms,
            first_byte_ns: None,
            first_token_ns: Some(t0 + (sent_ms + ttft_ms) * ms),
            second_token_ns: None,
            last_token_ns: Some(t0 + (sent_ms + ttft_ms + 100) * ms),
            end_ns: t0 + (sent_ms + ttft_ms + 100) * ms,
            isl: 10,
            tokenizer_osl: Some(5),
            ..crate::stats::test_record(0, 0, 5)
        }
    }

    fn shard(index: u32, recs: &[RequestRecord], delay_ms: u64, trusted: bool) -> ShardLevel {
        let mut agg = Aggregate::new();
        for r in recs {
            agg.record(r, &[], &[]);
        }
        let planned = 1_767_225_600_000_000_000u64;
        let stats = agg.summarize(false, PercentileMethod::Linear);
        let summary = LevelSummary {
            started_unix_ns: planned + delay_ms * 1_000_000,
            ended_unix_ns: planned + (delay_ms + 1000) * 1_000_000,
            validity: Validity {
                trustworthy: trusted,
                reasons: if trusted {
                    Vec::new()
                } else {
                    vec!["the generator's CPU was saturated".into()]
                },
                unsupported_percentiles: vec!["p99".into()],
                ..Validity::default()
            },
            ..LevelSummary::new(Stimulus::Concurrency(1), stats)
        };
        ShardLevel {
            dir: format!("s{index}"),
            record: ShardRecord {
                format: SHARD_FORMAT.into(),
                ttftbench_version: "0".into(),
                mode: "profile".into(),
                plan_id: "p".into(),
                shard: Shard { index, count: 2 },
                start_at_unix_ns: Some(planned),
                clock_anchor_unix_ns: planned,
                level: LevelRecord {
                    index: 0,
                    stimulus: Stimulus::Concurrency(2),
                },
                part: Some(Stimulus::Concurrency(1)),
                idle: None,
                start: Some(StartRecord {
                    planned_unix_ns: planned,
                    actual_unix_ns: planned + delay_ms * 1_000_000,
                    late: delay_ms > 100,
                }),
            },
            measured: Some((summary, agg)),
        }
    }

    #[test]
    fn union_window_percentiles_and_validity() {
        let a: Vec<RequestRecord> = (0..10).map(|i| rec(i * 200, 40 + i)).collect();
        let b: Vec<RequestRecord> = (0..10).map(|i| rec(100 + i * 200, 60 + i)).collect();
        let m = merge(
            Stimulus::Concurrency(2),
            &[shard(0, &a, 1, true), shard(1, &b, 2, true)],
            &Rules::default(),
        );
        let mut all = Aggregate::new();
        for r in a.iter().chain(&b) {
            all.record(r, &[], &[]);
        }
        assert_eq!(
            m.summary.stats,
            all.summarize(false, PercentileMethod::Linear)
        );
        // Union window: first send 0 ms, last response 100 + 1800 + 69 + 100 ms.
        assert!((m.summary.stats.duration_s - 2.069).abs() < 1e-9);
        assert!((m.summary.stats.request_throughput - 20.0 / 2.069).abs() < 1e-9);
        // Each shard's own 10 requests support no p90-p99 of the union's: its 20 are judged
        // once (p95 and p90 are supported, p99 is not).
        assert!(m.summary.validity.reasons.is_empty());
        assert_eq!(m.summary.validity.unsupported_percentiles, ["p99"]);
        assert_eq!(m.shards.start_skew_ms, 1.0);
        assert_eq!(m.shards.shards[1].requests, 10);
        let m = merge(
            Stimulus::Concurrency(2),
            &[shard(0, &a, 1, true), shard(1, &b, 2500, false)],
            &Rules::default(),
        );
        let reasons = &m.summary.validity.reasons;
        assert!(!m.summary.validity.trustworthy);
        assert_eq!(reasons[0], "shard 1/2: the generator's CPU was saturated");
        assert!(
            reasons[1].starts_with("shard 1/2 started 2.5 s after"),
            "{reasons:?}"
        );
        assert!(
            reasons[2].starts_with("the shards started this level 2.5 s apart"),
            "{reasons:?}"
        );
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(!m.shards.shards[1].trustworthy);
    }
}
