//! A level under the sequential stop rule ([`super::Policy::Sequential`]): the collector's
//! windows are merged as they arrive; at each window the level's objectives (at each look its
//! margin of error) are judged on exactly the requests measured so far
//! ([`crate::analysis::sequential`]), and
//! at every window the saturation signals are read ([`crate::analysis::saturation`]). The first
//! settled decision, reached margin, saturation signal, time cap, request cap or Ctrl-C ends the
//! measurement; requests still in flight then finish and are recorded in `requests.jsonl`, but
//! the level's statistics are those the decision was made on.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc::UnboundedReceiver;

use super::collector::Window;
use crate::analysis::saturation::{self, Seen};
use crate::analysis::sequential::{self, Check, Decision, Moe, Rule, Settled, StopReason};
use crate::load::Interrupt;
use crate::metrics::{Metric, PercentileMethod};
use crate::record::Clock;
use crate::server_metrics::probe::QueueSeries;

/// Trend bins kept for the saturation signals; neighbours are merged beyond it.
const MAX_BINS: usize = 256;

/// What the rule reads besides the windows.
pub(super) struct Context<'a> {
    /// The rule.
    pub rule: &'a Rule,
    /// How percentiles are read.
    pub method: PercentileMethod,
    /// Ctrl-C.
    pub interrupt: &'a Interrupt,
    /// Requests the measurement has sent so far.
    pub sent: &'a AtomicU64,
    /// The run clock, and when the measurement started on it.
    pub clock: Clock,
    /// When the measurement started (ns on `clock`).
    pub measure_start_ns: u64,
    /// Whether the load is open loop (in-flight growth and send lateness are signals then).
    pub open_loop: bool,
    /// The server's queue gauge, when its metrics page is sampled.
    pub queue: Option<QueueSeries>,
}

/// The level so far.
#[derive(Default)]
struct State {
    merged: Option<Window>,
    bins: Vec<(f64, f64)>,
    in_flight: Vec<(f64, f64)>,
    done: u64,
    late_ms: Option<f64>,
    looks: u32,
    /// The latest judgement, and whether it covers every window absorbed.
    judged: Option<(Vec<Check>, Option<Moe>, Decision)>,
    current: bool,
    ttft: bool,
}

impl State {
    fn absorb(&mut self, w: Window, ctx: &Context<'_>) {
        let agg = &w.agg;
        self.done += agg.ok + agg.error_count() + agg.cancelled + agg.abandoned;
        self.ttft |= agg.dist(Metric::TimeToFirstToken).count() > 0;
        let lag = agg.dist(Metric::SendLag);
        if ctx.open_loop && lag.count() >= 5 {
            self.late_ms = Some(lag.percentile(50.0, ctx.method) / 1e6);
        }
        self.bins.extend_from_slice(&w.bins);
        if self.bins.len() > MAX_BINS {
            self.bins = self
                .bins
                .chunks(2)
                .map(|c| {
                    let n = c.len() as f64;
                    (
                        c.iter().map(|p| p.0).sum::<f64>() / n,
                        c.iter().map(|p| p.1).sum::<f64>() / n,
                    )
                })
                .collect();
        }
        if ctx.open_loop {
            let in_flight = ctx.sent.load(Ordering::Relaxed).saturating_sub(self.done);
            self.in_flight.push((elapsed_s(ctx), in_flight as f64));
            if self.in_flight.len() > MAX_BINS {
                self.in_flight = self.in_flight.iter().step_by(2).copied().collect();
            }
        }
        match &mut self.merged {
            Some(m) => {
                m.agg.merge(&w.agg);
                m.end_ns = m.end_ns.max(w.end_ns);
            }
            None => self.merged = Some(w),
        }
        self.current = false;
    }

    /// Judges the level on everything absorbed: one look.
    fn judge(&mut self, ctx: &Context<'_>) -> &(Vec<Check>, Option<Moe>, Decision) {
        self.looks += 1;
        self.current = true;
        let empty = crate::stats::Aggregate::new();
        let agg = self.merged.as_ref().map_or(&empty, |m| &m.agg);
        let checks: Vec<Check> = ctx
            .rule
            .objectives
            .iter()
            .zip(&ctx.rule.boundaries)
            .map(|(o, b)| sequential::check(o, agg, b.as_ref(), ctx.method))
            .collect();
        let moe = ctx
            .rule
            .moe
            .as_ref()
            .and_then(|t| sequential::moe(t, agg, ctx.rule.confidence, ctx.method));
        let decision = sequential::verdict(&checks);
        self.judged.insert((checks, moe, decision))
    }

    /// The saturation signals on what was seen so far.
    fn saturated(&self, ctx: &Context<'_>) -> Option<saturation::Signal> {
        let queue = ctx
            .queue
            .as_ref()
            .and_then(|q| q.lock().ok().map(|v| v.clone()))
            .unwrap_or_default();
        saturation::check(&Seen {
            elapsed_s: elapsed_s(ctx),
            latency: &self.bins,
            ttft: self.ttft,
            queue: &queue,
            in_flight: &self.in_flight,
            late_ms: self.late_ms,
        })
    }
}

fn elapsed_s(ctx: &Context<'_>) -> f64 {
    ctx.clock.now_ns().saturating_sub(ctx.measure_start_ns) as f64 / 1e9
}

/// Why the rule stops after a judgement, if it does.
fn stops(
    rule: &Rule,
    (_, moe, decision): &(Vec<Check>, Option<Moe>, Decision),
) -> Option<StopReason> {
    if !rule.objectives.is_empty() && *decision != Decision::Open {
        return Some(StopReason::Settled);
    }
    let reached = match (&rule.moe, moe) {
        (Some(t), Some(m)) => m.relative.is_some_and(|r| r <= t.target),
        _ => false,
    };
    reached.then_some(StopReason::MarginReached)
}

/// Sleeps until `at`, or forever without one.
async fn until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Runs the rule over the level's windows until it stops; returns how it ended and the merged
/// window the decision was made on.
pub(super) async fn settle(
    rx: &mut UnboundedReceiver<Window>,
    ctx: &Context<'_>,
) -> (Settled, Option<Window>) {
    let deadline = ctx.rule.max_time.map(|d| tokio::time::Instant::now() + d);
    let mut st = State::default();
    let stopped = loop {
        let w = tokio::select! {
            w = rx.recv() => w,
            _ = ctx.interrupt.wait_stop() => break StopReason::Interrupted,
            _ = until(deadline) => break StopReason::TimeCap,
        };
        let Some(w) = w else {
            break StopReason::RequestCap;
        };
        let (look, last) = (w.look, w.partial);
        st.absorb(w, ctx);
        // Saturation first: an open-loop level above capacity can look fine for its first
        // requests, before its queue has grown; its early numbers must not settle it.
        if let Some(signal) = st.saturated(ctx) {
            break StopReason::Saturated { signal };
        }
        // Objectives are judged at every window: their boundaries hold for a look after every
        // request ([`crate::stats::boundary`]). A margin of error only at the looks.
        if look || last || !ctx.rule.objectives.is_empty() {
            let judged = st.judge(ctx);
            if let Some(reason) = stops(ctx.rule, judged) {
                break reason;
            }
            if last {
                break StopReason::RequestCap;
            }
        }
    };
    if !st.current && st.merged.is_some() {
        // The level ended between looks: judged once more on what it measured (the `+1` look).
        st.judge(ctx);
    }
    let (checks, moe, decision) = st
        .judged
        .take()
        .unwrap_or((Vec::new(), None, Decision::Open));
    let settled = Settled {
        stopped,
        looks: st.looks,
        measured: st.merged.as_ref().map_or(0, |m| m.agg.ok),
        decision,
        checks,
        moe,
        moe_target: ctx.rule.moe.map(|t| sequential::MoeShown {
            metric: t.metric,
            target: t.target,
            confidence: ctx.rule.confidence,
        }),
        look_confidence: (!ctx.rule.objectives.is_empty()).then(|| ctx.rule.look_confidence()),
    };
    (settled, st.merged)
}
