//! How numbers read in every output: load values, fixed decimals with a per-format gap marker,
//! counts with their noun, and spans of time.

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

/// `n` and the noun, plural unless `n` is 1: `1 run`, `3 levels`, `0 requests`. The noun is
/// made plural by an `s` on its last word (every count shown names such a noun).
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A span of seconds as people say it: `45 s`, `12.5 min`, `3.2 h`.
pub fn duration(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.1} min", secs / 60.0)
    } else {
        format!("{:.1} h", secs / 3600.0)
    }
}

/// A share with its interval: `71.0% [62.4–78.3]`.
pub fn interval(v: f64, low: f64, high: f64) -> String {
    format!("{:.1}% [{:.1}–{:.1}]", v * 100.0, low * 100.0, high * 100.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations() {
        assert_eq!(super::duration(45.2), "45 s");
        assert_eq!(super::duration(750.0), "12.5 min");
        assert_eq!(super::duration(86_400.0), "24.0 h");
    }

    #[test]
    fn counts_with_plurals() {
        assert_eq!(super::count(1, "run"), "1 run");
        assert_eq!(super::count(0, "level"), "0 levels");
        assert_eq!(super::count(9, "failed request"), "9 failed requests");
    }
}
