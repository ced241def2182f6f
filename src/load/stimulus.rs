//! What a load level is: its stimulus (closed-loop concurrency or an open-loop request rate)
//! and the rule that ends its measurement.

use std::time::Duration;

use serde::Serialize;

pub use super::pacer::Arrival;

/// One load level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stimulus {
    /// Closed loop: keep N requests in flight.
    Concurrency(u32),
    /// Open loop: send on an absolute schedule of `rate` requests per second.
    RequestRate {
        /// Requests per second.
        rate: f64,
        /// Gap distribution.
        arrival: Arrival,
        /// Requests in flight at most (the worker pool); beyond it sends leave late.
        max_inflight: u32,
    },
}

impl Stimulus {
    /// GenAI-Perf's stimulus name (`concurrency8`).
    pub fn name(&self) -> String {
        match self {
            Stimulus::Concurrency(n) => format!("concurrency{n}"),
            // GenAI-Perf formats the rate as a float: `request_rate10.0`.
            Stimulus::RequestRate { rate, .. } => format!("request_rate{rate:?}"),
        }
    }

    /// The stimulus' kind, as a column title.
    pub fn kind(&self) -> &'static str {
        match self {
            Stimulus::Concurrency(_) => "concurrency",
            Stimulus::RequestRate { .. } => "request_rate",
        }
    }

    /// The value, as a number.
    pub fn value(&self) -> f64 {
        match self {
            Stimulus::Concurrency(n) => f64::from(*n),
            Stimulus::RequestRate { rate, .. } => *rate,
        }
    }

    /// Requests in flight at most.
    pub fn workers(&self) -> usize {
        match self {
            Stimulus::Concurrency(n) => *n as usize,
            Stimulus::RequestRate { max_inflight, .. } => *max_inflight as usize,
        }
    }

    /// Whether requests follow a schedule (send lag and intended-time latencies are meaningful).
    pub fn open_loop(&self) -> bool {
        matches!(self, Stimulus::RequestRate { .. })
    }
}

/// When a level's measurement ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After this many measured requests.
    Requests(u64),
    /// Requests sent within this window are measured; then sending stops and in-flight
    /// requests finish.
    Window(#[serde(with = "duration_ms")] Duration),
}

mod duration_ms {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
}

/// How the stop rule is chosen per level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopRule {
    /// The same rule for every level.
    Fixed(Stop),
    /// GenAI-Perf's default: max(10, 2 × concurrency) requests.
    Auto,
}

impl StopRule {
    /// The stop rule for one level.
    pub fn for_level(&self, s: &Stimulus) -> Stop {
        match self {
            StopRule::Fixed(stop) => *stop,
            // GenAI-Perf's default request count: max(10, 2 × concurrency); 10 for a rate.
            StopRule::Auto => match s {
                Stimulus::Concurrency(n) => Stop::Requests((2 * u64::from(*n)).max(10)),
                Stimulus::RequestRate { .. } => Stop::Requests(10),
            },
        }
    }
}

/// How a level's measurement windows are formed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowRule {
    /// perf_analyzer's time windows: each lasts 1.2 × `--measurement-interval`.
    Time(#[serde(with = "duration_ms")] Duration),
    /// Windows of this many completed requests.
    Count(u64),
    /// One window of exactly this many requests (`--request-count`).
    Requests(u64),
    /// One window of exactly this length (periodic concurrency, soak runs).
    Once(#[serde(with = "duration_ms")] Duration),
}

impl WindowRule {
    /// Whether the level runs perf_analyzer's stability loop (else: one window).
    pub fn stabilizes(&self) -> bool {
        matches!(self, WindowRule::Time(_) | WindowRule::Count(_))
    }
}
