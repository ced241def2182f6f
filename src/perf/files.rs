//! perf's level directories (`--artifact-dir`, and every shard's): the files `profile` writes
//! per level ([`crate::engine::files`]) plus a `perf` section in the level's JSON with what
//! perf_analyzer's numbers need beyond the histograms, so `merge` can write perf's CSV for the
//! union of the shards:
//!
//! ```text
//! "perf": {"batch": 1,            <- -b: inferences per request
//!          "windows": 3,          <- windows measured
//!          "stable": true,        <- the reported three agreed (perf_analyzer's rule)
//!          "window_secs": 3.6,    <- length of the reported windows (throughput's divisor)
//!          "server": {"inference_count": 120, "execution_count": 118, "success_count": 120,
//!                     "avg_request_ns": 1.2e6, "avg_queue_ns": 3.0e4,
//!                     "avg_compute_input_ns": 1.0e4, "avg_compute_infer_ns": 1.0e6,
//!                     "avg_compute_output_ns": 1.0e4}}   <- or null without statistics
//! ```

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ServerView;
use super::plan::PerfPlan;
use crate::load::Stimulus;

/// The `perf` section of a level's JSON: how its windows went and the server's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerfSection {
    /// Batch size (`-b`).
    pub batch: u32,
    /// Windows measured.
    pub windows: u32,
    /// Whether the reported windows met the stability rule.
    pub stable: bool,
    /// Seconds the reported windows cover.
    pub window_secs: f64,
    /// The server's statistics over the reported windows.
    pub server: Option<ServerView>,
}

impl PerfSection {
    /// The section as an entry of the level's JSON document: its key and value.
    pub fn entry(&self) -> (&'static str, Value) {
        (PERF_KEY, serde_json::to_value(self).unwrap_or_default())
    }

    /// The section of a measured level: how its windows went, the server's statistics over
    /// the reported ones.
    pub fn of(m: &crate::engine::Measured, batch: u32) -> PerfSection {
        let w = &m.windows;
        PerfSection {
            batch,
            windows: w.measured,
            stable: w.stable,
            window_secs: w.secs,
            server: w.stats.as_ref().map(|(a, b)| ServerView::between(a, b)),
        }
    }
}

/// The key of the section in the level JSON.
pub const PERF_KEY: &str = "perf";

/// The directory of the plan's level `whole`, with `--artifact-dir` (or under a shard).
pub fn level_dir(plan: &PerfPlan, whole: &Stimulus) -> Option<PathBuf> {
    plan.artifact_dir.as_ref().map(|d| d.join(whole.name()))
}

/// Reads the `perf` section of a level's JSON document, when it has one.
pub fn section(doc: &Value) -> Option<PerfSection> {
    serde_json::from_value(doc.get(PERF_KEY)?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_exact_json_and_round_trip() {
        let s = PerfSection {
            batch: 2,
            windows: 3,
            stable: false,
            window_secs: 3.6,
            server: Some(ServerView {
                inference_count: 240,
                execution_count: 118,
                success_count: 120,
                avg_request_ns: 1.5e6,
                avg_queue_ns: 3.0e4,
                avg_compute_input_ns: 1.0e4,
                avg_compute_infer_ns: 1.0e6,
                avg_compute_output_ns: 2.0e4,
            }),
        };
        let mut doc = serde_json::json!({"request_count": {"avg": 120}});
        let (key, value) = s.entry();
        doc[key] = value;
        assert_eq!(
            doc[PERF_KEY].to_string(),
            r#"{"batch":2,"windows":3,"stable":false,"window_secs":3.6,"server":{"inference_count":240,"execution_count":118,"success_count":120,"avg_request_ns":1500000.0,"avg_queue_ns":30000.0,"avg_compute_input_ns":10000.0,"avg_compute_infer_ns":1000000.0,"avg_compute_output_ns":20000.0}}"#
        );
        assert_eq!(section(&doc), Some(s));
        assert_eq!(section(&serde_json::json!({})), None);
    }
}
