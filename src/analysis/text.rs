//! How numbers read in every output: load values and fixed decimals with a per-format gap marker.

/// A load value as people write it: `8` for a whole number, `7.5` otherwise. Table rows, the
/// verdict, the knee sentence and `summary.csv` all use it, so a level reads the same everywhere.
pub fn load_text(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// `v` with `digits` decimals, or `missing` when there is no finite value. Each output keeps its
/// own marker for a gap: `-` on the console, an empty CSV cell, `–` in HTML.
pub fn fixed_or(v: Option<f64>, digits: usize, missing: &str) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| missing.to_string(), |x| format!("{x:.digits$}"))
}
