//! What a search will cost, said before it spends it: the fewest requests with which each
//! objective can be shown to hold at the asked confidence (printed before the first probe), and
//! after the first probe an estimate of the search's time from that probe's rate.

use super::Probe;
use super::bisect::Order;
use crate::analysis::sequential::Rule;
use crate::analysis::text::{count, duration, load_text};
use crate::artifact::search::{CostDoc, ObjectiveCostDoc};
use crate::metrics::trim_num;
use crate::plan::search::SearchPlan;

/// Requests a probe well past the capacity typically takes to fail (two first looks).
const FAILING_PROBE_REQUESTS: f64 = 40.0;

/// The search's time as estimated after its first probe.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The first probe's successful requests per second.
    pub rate: f64,
    /// The whole search's time (s), when the order can bound its probes.
    pub seconds: Option<f64>,
    /// The estimate in words.
    pub line: String,
}

/// What the search will do, once at the start.
pub fn intro(plan: &SearchPlan) -> String {
    let r = &plan.rule;
    let order = if plan.max_given {
        format!("the first probe at {}, then down", load_text(plan.max))
    } else {
        "climbing with scouts".to_string()
    };
    format!(
        "search: the highest {} meeting {}, from {} up to {} ({order}), at {} % confidence, at most {} per probe{}{}",
        plan.axis.key().replace('_', " "),
        r.objectives
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" and "),
        load_text(plan.min),
        load_text(plan.max),
        trim_num(r.confidence * 100.0),
        count(r.looks.cap, "request"),
        r.max_time
            .map_or(String::new(), |d| format!(" or {:.0} s", d.as_secs_f64())),
        plan.max_time.map_or(String::new(), |d| format!(
            ", the whole search at most {} (--max-time)",
            duration(d.as_secs_f64())
        ))
    )
}

/// `cost: a probe shows time_to_first_token.p99<=300ms met after at least 454 successful
/// requests ...`, one line per objective with an interval.
pub fn needs(rule: &Rule) -> Vec<String> {
    rule.objectives
        .iter()
        .zip(&rule.boundaries)
        .filter_map(|(slo, b)| {
            let b = b.as_ref()?;
            let meets = b.fewest_to_meet().map_or("never within the cap".to_string(), |n| {
                format!("after at least {}", count(n, "successful request"))
            });
            let fails = (b.first..=b.cap)
                .find(|&n| b.fails_from(n).is_some())
                .map_or(String::new(), |n| {
                    format!("; one clearly past it can fail after {n}")
                });
            Some(format!(
                "cost: a probe shows {slo} met {meets} at {} % confidence (per look: {} % meets, {} % fails){fails}",
                trim_num(rule.confidence * 100.0),
                trim_num((b.meets_level * 1e4).round() / 100.0),
                trim_num((b.fails_level * 1e4).round() / 100.0),
            ))
        })
        .collect()
}

/// The fewest requests a meets proof needs: the most any objective needs.
fn proof_requests(rule: &Rule) -> Option<u64> {
    rule.boundaries
        .iter()
        .flatten()
        .filter_map(|b| b.fewest_to_meet())
        .max()
}

/// The estimate after the first probe, from its rate: the remaining probes (at most what the
/// bisection needs), about half of them meets proofs, the rest failing quickly. A search that
/// climbs has no bound on its probes yet: only a proof's time at the first probe's rate.
pub fn estimate(plan: &SearchPlan, order: &Order, first: &Probe) -> Option<Estimate> {
    let rate = first.level.summary.stats.request_throughput;
    let n = proof_requests(&plan.rule)? as f64;
    if rate.is_nan() || rate <= 0.0 {
        return None;
    }
    let proof_s = n / rate;
    let at = format!(
        "{} requests/s at {}",
        trim_num((rate * 100.0).round() / 100.0),
        first.level.summary.stimulus.name()
    );
    let (seconds, line) = match order.probes_left() {
        Some(left) => {
            let meets = f64::from(left.div_ceil(2));
            let fails = f64::from(left) - meets;
            let s =
                first.elapsed.as_secs_f64() + (meets * n + fails * FAILING_PROBE_REQUESTS) / rate;
            let line = format!(
                "estimate: about {} for the search (at most {} more, about half of them meets proofs of {} requests, at probe 1's {at}; lower loads run slower)",
                duration(s),
                count(u64::from(left), "probe"),
                n
            );
            (Some(s), line)
        }
        None => (
            None,
            format!(
                "estimate: a meets proof of {n} requests takes about {} at probe 1's {at} (higher loads run faster)",
                duration(proof_s)
            ),
        ),
    };
    Some(Estimate {
        rate,
        seconds,
        line,
    })
}

/// The cost section of `search.json`.
pub fn doc(rule: &Rule, estimate: Option<&Estimate>) -> CostDoc {
    CostDoc {
        objectives: rule
            .objectives
            .iter()
            .zip(&rule.boundaries)
            .filter_map(|(slo, b)| {
                let b = b.as_ref()?;
                Some(ObjectiveCostDoc {
                    objective: slo.to_string(),
                    fewest_requests_to_meet: b.fewest_to_meet(),
                    meets_level: b.meets_level,
                    fails_level: b.fails_level,
                })
            })
            .collect(),
        first_probe_rate: estimate.map(|e| e.rate),
        estimated_s: estimate.and_then(|e| e.seconds),
    }
}
