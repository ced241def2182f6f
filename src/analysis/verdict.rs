//! Where the time goes across a sweep, in words: between consecutive levels, which part of the
//! server's time grew most — the queue, or the work after it (prefill and decode where the
//! engine splits them, else compute) — names the bottleneck; a level whose queue is more than
//! half the server time is flagged, and KV-cache pressure and preemptions are named where they
//! appear (and at the knee, when one is given). This is the reading rule of the Triton TTFT
//! guides, applied to the engine's own split where it has one (vLLM, SGLang, TGI, TensorRT-LLM
//! and llama.cpp through their waiting queues: `server_metrics::split`), else to Triton's
//! counters. What an engine cannot tell is said once ([`LLAMACPP_NOTE`]).

use serde::Serialize;

use super::knee;
use crate::server_metrics::ServerKind;
use crate::server_metrics::split::{EngineSplit, QueueSource, engine_name};
use crate::stats::LevelSummary;

/// Queue share above which a level is flagged.
pub const QUEUE_SHARE_LIMIT: f64 = 0.5;

/// KV-cache usage at or above which (at its peak) a level is under KV pressure.
pub const KV_PRESSURE: f64 = 0.9;

/// What limits the step from one level to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// Queue time grew most.
    Queueing,
    /// Prefill time grew most (engines that split prefill from decode).
    Prefill,
    /// Decode time grew most (engines that split prefill from decode).
    Decode,
    /// The time after the queue grew at least as fast as the queue (not split further).
    Compute,
    /// Nothing grew measurably (no part by [`UNCHANGED_MS`] or more).
    Unchanged,
}

/// Growth smaller than this (ms) in every part means the server did not notice the step.
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
    /// Change in average time after the queue (ms): compute, or prefill plus decode.
    pub compute_delta_ms: f64,
    /// Change in average prefill time (ms), where the engine exports it.
    pub prefill_delta_ms: Option<f64>,
    /// Change in average decode time (ms), where the engine exports it.
    pub decode_delta_ms: Option<f64>,
    /// Whose split: `triton`, or the engine (`vllm`, `trtllm`, ...).
    pub source: ServerKind,
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
    /// Levels whose KV cache reached [`KV_PRESSURE`] or that preempted requests.
    pub kv_pressure: Vec<String>,
    /// The verdict in sentences.
    pub lines: Vec<String>,
    /// Whether the server's timing covers only a small part of the client's latency (decoupled
    /// models on Triton), so queue shares were not flagged.
    pub server_partial: bool,
}

/// Server time below this fraction of client latency means the server's statistics miss most of
/// each request.
pub const PARTIAL_COVERAGE: f64 = 0.25;

/// What a llama.cpp verdict rests on, said once under the steps: its page has no queue time,
/// no per-request times and no request counter.
pub const LLAMACPP_NOTE: &str = "note: llama.cpp exports no queue time, no per-request histograms and no finished-request counter: its queue is estimated from requests_deferred (the requests waiting for a free slot, sampled every 500 ms) by Little's law over the requests the client finished, its prefill is the mean of the responses' own timings.prompt_ms, and its decode is tokens_predicted_seconds_total over those requests";

/// What Triton's compute time of a decoupled LLM model holds, said once under the steps that
/// name it (each step saying it made the verdict repeat one sentence per level).
pub const TRITON_COMPUTE_NOTE: &str = "note: for a decoupled LLM model Triton's compute time spans the whole generation, prefill and decode, not prefill alone";

/// One level's server time as the verdict reads it (ms).
#[derive(Debug, Clone, Copy)]
struct Reading<'a> {
    level: &'a LevelSummary,
    queue: f64,
    prefill: Option<f64>,
    decode: Option<f64>,
    /// Everything after the queue.
    compute: f64,
    share: Option<f64>,
    /// Whose numbers: the engine's split (with where its queue comes from), or Triton's.
    engine: Option<(ServerKind, QueueSource)>,
}

impl<'a> Reading<'a> {
    fn of(l: &'a LevelSummary) -> Option<Reading<'a>> {
        if let (Some(s), Some(e)) = (l.engine_split(), &l.engine) {
            return Some(Reading::from_split(l, &s, e.kind));
        }
        let d = l.server.as_ref()?;
        Some(Reading {
            level: l,
            queue: d.avg_queue_ms?,
            prefill: None,
            decode: None,
            compute: d.avg_compute_input_ms + d.avg_compute_infer_ms + d.avg_compute_output_ms,
            share: d.queue_share,
            engine: None,
        })
    }

    fn from_split(l: &'a LevelSummary, s: &EngineSplit, kind: ServerKind) -> Reading<'a> {
        Reading {
            level: l,
            queue: s.queue_ms,
            prefill: s.prefill_ms,
            decode: s.decode_ms,
            compute: s.generation_ms,
            share: s.queue_share(),
            engine: Some((kind, s.queue_source)),
        }
    }

    fn kind(&self) -> ServerKind {
        self.engine.map_or(ServerKind::Triton, |(k, _)| k)
    }

    /// `vLLM queue`, `Triton queue`, `TensorRT-LLM queue (estimated ...)`.
    fn queue_noun(&self) -> String {
        match self.engine {
            Some((k, q)) => q.noun(k),
            None => "Triton queue".to_string(),
        }
    }
}

/// `concurrency 8`, `request_rate 2.5`.
fn label(l: &LevelSummary) -> String {
    format!(
        "{} {}",
        l.stimulus.kind(),
        super::text::load_text(l.stimulus.value())
    )
}

/// Reads the server's view across levels. Levels without server data are skipped; with no
/// level of data the verdict says so.
pub fn verdict(levels: &[LevelSummary]) -> Verdict {
    read(levels, None)
}

/// [`verdict`], and what explains the knee of `knee` (when one was found) added to its
/// recommendation, so the knee is one line that says where it is and why.
pub fn with_knee(levels: &[LevelSummary], knee: &mut knee::Analysis) -> Verdict {
    let mut cause = None;
    let level = knee.knee.as_ref().map(|k| k.level.clone());
    let v = read(levels, level.as_deref().map(|l| (l, &mut cause)));
    if let Some(cause) = cause {
        knee.explain(&cause);
    }
    v
}

/// The verdict, and into `knee.1` what explains the knee at level `knee.0` (`concurrency8`).
fn read(levels: &[LevelSummary], knee: Option<(&str, &mut Option<String>)>) -> Verdict {
    let with: Vec<Reading> = levels.iter().filter_map(Reading::of).collect();
    let mut v = Verdict::default();
    // The transport's part comes first: it says what the client-side numbers hold besides the
    // server's time.
    v.lines.extend(super::transport::lines(levels));
    // Then whether the answers held up under the load (scored workloads).
    v.lines
        .extend(super::accuracy::assess(levels).map_or_else(Vec::new, |a| a.lines));
    if with.is_empty() {
        if !levels.is_empty() {
            v.lines.push(
                "no server-side queue/compute data: give --server-metrics-url (Triton's :8002/metrics, or an engine's /metrics: vLLM, SGLang, TGI, llama.cpp's llama-server started with --metrics) or make the statistics API reachable (-H for an access token)".into(),
            );
        }
        return v;
    }
    for w in with.windows(2) {
        if w[0].engine.map(|e| e.0) != w[1].engine.map(|e| e.0) {
            continue;
        }
        let step = step(&w[0], &w[1]);
        // A step read as the one before it says so in a few words, not the explanation again.
        let again = v.steps.last().is_some_and(|p: &Step| {
            p.bottleneck == step.bottleneck && p.source == step.source && p.to == step.from
        });
        v.lines.push(step_line(&w[0], &w[1], &step, again));
        v.steps.push(step);
    }
    if v.steps
        .iter()
        .any(|s| s.bottleneck == Bottleneck::Compute && s.source == ServerKind::Triton)
    {
        v.lines.push(TRITON_COMPUTE_NOTE.to_string());
    }
    if with
        .iter()
        .any(|r| r.engine.is_some_and(|(k, _)| k == ServerKind::LlamaCpp))
    {
        v.lines.push(LLAMACPP_NOTE.to_string());
    }
    if let Some(covered) = triton_partial(&with) {
        v.server_partial = true;
        v.lines.push(format!(
            "note: the server's statistics cover only {:.0}% of the time clients wait for a response (a decoupled model is timed while its execute call runs, not while it streams), so queue and compute shares describe scheduling, not generation",
            covered * 100.0
        ));
        return v;
    }
    for r in &with {
        if let Some(share) = r.share
            && share > QUEUE_SHARE_LIMIT
        {
            v.queue_dominated.push(r.level.stimulus.name());
            v.lines.push(queue_line(r, share));
        }
    }
    kv_lines(levels, &mut v);
    if let Some((level, cause)) = knee {
        *cause = knee_cause(&with, &v, level);
    }
    v
}

/// The bottleneck of the step from `a` to `b`: the part that grew most.
fn step(a: &Reading, b: &Reading) -> Step {
    let dq = b.queue - a.queue;
    let dc = b.compute - a.compute;
    let delta = |x: Option<f64>, y: Option<f64>| Some(y? - x?);
    let (dp, dd) = (delta(a.prefill, b.prefill), delta(a.decode, b.decode));
    // Only a part that grew can be the bottleneck: a queue that grew by nothing is not one
    // because the work after it shrank more. The queue wins only growing strictly faster.
    let after = match (dp, dd) {
        (Some(p), Some(d)) if p >= d => (p, Bottleneck::Prefill),
        (Some(_), Some(d)) => (d, Bottleneck::Decode),
        _ => (dc, Bottleneck::Compute),
    };
    let bottleneck = match (dq, after) {
        (q, (w, _)) if q.max(w) < UNCHANGED_MS => Bottleneck::Unchanged,
        (q, (w, _)) if q > w => Bottleneck::Queueing,
        (_, (_, b)) => b,
    };
    Step {
        from: a.level.stimulus.name(),
        to: b.level.stimulus.name(),
        queue_delta_ms: dq,
        compute_delta_ms: dc,
        prefill_delta_ms: dp,
        decode_delta_ms: dd,
        source: b.kind(),
        bottleneck,
    }
}

/// `concurrency 1 → 4: <deltas> — <what it means>`.
fn step_line(a: &Reading, b: &Reading, s: &Step, again: bool) -> String {
    let queue = match b.engine {
        Some(_) => b.queue_noun(),
        None => "queue".to_string(),
    };
    let mut deltas = vec![format!("{queue} {:+.1} ms", s.queue_delta_ms)];
    match (s.prefill_delta_ms, s.decode_delta_ms) {
        (Some(p), Some(d)) => deltas.push(format!("prefill {p:+.1} ms, decode {d:+.1} ms")),
        _ if b.engine.is_some() => deltas.push(format!("generation {:+.1} ms", s.compute_delta_ms)),
        _ => deltas.push(format!("compute {:+.1} ms", s.compute_delta_ms)),
    }
    if b.kind() == ServerKind::TrtLlm
        && let (Some(x), Some(y)) = (triton_queue_ms(a.level), triton_queue_ms(b.level))
    {
        deltas.push(format!("Triton's own queue {:+.1} ms", y - x));
    }
    let what = match again {
        true => again_text(s.bottleneck).to_string(),
        false => bottleneck_text(b, s.bottleneck),
    };
    let mut line = format!(
        "{} → {}: {} — {what}",
        label(a.level),
        super::text::load_text(b.level.stimulus.value()),
        deltas.join(", ")
    );
    if let Some(kv) = kv_note(b.level) {
        line.push_str(&format!(" ({kv})"));
    }
    line
}

/// What a step's bottleneck means, for this reading's source.
fn bottleneck_text(r: &Reading, b: Bottleneck) -> String {
    match (b, r.engine) {
        (Bottleneck::Queueing, Some((ServerKind::TrtLlm, _))) => "the TensorRT-LLM executor's waiting queue grew most: queueing inside the engine is the bottleneck, where Triton's own queue counter does not look".to_string(),
        (Bottleneck::Queueing, Some((ServerKind::LlamaCpp, _))) => "time waiting for a free llama.cpp slot grew most: every slot is busy, so queueing is the bottleneck".to_string(),
        (Bottleneck::Queueing, Some((k, _))) => format!(
            "time in the {} queue grew most: requests wait for a batch slot or KV-cache space, so queueing is the bottleneck",
            engine_name(k)
        ),
        (Bottleneck::Queueing, None) => {
            "queue time grew faster than compute: scheduling/queueing is the bottleneck".to_string()
        }
        (Bottleneck::Prefill, _) => {
            "prefill grew most: prompt processing is the bottleneck".to_string()
        }
        (Bottleneck::Decode, _) => "decode grew most: each request generates more slowly as the batch grows, so decode is the bottleneck, not waiting".to_string(),
        (Bottleneck::Compute, Some(_)) => "generation time grew at least as fast as queue time: the engine's work (prefill and decode) is the bottleneck".to_string(),
        (Bottleneck::Compute, None) => "compute time grew at least as fast as queue time: the model's execution is the bottleneck".to_string(),
        (Bottleneck::Unchanged, _) => {
            "server time did not grow: the server is not the limit at these loads".to_string()
        }
    }
}

/// A step read as the step before it: the bottleneck in a few words.
fn again_text(b: Bottleneck) -> &'static str {
    match b {
        Bottleneck::Queueing => "as above: queueing is the bottleneck",
        Bottleneck::Prefill => "as above: prefill is the bottleneck",
        Bottleneck::Decode => "as above: decode is the bottleneck",
        Bottleneck::Compute => "as above: compute is the bottleneck",
        Bottleneck::Unchanged => "as above: server time did not grow",
    }
}

/// Triton's own average queue time (ms) of a level, from its counters.
fn triton_queue_ms(l: &LevelSummary) -> Option<f64> {
    match &l.server {
        Some(d) => d.avg_queue_ms,
        None => l.engine.as_ref()?.avg_triton_queue_s.map(|s| s * 1e3),
    }
}

/// A level flagged for its queue share.
fn queue_line(r: &Reading, share: f64) -> String {
    let l = label(r.level);
    match r.engine {
        None => format!(
            "{l}: queue is {:.0}% of server time (over 50%): tune batching/scheduling (batch slots, instances) or cap concurrency below this level",
            share * 100.0
        ),
        Some((kind, _)) => {
            let triton = match (kind, r.level.server.as_ref().and_then(|d| d.queue_share)) {
                (ServerKind::TrtLlm, Some(t)) => format!(
                    ", while Triton's own queue counter says {:.0}%: the queue is inside the engine",
                    t * 100.0
                ),
                _ => String::new(),
            };
            let waiting = r
                .level
                .engine
                .as_ref()
                .and_then(|e| Some((e.waiting?, e.slots)))
                .map_or(String::new(), |(w, slots)| {
                    let of = slots.map_or(String::new(), |n| format!(" for {n} slots"));
                    format!(" ({:.1} requests waiting on average{of})", w.avg)
                });
            let fix = if kind == ServerKind::LlamaCpp {
                "start llama-server with more --parallel slots (each gets --ctx-size / --parallel tokens of context)"
            } else {
                "add batch slots or KV-cache memory"
            };
            format!(
                "{l}: the {} is {:.0}% of server time (over 50%){waiting}{triton} — {fix}, or cap concurrency below this level",
                r.queue_noun(),
                share * 100.0
            )
        }
    }
}

/// `KV cache 97% full at peak, 12 preemptions`, for a level under KV pressure.
fn kv_note(l: &LevelSummary) -> Option<String> {
    let e = l.engine.as_ref()?;
    let peak = e.kv_usage.map(|g| g.max).filter(|&m| m >= KV_PRESSURE);
    let preempted = e.preemptions.filter(|&p| p > 0.0);
    let parts: Vec<String> = peak
        .map(|m| format!("KV cache {:.0}% full at peak", m * 100.0))
        .into_iter()
        .chain(preempted.map(|p| super::text::count(p.round() as u64, "preemption")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// One line naming every level under KV pressure.
fn kv_lines(levels: &[LevelSummary], v: &mut Verdict) {
    let hit: Vec<(&LevelSummary, String)> = levels
        .iter()
        .filter_map(|l| Some((l, kv_note(l)?)))
        .collect();
    let Some((first, _)) = hit.first() else {
        return;
    };
    v.kv_pressure = hit.iter().map(|(l, _)| l.stimulus.name()).collect();
    let each: Vec<String> = hit
        .iter()
        .map(|(l, n)| format!("{} {n}", super::text::load_text(l.stimulus.value())))
        .collect();
    v.lines.push(format!(
        "KV-cache pressure from {} on ({}): the batch is limited by KV-cache memory, not batch slots{} — give the engine more KV memory (a shorter max context, a quantized KV cache, more GPUs) or cap concurrency below {}",
        label(first),
        each.join("; "),
        if hit.iter().any(|(l, _)| l.engine.as_ref().and_then(|e| e.preemptions).is_some_and(|p| p > 0.0)) {
            ", and preempted requests recompute their prompts"
        } else {
            ""
        },
        label(first)
    ));
}

/// What explains the knee at level `knee`: the step beyond it, and KV pressure there.
fn knee_cause(with: &[Reading], v: &Verdict, knee: &str) -> Option<String> {
    let s = v.steps.iter().find(|s| s.from == knee)?;
    let upper = with.iter().find(|r| r.level.stimulus.name() == s.to)?;
    let lower = with.iter().find(|r| r.level.stimulus.name() == knee)?;
    let why = match s.bottleneck {
        Bottleneck::Queueing => format!(
            "the {} takes the extra load ({:.1} → {:.1} ms per request)",
            upper.queue_noun(),
            lower.queue,
            upper.queue
        ),
        Bottleneck::Prefill => "prefill slows down".to_string(),
        Bottleneck::Decode => "decode slows down with the batch size".to_string(),
        Bottleneck::Compute => "the server's compute time grows".to_string(),
        Bottleneck::Unchanged => return None,
    };
    let kv = kv_note(upper.level).map_or(String::new(), |k| format!(", with {k}"));
    Some(format!("{why}{kv}"))
}

/// The share of what clients wait that Triton's statistics (not an engine's split) cover, on
/// average, when they cover only a small part of it at every level.
fn triton_partial(with: &[Reading]) -> Option<f64> {
    let covered = coverage(with);
    let partial = with.iter().all(|r| r.engine.is_none())
        && !covered.is_empty()
        && covered.iter().all(|c| *c < PARTIAL_COVERAGE);
    partial.then(|| covered.iter().sum::<f64>() / covered.len() as f64)
}

/// Server time over client latency, per level read from Triton's statistics.
fn coverage(with: &[Reading]) -> Vec<f64> {
    // Triton times a decoupled model only while its execute call runs; when that covers a small
    // part of what clients wait, the queue share describes scheduling, not generation.
    with.iter()
        .filter(|r| r.engine.is_none())
        .filter_map(|r| {
            let client = r
                .level
                .stats
                .get(crate::metrics::Metric::RequestLatency)?
                .avg;
            let server = r.level.server.as_ref()?.avg_request_ms;
            (client > 0.0).then_some(server / client)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::server_metrics::ServerDelta;
    use crate::stats::LevelStats;

    /// A knee analysis that found the knee at `level` (its numbers are not what is tested).
    fn knee_at(levels: &[LevelSummary], level: &str) -> knee::Analysis {
        let at = levels
            .iter()
            .find(|l| l.stimulus.name() == level)
            .expect("the knee's level");
        knee::Analysis {
            min_gain: 0.1,
            throughput_metric: "output_token_throughput".into(),
            latency_metric: "time_to_first_token.p99".into(),
            knee: Some(knee::Knee {
                level: level.into(),
                value: at.stimulus.value(),
                throughput: 0.0,
                p99_ms: 0.0,
                max_gain_beyond: 0.0,
                max_p99_beyond_ms: 0.0,
            }),
            recommendation: format!("knee at concurrency {}: ...", at.stimulus.value()),
        }
    }

    fn level(c: u32, queue: Option<f64>, compute: f64) -> LevelSummary {
        LevelSummary {
            server: queue.map(|q| ServerDelta {
                requests: 10,
                executions: 10,
                queue_share: Some(q / (q + compute)),
                ..ServerDelta::from_phase_avgs(q, 0.0, compute, 0.0)
            }),
            ..LevelSummary::new(
                Stimulus::Concurrency(c),
                LevelStats {
                    request_count: 1,
                    duration_s: 1.0,
                    ..Default::default()
                },
            )
        }
    }

    /// Only a part that grew is a bottleneck: a queue that grew by nothing while compute
    /// shrank is no change of the server's, and a queue that grew beats compute that fell.
    #[test]
    fn a_part_that_did_not_grow_is_no_bottleneck() {
        let cases = [
            ((0.02, 40.0), (0.04, 39.9), Bottleneck::Unchanged),
            ((2.0, 40.0), (9.0, 30.0), Bottleneck::Queueing),
            ((2.0, 40.0), (2.0, 41.0), Bottleneck::Compute),
            ((2.0, 40.0), (3.0, 41.0), Bottleneck::Compute),
        ];
        for ((q0, c0), (q1, c1), want) in cases {
            let (a, b) = (level(1, Some(q0), c0), level(2, Some(q1), c1));
            let s = step(&Reading::of(&a).unwrap(), &Reading::of(&b).unwrap());
            assert_eq!(s.bottleneck, want, "{q0}/{c0} -> {q1}/{c1}");
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
            "concurrency 1 → 4: queue +6.0 ms, compute +20.0 ms — compute time grew at least as fast as queue time: the model's execution is the bottleneck"
        );
        // Found by a new user: the explanation said again word for word on every step.
        assert_eq!(
            v.lines[1..4],
            [
                "concurrency 4 → 8: queue +17.0 ms, compute +10.0 ms — queue time grew faster than compute: scheduling/queueing is the bottleneck",
                "concurrency 8 → 16: queue +55.0 ms, compute +20.0 ms — as above: queueing is the bottleneck",
                "concurrency 16 → 32: queue +110.0 ms, compute +10.0 ms — as above: queueing is the bottleneck",
            ]
        );
        // Found by a new user: the note ended every compute step's line, one per level.
        assert_eq!(v.lines[4], TRITON_COMPUTE_NOTE);
        assert_eq!(
            v.lines
                .iter()
                .filter(|l| l.contains("spans the whole generation"))
                .count(),
            1
        );
        assert_eq!(
            v.lines[5],
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

    /// A level with an engine view: `waiting` requests on average over a 10 s window in which
    /// 100 finished, Triton's queue (if any) and compute per request, KV usage peak, preemptions.
    fn engine_level(
        c: u32,
        kind: ServerKind,
        waiting: f64,
        split: (Option<f64>, f64),
        kv_peak: f64,
        preemptions: f64,
    ) -> LevelSummary {
        use crate::server_metrics::level::{EngineLevelView, GaugeStats};
        let (queue_s, after_s) = split;
        let g = |avg: f64, max: f64| {
            Some(GaugeStats {
                avg,
                max,
                samples: 10,
            })
        };
        let mut l = level(c, None, 0.0);
        let trt = kind == ServerKind::TrtLlm;
        if trt {
            // Triton sees no queue; its compute time holds the executor's queue.
            let compute = waiting * 10.0 / 100.0 * 1e3 + after_s * 1e3;
            l.server = level(c, Some(0.0), compute).server;
        }
        l.engine = Some(EngineLevelView {
            waiting: g(waiting, waiting * 2.0),
            running: g(8.0, 8.0),
            kv_usage: g(kv_peak * 0.8, kv_peak),
            preemptions: Some(preemptions),
            requests: Some(100.0),
            avg_queue_s: queue_s,
            avg_triton_queue_s: trt.then_some(0.0),
            avg_prefill_s: (!trt).then_some(after_s * 0.2),
            avg_decode_s: (!trt).then_some(after_s * 0.8),
            avg_inference_s: trt.then(|| waiting * 10.0 / 100.0 + after_s),
            window_s: Some(10.0),
            ..EngineLevelView::empty(kind)
        });
        l
    }

    #[test]
    fn trtllm_queue_is_named_where_triton_sees_none() {
        let levels = [
            engine_level(4, ServerKind::TrtLlm, 0.0, (None, 0.5), 0.3, 0.0),
            engine_level(8, ServerKind::TrtLlm, 0.2, (None, 0.6), 0.5, 0.0),
            engine_level(16, ServerKind::TrtLlm, 12.0, (None, 0.7), 0.6, 0.0),
        ];
        // Triton's own counters alone read the same sweep as compute-bound.
        let triton_only: Vec<LevelSummary> = levels
            .iter()
            .map(|l| LevelSummary {
                engine: None,
                ..l.clone()
            })
            .collect();
        let blind = verdict(&triton_only);
        assert!(
            blind
                .steps
                .iter()
                .all(|s| s.bottleneck == Bottleneck::Compute),
            "{blind:?}"
        );
        assert!(blind.queue_dominated.is_empty());
        let mut knee = knee_at(&levels, "concurrency8");
        let v = with_knee(&levels, &mut knee);
        assert_eq!(
            v.steps.iter().map(|s| s.bottleneck).collect::<Vec<_>>(),
            [Bottleneck::Compute, Bottleneck::Queueing]
        );
        assert_eq!(v.steps[1].source, ServerKind::TrtLlm);
        assert_eq!(v.queue_dominated, ["concurrency16"]);
        assert_eq!(
            v.lines[1],
            "concurrency 8 → 16: TensorRT-LLM queue (estimated from its waiting requests) +1180.0 ms, generation +100.0 ms, Triton's own queue +0.0 ms — the TensorRT-LLM executor's waiting queue grew most: queueing inside the engine is the bottleneck, where Triton's own queue counter does not look"
        );
        assert_eq!(
            v.lines[2],
            "concurrency 16: the TensorRT-LLM queue (estimated from its waiting requests) is 63% of server time (over 50%) (12.0 requests waiting on average), while Triton's own queue counter says 0%: the queue is inside the engine — add batch slots or KV-cache memory, or cap concurrency below this level"
        );
        // One knee line: where, and (from the server's view) why.
        assert!(!v.lines.iter().any(|l| l.contains("knee")), "{:?}", v.lines);
        assert_eq!(
            knee.recommendation,
            "knee at concurrency 8: ..., as the TensorRT-LLM queue (estimated from its waiting requests) takes the extra load (20.0 → 1200.0 ms per request)"
        );
        // The SLO metric reads the engine's queue.
        use crate::metrics::{MetricRef, MetricSource, SystemMetric};
        let share = levels[2].metric(MetricRef::System(SystemMetric::QueueShare));
        assert!((share.unwrap() - 1.2 / 1.9).abs() < 1e-9, "{share:?}");
        assert_eq!(
            triton_only[2].metric(MetricRef::System(SystemMetric::QueueShare)),
            Some(0.0)
        );
    }

    #[test]
    fn vllm_split_names_decode_then_kv_pressure_and_preemptions() {
        let levels = [
            engine_level(8, ServerKind::Vllm, 0.0, (Some(0.001), 1.0), 0.5, 0.0),
            engine_level(16, ServerKind::Vllm, 0.0, (Some(0.002), 1.5), 0.8, 0.0),
            engine_level(32, ServerKind::Vllm, 6.0, (Some(2.0), 1.6), 0.99, 7.0),
        ];
        let mut knee = knee_at(&levels, "concurrency16");
        let v = with_knee(&levels, &mut knee);
        let b: Vec<Bottleneck> = v.steps.iter().map(|s| s.bottleneck).collect();
        assert_eq!(b, [Bottleneck::Decode, Bottleneck::Queueing]);
        assert_eq!(
            v.lines[0],
            "concurrency 8 → 16: vLLM queue +1.0 ms, prefill +100.0 ms, decode +400.0 ms — decode grew most: each request generates more slowly as the batch grows, so decode is the bottleneck, not waiting"
        );
        assert!(
            v.lines[1].ends_with(
                "so queueing is the bottleneck (KV cache 99% full at peak, 7 preemptions)"
            ),
            "{}",
            v.lines[1]
        );
        assert_eq!(v.kv_pressure, ["concurrency32"]);
        assert!(
            v.lines.iter().any(|l| l.starts_with(
                "KV-cache pressure from concurrency 32 on (32 KV cache 99% full at peak, 7 preemptions): the batch is limited by KV-cache memory"
            )),
            "{:?}",
            v.lines
        );
        assert_eq!(
            knee.recommendation,
            "knee at concurrency 16: ..., as the vLLM queue takes the extra load (2.0 → 2000.0 ms per request), with KV cache 99% full at peak, 7 preemptions"
        );
        use crate::metrics::{MetricRef, MetricSource, SystemMetric};
        assert_eq!(
            levels[2].metric(MetricRef::System(SystemMetric::KvCacheUsage)),
            Some(0.99)
        );
        assert_eq!(
            levels[2].metric(MetricRef::System(SystemMetric::Preemptions)),
            Some(7.0)
        );
        assert_eq!(
            level(1, Some(1.0), 2.0).metric(MetricRef::System(SystemMetric::KvCacheUsage)),
            None
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

    /// A llama.cpp level of `c` clients over 10 s: `deferred` requests waiting for one of 4
    /// slots on average while the client finished 100, prefill (the responses' timings) and
    /// decode per request in seconds.
    fn llamacpp_level(c: u32, deferred: f64, prefill_s: f64, decode_s: f64) -> LevelSummary {
        use crate::server_metrics::level::{EngineLevelView, GaugeStats};
        let mut l = level(c, None, 0.0);
        let g = |avg: f64| {
            Some(GaugeStats {
                avg,
                max: avg.ceil(),
                samples: 20,
            })
        };
        l.engine = Some(
            EngineLevelView {
                waiting: g(deferred),
                running: g(f64::from(c.min(4))),
                decode_total_s: Some(decode_s * 100.0),
                window_s: Some(10.0),
                ..EngineLevelView::empty(ServerKind::LlamaCpp)
            }
            .with_slots(Some(4))
            .with_client_requests(100, Some(prefill_s)),
        );
        l
    }

    #[test]
    fn llamacpp_queue_is_its_deferred_requests_and_what_it_cannot_tell_is_said() {
        let levels = [
            llamacpp_level(2, 0.0, 0.010, 0.300),
            llamacpp_level(4, 0.0, 0.012, 0.400),
            llamacpp_level(16, 12.0, 0.012, 0.420),
        ];
        let v = verdict(&levels);
        assert_eq!(
            v.steps.iter().map(|s| s.bottleneck).collect::<Vec<_>>(),
            [Bottleneck::Decode, Bottleneck::Queueing]
        );
        assert_eq!(
            v.lines[0],
            "concurrency 2 → 4: llama.cpp queue (estimated from its deferred requests) +0.0 ms, prefill +2.0 ms, decode +100.0 ms — decode grew most: each request generates more slowly as the batch grows, so decode is the bottleneck, not waiting"
        );
        assert_eq!(
            v.lines[1],
            "concurrency 4 → 16: llama.cpp queue (estimated from its deferred requests) +1200.0 ms, prefill +0.0 ms, decode +20.0 ms — time waiting for a free llama.cpp slot grew most: every slot is busy, so queueing is the bottleneck"
        );
        assert_eq!(v.lines[2], LLAMACPP_NOTE);
        assert_eq!(v.queue_dominated, ["concurrency16"]);
        assert_eq!(
            v.lines[3],
            "concurrency 16: the llama.cpp queue (estimated from its deferred requests) is 74% of server time (over 50%) (12.0 requests waiting on average for 4 slots) — start llama-server with more --parallel slots (each gets --ctx-size / --parallel tokens of context), or cap concurrency below this level"
        );
    }
}
