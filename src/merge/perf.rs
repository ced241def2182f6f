//! perf's outputs of a merged run: per level, perf_analyzer's numbers of the union (percentiles
//! from the summed histograms, throughput as the union's inferences over the reported windows'
//! length — the shards measured their windows together, so the longest shard's length), and
//! `perf.csv` in the output directory, the `-f` CSV one process running the whole plan writes.

use serde_json::Value;

use super::level::MergedLevel;
use crate::perf::PerfLevel;
use crate::perf::files::PerfSection;
use crate::perf::report::{self, CsvOptions};

/// The merged run's perf_analyzer CSV.
pub const PERF_CSV_FILE: &str = "perf.csv";

/// How the plan asked perf to report, from its recorded `input_config`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfView {
    /// `--percentile`.
    pub percentile: Option<u32>,
    /// `--verbose-csv`.
    pub verbose_csv: bool,
}

impl PerfView {
    /// Reads the settings from the plan's `input_config`.
    pub fn from_config(cfg: &Value) -> PerfView {
        PerfView {
            percentile: cfg["percentile"]
                .as_u64()
                .and_then(|p| u32::try_from(p).ok()),
            verbose_csv: cfg["verbose_csv"].as_bool().unwrap_or(false),
        }
    }
}

/// The shards' `perf` sections of one level combined: windows and length of the longest, stable
/// when every shard's reported windows were, the server's statistics from the shard the merged
/// level takes its server view from (`server_from`), else the first that has them.
pub fn combine(sections: &[(u32, PerfSection)], server_from: Option<u32>) -> Option<PerfSection> {
    let (_, first) = sections.first()?;
    let server = sections
        .iter()
        .find(|(i, s)| Some(*i) == server_from && s.server.is_some())
        .or_else(|| sections.iter().find(|(_, s)| s.server.is_some()))
        .and_then(|(_, s)| s.server.clone());
    Some(PerfSection {
        batch: first.batch,
        windows: sections.iter().map(|(_, s)| s.windows).max().unwrap_or(1),
        stable: sections.iter().all(|(_, s)| s.stable),
        window_secs: sections
            .iter()
            .map(|(_, s)| s.window_secs)
            .fold(0.0, f64::max),
        server,
    })
}

/// perf_analyzer's numbers of a merged level.
pub fn level(
    m: &MergedLevel,
    section: &PerfSection,
    view: PerfView,
    method: crate::metrics::PercentileMethod,
) -> PerfLevel {
    let mut l = PerfLevel::from_parts(&m.summary, &m.agg, section, view.percentile, method);
    l.slo = m.slo.clone();
    l
}

/// `perf.csv` of the merged levels.
pub fn csv(levels: &[PerfLevel], view: PerfView) -> String {
    report::csv(
        levels,
        CsvOptions {
            percentile: view.percentile,
            verbose: view.verbose_csv,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(windows: u32, stable: bool, secs: f64, server: bool) -> PerfSection {
        PerfSection {
            batch: 4,
            windows,
            stable,
            window_secs: secs,
            server: server.then(|| crate::perf::ServerView {
                inference_count: u64::from(windows),
                execution_count: 1,
                success_count: 1,
                avg_request_ns: 1.0,
                avg_queue_ns: 0.0,
                avg_compute_input_ns: 0.0,
                avg_compute_infer_ns: 1.0,
                avg_compute_output_ns: 0.0,
            }),
        }
    }

    #[test]
    fn sections_combine() {
        let c = combine(
            &[
                (0, section(3, true, 3.6, true)),
                (1, section(4, false, 3.7, true)),
                (2, section(3, true, 3.5, false)),
            ],
            Some(1),
        )
        .unwrap();
        assert_eq!((c.batch, c.windows, c.stable), (4, 4, false));
        assert_eq!(c.window_secs, 3.7);
        assert_eq!(c.server.unwrap().inference_count, 4, "shard 1's statistics");
        let c = combine(&[(0, section(3, true, 1.0, false))], Some(0)).unwrap();
        assert!(c.stable && c.server.is_none());
        assert_eq!(combine(&[], None), None);
        let v = PerfView::from_config(&serde_json::json!({"percentile": 95, "verbose_csv": true}));
        assert_eq!((v.percentile, v.verbose_csv), (Some(95), true));
        let v = PerfView::from_config(&serde_json::json!({"percentile": null}));
        assert_eq!((v.percentile, v.verbose_csv), (None, false));
    }
}
