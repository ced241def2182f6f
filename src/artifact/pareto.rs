//! `pareto.csv`, next to a sweep's or a search's `summary.csv`: one row per level, the
//! throughput/interactivity trade-off of [`crate::analysis::pareto`].
//!
//! Columns: `level,stimulus,value,output_token_throughput,output_token_throughput_per_user,`
//! `feasible,frontier`. `feasible` is `yes` when the level met every `--slo`, `no` when it
//! missed one, empty without objectives; `frontier` is `yes` when no other level has at least
//! its per-user and total output rates and more of one. Levels in load order; numbers with two
//! decimals; an empty per-user cell means the level did not stream.

use crate::analysis::pareto::Point;

/// File name.
pub const PARETO_FILE: &str = "pareto.csv";

/// Header line.
pub const HEADER: &str = "level,stimulus,value,output_token_throughput,output_token_throughput_per_user,feasible,frontier";

/// The file's text for `points` (sorted by load here).
pub fn csv(points: &[Point]) -> String {
    let mut sorted: Vec<&Point> = points.iter().collect();
    sorted.sort_by(|a, b| a.load.total_cmp(&b.load));
    let mut out = String::from(HEADER);
    out.push('\n');
    let yes = |b: bool| if b { "yes" } else { "no" };
    for p in sorted {
        out.push_str(&format!(
            "{},{},{},{:.2},{},{},{}\n",
            p.level,
            p.kind,
            crate::analysis::text::load_text(p.load),
            p.throughput,
            crate::analysis::text::fixed_or(p.per_user, 2, ""),
            p.feasible.map_or("", yes),
            yes(p.frontier)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_rows() {
        let p = |level: &str, load: f64, t: f64, u: Option<f64>, f: Option<bool>, fr: bool| Point {
            level: level.into(),
            kind: "concurrency",
            load,
            throughput: t,
            per_user: u,
            feasible: f,
            frontier: fr,
        };
        let text = csv(&[
            p("concurrency8", 8.0, 612.345, Some(70.5), Some(false), true),
            p("concurrency1", 1.0, 100.0, Some(101.0), Some(true), true),
            p("concurrency2", 2.0, 150.0, None, None, false),
        ]);
        assert_eq!(
            text,
            "level,stimulus,value,output_token_throughput,output_token_throughput_per_user,feasible,frontier\n\
             concurrency1,concurrency,1,100.00,101.00,yes,yes\n\
             concurrency2,concurrency,2,150.00,,,no\n\
             concurrency8,concurrency,8,612.35,70.50,no,yes\n"
        );
    }
}
