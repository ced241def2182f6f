//! What a load level is: its stimulus (closed-loop concurrency, an open-loop request rate, or a
//! trace's own schedule) and the rule that ends its measurement.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use super::pacer::Arrival;
use super::shard::Shard;

/// One load level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
    /// Open loop on a trace's own timestamps (`--fixed-schedule`): dataset entry `i` is sent at
    /// its timestamp divided by `speedup`, each entry once.
    FixedSchedule {
        /// Timestamps are divided by this (`--fixed-schedule-speedup`; 2 replays twice as fast).
        speedup: f64,
        /// Requests in flight at most; beyond it sends leave late.
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
            // One level per run: the speed-up is in the plan, not in the name.
            Stimulus::FixedSchedule { .. } => "fixed_schedule".to_string(),
        }
    }

    /// The stimulus' kind, as a column title.
    pub fn kind(&self) -> &'static str {
        match self {
            Stimulus::Concurrency(_) => "concurrency",
            Stimulus::RequestRate { .. } => "request_rate",
            Stimulus::FixedSchedule { .. } => "fixed_schedule",
        }
    }

    /// The value, as a number (a fixed schedule's speed-up).
    pub fn value(&self) -> f64 {
        match self {
            Stimulus::Concurrency(n) => f64::from(*n),
            Stimulus::RequestRate { rate, .. } => *rate,
            Stimulus::FixedSchedule { speedup, .. } => *speedup,
        }
    }

    /// Requests in flight at most.
    pub fn workers(&self) -> usize {
        match self {
            Stimulus::Concurrency(n) => *n as usize,
            Stimulus::RequestRate { max_inflight, .. }
            | Stimulus::FixedSchedule { max_inflight, .. } => *max_inflight as usize,
        }
    }

    /// Whether requests follow a schedule (send lag and intended-time latencies are meaningful).
    pub fn open_loop(&self) -> bool {
        !matches!(self, Stimulus::Concurrency(_))
    }

    /// Whether the schedule is the dataset's own (a trace's timestamps): each entry is sent
    /// once, at its time, starting from the first.
    pub fn replays_schedule(&self) -> bool {
        matches!(self, Stimulus::FixedSchedule { .. })
    }

    /// This shard's part of the level, `None` when it gets no load. Closed loop: the workers
    /// split, the first shards taking one more when they do not divide evenly (concurrency 3
    /// over 4 shards: 1, 1, 1, 0). Open loop: the rate divided by the count — each shard sends
    /// every count-th request of the whole schedule ([`super::pacer::Pacer::for_shard`]), so
    /// their union is the asked schedule — and the in-flight cap split (at least 1 each).
    pub fn for_shard(&self, shard: Shard) -> Option<Stimulus> {
        if shard.is_whole() {
            return Some(*self);
        }
        match *self {
            Stimulus::Concurrency(n) => match shard.share(u64::from(n)) {
                0 => None,
                k => Some(Stimulus::Concurrency(k as u32)),
            },
            Stimulus::RequestRate {
                rate,
                arrival,
                max_inflight,
            } => Some(Stimulus::RequestRate {
                rate: rate / f64::from(shard.count),
                arrival,
                max_inflight: shard.share(u64::from(max_inflight)).max(1) as u32,
            }),
            // Each shard replays its part of the trace's rows at their own times
            // (`Dataset::partition` keeps each entry's time), so their union is the trace.
            Stimulus::FixedSchedule {
                speedup,
                max_inflight,
            } => Some(Stimulus::FixedSchedule {
                speedup,
                max_inflight: shard.share(u64::from(max_inflight)).max(1) as u32,
            }),
        }
    }
}

/// When a level's measurement ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelLength {
    /// After this many measured requests.
    Requests(u64),
    /// Requests sent within this window are measured; then sending stops and in-flight
    /// requests finish.
    Window(#[serde(with = "duration_ms")] Duration),
    /// Whichever comes first: this many requests sent, or the window over (requests sent
    /// within it finish and are measured). The default: enough requests for a p99 where the
    /// server answers fast, a bounded wait where it does not.
    RequestsOrTime {
        /// Requests sent at most.
        requests: u64,
        /// Sending stops when this is over.
        #[serde(with = "duration_ms")]
        time: Duration,
    },
}

/// Requests a level measures by default: enough for a p99 (one request in a hundred beyond it).
pub const DEFAULT_LEVEL_REQUESTS: u64 = 100;

/// How long a level sends by default when the server answers too slowly for
/// [`DEFAULT_LEVEL_REQUESTS`]: a six-level ladder (1 to 32) takes under three minutes.
pub const DEFAULT_LEVEL_TIME: Duration = Duration::from_secs(25);

impl LevelLength {
    /// This shard's part: request counts split like workers (the first shards take the
    /// remainder; a part may be 0), time windows unchanged — shards run at the same time, so
    /// each measures the whole window and their union is the window's load.
    pub fn for_shard(&self, shard: Shard) -> LevelLength {
        match *self {
            LevelLength::Requests(n) => LevelLength::Requests(shard.share(n)),
            LevelLength::Window(d) => LevelLength::Window(d),
            LevelLength::RequestsOrTime { requests, time } => LevelLength::RequestsOrTime {
                requests: shard.share(requests),
                time,
            },
        }
    }

    /// Whether this stop sends nothing (a shard's part of a count smaller than the shards).
    pub fn is_empty(&self) -> bool {
        self.requests() == Some(0)
    }

    /// The most requests sent, when a count bounds the level.
    pub fn requests(&self) -> Option<u64> {
        match *self {
            LevelLength::Requests(n) | LevelLength::RequestsOrTime { requests: n, .. } => Some(n),
            LevelLength::Window(_) => None,
        }
    }

    /// How long the level sends at most, when a time bounds it.
    pub fn time(&self) -> Option<Duration> {
        match *self {
            LevelLength::Window(d) | LevelLength::RequestsOrTime { time: d, .. } => Some(d),
            LevelLength::Requests(_) => None,
        }
    }
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
pub enum LevelLengthRule {
    /// The same rule for every level.
    Fixed(LevelLength),
    /// The default: [`DEFAULT_LEVEL_REQUESTS`] requests (or 2 × concurrency, when more), or
    /// [`DEFAULT_LEVEL_TIME`], whichever comes first.
    Auto,
}

impl LevelLengthRule {
    /// The stop rule for one level.
    pub fn for_level(&self, s: &Stimulus) -> LevelLength {
        match self {
            LevelLengthRule::Fixed(stop) => *stop,
            // GenAI-Perf's default, max(10, 2 × concurrency), measures too few for the p99 it
            // prints: every level of the headline ladder was not trustworthy by its own rule.
            LevelLengthRule::Auto => match s {
                Stimulus::Concurrency(n) => LevelLength::RequestsOrTime {
                    requests: (2 * u64::from(*n)).max(DEFAULT_LEVEL_REQUESTS),
                    time: DEFAULT_LEVEL_TIME,
                },
                Stimulus::RequestRate { .. } => LevelLength::RequestsOrTime {
                    requests: DEFAULT_LEVEL_REQUESTS,
                    time: DEFAULT_LEVEL_TIME,
                },
                // The whole trace: the schedule ends the level.
                Stimulus::FixedSchedule { .. } => LevelLength::Requests(u64::MAX),
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
    /// Windows closed at each look of a sequential stop rule (and every [`LOOK_TICK`] between
    /// looks, so the rule also sees time pass).
    Looks(Looks),
}

/// Between two looks, a window still closes this often.
pub const LOOK_TICK: Duration = Duration::from_millis(500);

/// Successful requests before a sequential rule's first look.
pub const FIRST_LOOK: u64 = 20;
/// Each look after the first comes when the count has grown by this factor.
pub const LOOK_GROWTH: f64 = 1.25;

/// When a level under a sequential stop rule is looked at: after `first` successful requests,
/// then each time the count has grown by [`LOOK_GROWTH`], and at `cap` (the last look).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Looks {
    /// Successful requests at the first look.
    pub first: u64,
    /// The most requests the level sends; the last look.
    pub cap: u64,
}

impl Looks {
    /// Looks up to `cap` requests.
    pub fn new(cap: u64) -> Looks {
        let cap = cap.max(1);
        Looks {
            first: FIRST_LOOK.min(cap),
            cap,
        }
    }

    /// The successful-request counts of the scheduled looks, rising, ending at the cap.
    pub fn schedule(&self) -> Vec<u64> {
        let mut out = vec![self.first];
        let mut n = self.first;
        while n < self.cap {
            n = ((n as f64 * LOOK_GROWTH).ceil() as u64)
                .max(n + 1)
                .min(self.cap);
            out.push(n);
        }
        out
    }

    /// The first scheduled look at or after `n` successful requests (`None` past the cap).
    pub fn at_or_after(&self, n: u64) -> Option<u64> {
        self.schedule().into_iter().find(|&l| l >= n)
    }

    /// `J`: the scheduled looks plus one for a level that ends between them.
    pub fn count(&self) -> u32 {
        self.schedule().len() as u32 + 1
    }
}

impl WindowRule {
    /// Whether the level runs perf_analyzer's stability loop (else: one window).
    pub fn stabilizes(&self) -> bool {
        matches!(self, WindowRule::Time(_) | WindowRule::Count(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_stops_split_across_shards() {
        let s = |index| Shard { index, count: 4 };
        let parts: Vec<Option<Stimulus>> = (0..4)
            .map(|i| Stimulus::Concurrency(6).for_shard(s(i)))
            .collect();
        assert_eq!(
            parts,
            [Some(2), Some(2), Some(1), Some(1)].map(|c| c.map(Stimulus::Concurrency))
        );
        assert_eq!(Stimulus::Concurrency(3).for_shard(s(3)), None);
        let rate = Stimulus::RequestRate {
            rate: 10.0,
            arrival: Arrival::Poisson,
            max_inflight: 6,
        };
        assert_eq!(
            rate.for_shard(s(3)),
            Some(Stimulus::RequestRate {
                rate: 2.5,
                arrival: Arrival::Poisson,
                max_inflight: 1
            })
        );
        assert_eq!(rate.for_shard(Shard::WHOLE), Some(rate));
        assert_eq!(
            LevelLength::Requests(10).for_shard(s(0)),
            LevelLength::Requests(3)
        );
        assert!(LevelLength::Requests(3).for_shard(s(3)).is_empty());
        let w = LevelLength::Window(Duration::from_secs(5));
        assert_eq!(w.for_shard(s(2)), w);
    }
}
