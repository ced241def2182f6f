//! The throughput/interactivity trade-off across the levels of a sweep or a search: each level
//! is a point — per-user output tokens per second (interactivity: the average over requests of
//! 1/ITL) against the level's total output tokens per second (throughput) — marked feasible when
//! it met every `--slo`, and on the Pareto frontier when no other level is at least as good on
//! both axes and better on one. vLLM's `plot_pareto` and AIPerf's Pareto sweep draw the same
//! picture; here it comes with the SLO-feasible region.

use crate::metrics::Metric;
use crate::stats::LevelSummary;

/// One level on the trade-off.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The level's name (`concurrency8`).
    pub level: String,
    /// Its stimulus kind (`concurrency`, `request_rate`).
    pub kind: &'static str,
    /// Its load value.
    pub load: f64,
    /// Output tokens per second, all users (throughput).
    pub throughput: f64,
    /// Output tokens per second per user (interactivity), when responses streamed.
    pub per_user: Option<f64>,
    /// Whether it met every objective (`None`: no objectives were given).
    pub feasible: Option<bool>,
    /// Whether no other level dominates it.
    pub frontier: bool,
}

/// The levels as points, in the order given, with the frontier marked. `feasible[i]` says
/// whether level `i` met its objectives (`None` without objectives).
pub fn points(levels: &[(&LevelSummary, Option<bool>)]) -> Vec<Point> {
    let mut out: Vec<Point> = levels
        .iter()
        .map(|(l, feasible)| Point {
            level: l.stimulus.name(),
            kind: l.stimulus.kind(),
            load: l.stimulus.value(),
            throughput: l.stats.output_token_throughput,
            per_user: l
                .shown_stat(Metric::OutputTokenThroughputPerUser)
                .filter(|s| s.count > 0)
                .map(|s| s.avg),
            feasible: *feasible,
            frontier: false,
        })
        .collect();
    let marks: Vec<bool> = out
        .iter()
        .map(|p| p.per_user.is_some() && !out.iter().any(|q| dominates(q, p)))
        .collect();
    for (p, m) in out.iter_mut().zip(marks) {
        p.frontier = m;
    }
    out
}

/// Whether `a` is at least as good as `b` on both axes and better on one.
fn dominates(a: &Point, b: &Point) -> bool {
    let (Some(ax), Some(bx)) = (a.per_user, b.per_user) else {
        return false;
    };
    ax >= bx && a.throughput >= b.throughput && (ax > bx || a.throughput > b.throughput)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Stimulus;
    use crate::metrics::Stats;

    fn level(c: u32, tput: f64, per_user: f64) -> LevelSummary {
        let mut l = crate::stats::test_level(Stimulus::Concurrency(c), 10.0);
        l.stats.output_token_throughput = tput;
        l.stats.metrics.push((
            Metric::OutputTokenThroughputPerUser,
            Stats {
                count: 40,
                avg: per_user,
                ..Stats::default()
            },
        ));
        l
    }

    #[test]
    fn frontier_and_feasibility() {
        let ls = [
            level(1, 100.0, 100.0),
            level(2, 190.0, 95.0),
            level(4, 180.0, 90.0),
            level(8, 600.0, 75.0),
            level(16, 590.0, 40.0),
        ];
        let feasible = [Some(true), Some(true), Some(true), Some(true), Some(false)];
        let input: Vec<(&LevelSummary, Option<bool>)> = ls.iter().zip(feasible).collect();
        let p = points(&input);
        let frontier: Vec<&str> = p
            .iter()
            .filter(|p| p.frontier)
            .map(|p| p.level.as_str())
            .collect();
        // 4 is beaten by 2 on both axes; 16 by 8.
        assert_eq!(frontier, ["concurrency1", "concurrency2", "concurrency8"]);
        assert_eq!(p[4].feasible, Some(false));
        assert_eq!(p[0].per_user, Some(100.0));
    }
}
