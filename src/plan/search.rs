//! What a search was asked, resolved: the run it shares with `profile` (target, workload,
//! objectives, outputs), what it varies, its bounds and resolution, and the sequential rule
//! each probe measures under. Built once from `search`'s flags (`cli::search`) or directly by
//! tests.

use std::time::Duration;

use serde::Serialize;

use super::RunPlan;
use crate::analysis::sequential::Rule;
use crate::load::{Arrival, Stimulus};

/// Highest concurrency a search doubles to without `--max`.
pub const DEFAULT_MAX_CONCURRENCY: f64 = 4096.0;
/// Highest request rate a search doubles to without `--max` (requests/s).
pub const DEFAULT_MAX_RATE: f64 = 100_000.0;
/// Requests a probe measures at most, by default.
pub const DEFAULT_MAX_PROBE_REQUESTS: u64 = 1000;

/// What a search varies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "over")]
pub enum Axis {
    /// Closed-loop concurrency: whole numbers, one step apart at the end.
    Concurrency,
    /// Open-loop request rate (requests/s) with its arrival process and in-flight cap.
    RequestRate {
        /// Gap distribution.
        arrival: Arrival,
        /// Requests in flight at most.
        max_inflight: u32,
    },
}

impl Axis {
    /// The level at `load`.
    pub fn stimulus(&self, load: f64) -> Stimulus {
        match *self {
            Axis::Concurrency => Stimulus::Concurrency(load.round().max(1.0) as u32),
            Axis::RequestRate {
                arrival,
                max_inflight,
            } => Stimulus::RequestRate {
                rate: load,
                arrival,
                max_inflight,
            },
        }
    }

    /// `concurrency` or `request_rate`.
    pub fn key(&self) -> &'static str {
        match self {
            Axis::Concurrency => "concurrency",
            Axis::RequestRate { .. } => "request_rate",
        }
    }

    /// Whether loads are whole numbers.
    pub fn is_concurrency(&self) -> bool {
        matches!(self, Axis::Concurrency)
    }
}

/// A validated search.
#[derive(Debug, Clone, Serialize)]
pub struct SearchPlan {
    /// Target, workload, objectives (`slos`), outputs: what `profile` would run with.
    pub run: RunPlan,
    /// What is varied.
    pub axis: Axis,
    /// The lowest load, where the search starts.
    pub min: f64,
    /// The highest load it may try.
    pub max: f64,
    /// Whether `max` was given (else it is the axis' default ceiling).
    pub max_given: bool,
    /// A rate search stops when its bracket's upper end is within this share above the lower.
    pub resolution: f64,
    /// How each probe measures: its objectives, confidence, looks and caps.
    pub rule: Rule,
    /// The longest the whole search runs (`--max-time`): then it ends with the highest load
    /// proven so far.
    pub max_time: Option<Duration>,
}

impl SearchPlan {
    /// The probe cap in time, if any.
    pub fn max_probe_time(&self) -> Option<Duration> {
        self.rule.max_time
    }
}
