//! The one level engine every mode runs on. A [`Session`] is what a run prepared once — the
//! protocol client, the requests to send, the server probe — and [`measure_level`] measures one
//! load level under a [`Policy`] (a fixed stop, perf_analyzer's stability windows, or the
//! sequential rule that stops once the level's decision is settled), feeding
//! the level's [`Sinks`] (records file, timeline, raw export, the [`live`] view) from one
//! collector thread. Warm-up, the validity verdict and the server's view are done here once;
//! `profile`, `perf`, `doctor` and `demo` are front ends that choose levels and encode the
//! [`Measured`] results; `profile`, `perf` and `search` run their levels through one loop,
//! [`levels`]. How a run ends (exit codes, Ctrl-C) is in
//! [`outcome`] and [`signals`].

pub mod capacity;
pub mod collector;
pub mod files;
pub mod level;
pub mod levels;
pub mod live;
pub mod outcome;
pub mod repeat;
mod sequential;
pub mod session;
pub mod signals;
pub mod start;
pub mod streaming;

use std::sync::Arc;

pub use collector::{RecordsFile, Sinks};
pub use level::{LevelSpec, Measured, Pass, Policy, Stability, measure_level};

use crate::load::{LevelLength, PhaseSpec, Shared, Stimulus};
use crate::record::Phase;
use crate::server_metrics::ServerProbe;

/// What a run prepared once and every level shares.
pub struct Session {
    /// Client, requests, clock, stop signals.
    pub shared: Arc<Shared>,
    /// The server's own counters.
    pub probe: ServerProbe,
    /// Sequence number of the next request (dataset entries continue round-robin across phases
    /// and levels).
    pub seq: u64,
    /// Input-length bucket edges (`--isl-buckets` resolved on the whole dataset, so every
    /// shard cuts alike); empty when not asked for.
    pub isl_edges: Vec<u32>,
    /// A scored workload's run-wide parts: the reference outputs, the intervals' confidence.
    pub scoring: Option<Scoring>,
}

/// What the levels of a scored workload share.
#[derive(Debug, Clone)]
pub struct Scoring {
    /// Every prompt's first output, which later outputs are compared with (outputs are
    /// compared only when requests ask for temperature 0).
    pub references: Option<Arc<crate::stats::scored::References>>,
    /// The confidence of the accuracy intervals and the verdict (`--confidence`).
    pub confidence: f64,
    /// The accuracy of guessing, when the answers are options.
    pub chance: Option<f64>,
}

impl Session {
    /// A session over prepared shared state and a probe.
    pub fn new(shared: Shared, probe: ServerProbe) -> Session {
        Session {
            shared: Arc::new(shared),
            probe,
            seq: 0,
            isl_edges: Vec::new(),
            scoring: None,
        }
    }

    /// The next phase of this session: a phase of the plan's level `level`. A trace's schedule
    /// is replayed from its first row, so such a phase starts at the next sequence number that
    /// maps to dataset entry 0 (numbers stay unique and rising).
    fn phase(
        &mut self,
        phase: Phase,
        level: u32,
        stimulus: Stimulus,
        stop: LevelLength,
    ) -> PhaseSpec {
        if stimulus.replays_schedule() {
            let len = self.shared.dataset.len().max(1) as u64;
            self.seq = self.seq.next_multiple_of(len);
        }
        PhaseSpec {
            phase,
            stimulus,
            stop,
            seq_base: self.seq,
            stream: u64::from(level) * 2 + u64::from(phase == Phase::Measure),
        }
    }
}
