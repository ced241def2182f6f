//! Input-length bucket edges (`--isl-buckets`): which edges can cut buckets, and the ones
//! `auto` takes. The plan resolves the flag with them, statistics bucket by them
//! (`stats::isl`), and the histogram reader refuses a file whose edges a plan could not
//! have asked for.

/// The most bucket edges a plan may ask for (and a file may hold): each bucket keeps two
/// histograms in every window.
pub const MAX_EDGES: usize = 32;

/// Why `edges` cannot cut buckets (not rising from above 0, or more than [`MAX_EDGES`]);
/// `None` when they can. The plan and the histogram reader both ask, so a file holds only
/// what a plan could have asked for.
pub fn edges_problem(edges: &[u32]) -> Option<String> {
    if edges.first() == Some(&0) || edges.windows(2).any(|w| w[0] >= w[1]) {
        return Some("the edges must rise (128,512,2048)".into());
    }
    (edges.len() > MAX_EDGES).then(|| format!("{} edges; at most {MAX_EDGES}", edges.len()))
}

/// Edges for `--isl-buckets auto`: the quartiles of the workload's input lengths (rounded,
/// distinct, above the shortest), so each bucket holds about a quarter of the prompts.
pub fn quartile_edges(isls: &[u32]) -> Vec<u32> {
    let mut sorted = isls.to_vec();
    sorted.sort_unstable();
    let Some(&shortest) = sorted.first() else {
        return Vec::new();
    };
    let mut edges: Vec<u32> = [0.25, 0.5, 0.75]
        .iter()
        .map(|q| sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)])
        .filter(|&e| e > shortest)
        .collect();
    edges.dedup();
    edges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_edges_are_the_quartiles() {
        let isls: Vec<u32> = (1..=100).collect();
        assert_eq!(quartile_edges(&isls), [26, 51, 76]);
        assert!(
            quartile_edges(&[300; 10]).is_empty(),
            "one length: one bucket"
        );
        assert!(quartile_edges(&[]).is_empty());
    }
}
