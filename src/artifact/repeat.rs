//! The files of a `--repeat N` run beside its repetitions' own (`rep1/`, `rep2/`, ...).
//!
//! Each combined level directory holds GenAI-Perf's JSON and CSV with the median of every
//! statistic across the repetitions, and the JSON a `repetitions` block:
//!
//! ```text
//! "repetitions": {
//!   "count": 3,                       repetitions combined
//!   "statistic": "median",            what the level's numbers are
//!   "interval": "t95_mean",           what ci95_low/high are: a 95 % Student-t interval of the mean
//!   "dirs": ["rep1/...", ...],        each repetition's level directory, relative to this one
//!   "spread": {
//!     "time_to_first_token.p99": {"values": [612.1, 598.3, 640.9], "n": 3, "median": 612.1,
//!                                 "min": 598.3, "max": 640.9, "ci95_low": 564.5, "ci95_high": 669.7},
//!     "request_throughput": {...}, ...   keys: the metric names of --slo and --threshold
//!   }
//! }
//! ```
//!
//! `values` holds `null` where a repetition has no value. `summary.json` carries the same block
//! per level without `dirs`, and `repetitions.csv` (next to it, or in the level directory of a
//! single-level run) one row per level and number:
//! `level,metric,n,median,min,max,ci95_low,ci95_high,values` with the values `;`-separated in
//! repetition order (empty where missing).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::stats::repeat::MetricSpread;

/// The file with one row per level and number.
pub const REPETITIONS_CSV_FILE: &str = "repetitions.csv";

/// Header line of [`REPETITIONS_CSV_FILE`].
pub const CSV_HEADER: &str = "level,metric,n,median,min,max,ci95_low,ci95_high,values";

/// The `repetitions` block of a combined level's JSON; `dirs` relative to the level directory
/// (`None` in `summary.json`).
pub fn block(count: usize, dirs: Option<&[String]>, spreads: &[MetricSpread]) -> Value {
    let spread: serde_json::Map<String, Value> = spreads
        .iter()
        .map(|m| {
            let s = &m.spread;
            (
                m.metric.key(),
                // serde_json writes a missing (NaN) value as null.
                json!({
                    "values": m.values,
                    "n": s.n,
                    "median": s.median,
                    "min": s.min,
                    "max": s.max,
                    "ci95_low": s.ci95_low,
                    "ci95_high": s.ci95_high,
                }),
            )
        })
        .collect();
    let mut b = json!({
        "count": count,
        "statistic": "median",
        "interval": "t95_mean",
        "spread": spread,
    });
    if let (Some(d), Value::Object(m)) = (dirs, &mut b) {
        m.insert("dirs".into(), json!(d));
    }
    b
}

/// Adds each level's `repetitions` block (without `dirs`) to a sweep's `summary.json` document
/// (levels matched by `name`); nothing for a run without repetitions.
pub fn add_to_summary(doc: &mut Value, levels: &[(String, Vec<MetricSpread>)]) {
    let Some(rows) = doc.get_mut("levels").and_then(Value::as_array_mut) else {
        return;
    };
    for row in rows {
        let name = row.get("name").and_then(Value::as_str).unwrap_or("");
        if let Some((_, s)) = levels.iter().find(|(n, _)| n == name) {
            let count = s.first().map_or(0, |m| m.values.len());
            row["repetitions"] = block(count, None, s);
        }
    }
}

/// The text of [`REPETITIONS_CSV_FILE`] for `(level name, spreads)` pairs.
pub fn csv(levels: &[(String, Vec<MetricSpread>)]) -> String {
    let num = |v: f64| crate::analysis::text::fixed_or(Some(v), 4, "");
    let mut out = format!("{CSV_HEADER}\n");
    for (level, spreads) in levels {
        for m in spreads {
            let s = &m.spread;
            let values: Vec<String> = m.values.iter().map(|v| num(*v)).collect();
            out.push_str(&format!(
                "{level},{},{},{},{},{},{},{},{}\n",
                m.metric.key(),
                s.n,
                num(s.median),
                num(s.min),
                num(s.max),
                num(s.ci95_low),
                num(s.ci95_high),
                values.join(";")
            ));
        }
    }
    out
}

/// `path` moved into `rep{k}/` of its own directory: `out/x.csv` → `out/rep1/x.csv`.
pub fn in_repetition(path: &Path, k: u32) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new(""));
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    dir.join(format!("rep{k}")).join(name)
}

/// Where the spread of a perf `-f` file's repetitions goes (`perf --repeat`): `x.csv` → `x.repetitions.csv`.
pub fn sidecar(report_file: &Path) -> PathBuf {
    let stem = report_file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    report_file.with_file_name(format!("{stem}.repetitions.csv"))
}

/// How many repetitions a [`REPETITIONS_CSV_FILE`]-format text describes: the most `values`
/// on a row (0 for none).
pub fn repetition_count(text: &str) -> usize {
    text.lines()
        .skip(1)
        .filter_map(|l| l.rsplit(',').next())
        .map(|v| v.split(';').count())
        .max()
        .unwrap_or(0)
}

/// The repetitions' level directories a combined level's JSON names (relative to it); empty
/// for a level of a single run.
pub fn dirs(doc: &Value) -> Vec<String> {
    doc.pointer("/repetitions/dirs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|d| d.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Metric, MetricRef, Stat};
    use crate::stats::repeat::Spread;

    fn spread() -> MetricSpread {
        let values = vec![10.0, 12.0, f64::NAN];
        MetricSpread {
            metric: MetricRef::Dist(Metric::TimeToFirstToken, Stat::P99),
            spread: Spread::of(&values).unwrap(),
            values,
        }
    }

    #[test]
    fn repetition_paths() {
        assert_eq!(
            in_repetition(Path::new("out/x.csv"), 2),
            PathBuf::from("out/rep2/x.csv")
        );
        assert_eq!(
            in_repetition(Path::new("x.csv"), 1),
            PathBuf::from("rep1/x.csv")
        );
        assert_eq!(
            sidecar(Path::new("out/latency.csv")),
            PathBuf::from("out/latency.repetitions.csv")
        );
        assert_eq!(repetition_count("level,metric\nc1,x,3,1,1,1,1,1,1;2;\n"), 3);
        assert_eq!(repetition_count("level,metric\n"), 0);
    }

    #[test]
    fn csv_rows_exact() {
        let text = csv(&[("concurrency4".into(), vec![spread()])]);
        // n 2, mean 11, s √2, t(1) 12.706: 11 ± 12.706 × 1.
        assert_eq!(
            text,
            "level,metric,n,median,min,max,ci95_low,ci95_high,values\n\
             concurrency4,time_to_first_token.p99,2,11.0000,10.0000,12.0000,-1.7060,23.7060,10.0000;12.0000;\n"
        );
    }

    #[test]
    fn block_names_dirs_and_nulls() {
        let b = block(3, Some(&["rep1/x".to_string()]), &[spread()]);
        assert_eq!(b["count"], 3);
        assert_eq!(b["statistic"], "median");
        let s = &b["spread"]["time_to_first_token.p99"];
        assert_eq!(s["values"], json!([10.0, 12.0, null]));
        assert_eq!(
            (s["n"].as_u64(), s["median"].as_f64()),
            (Some(2), Some(11.0))
        );
        assert_eq!(
            dirs(&json!({ "repetitions": b })),
            vec!["rep1/x".to_string()]
        );
        assert!(block(3, None, &[]).get("dirs").is_none());
        assert!(dirs(&json!({})).is_empty());
    }
}
