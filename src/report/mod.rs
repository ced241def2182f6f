//! What a person sees: console tables and the sweep verdict; the HTML report builds on the same
//! summaries.

pub mod console;
pub mod html;
pub mod knee;
pub mod svg;
pub mod verdict;

use crate::stats::{LevelSummary, Metric, Stats};

/// A load value as people write it: `8` for a whole number, `7.5` otherwise. Table rows, the
/// verdict, the knee sentence and `summary.csv` all use it, so a level reads the same everywhere.
pub(crate) fn load_text(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// `v` with `digits` decimals, or `missing` when there is no finite value. Each output keeps its
/// own marker for a gap: `-` on the console, an empty CSV cell, `–` in HTML.
pub(crate) fn fixed_or(v: Option<f64>, digits: usize, missing: &str) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| missing.to_string(), |x| format!("{x:.digits$}"))
}

/// The statistics of `m` a level shows: none for a streaming-only metric (TTFT, ITL) of a level
/// run without `--streaming`. Unlike [`crate::slo::MetricSource::metric`] it does not drop
/// statistics that count no samples; callers that relied on that keep their own filter.
pub(crate) fn shown_stat(l: &LevelSummary, m: Metric) -> Option<&Stats> {
    l.stats
        .get(m)
        .filter(|_| l.streaming || !m.streaming_only())
}
