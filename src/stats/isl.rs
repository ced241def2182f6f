//! TTFT and request latency by input length (`--isl-buckets`): the perf guide's advice for a
//! high, wide TTFT is to split the prompts by length and look at each group, because prefill time
//! grows with the prompt. Each bucket keeps its own HDR histograms, so buckets merge across
//! windows and shards exactly like the level's own distributions.

use serde::Serialize;

use super::Dist;
use crate::metrics::{Metric, PercentileMethod, Stats, per_request_value};
use crate::record::RequestRecord;

/// One input-length bucket's numbers for a level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IslBucket {
    /// Smallest input length in the bucket (tokens).
    pub min_isl: u32,
    /// First input length past the bucket (exclusive); `None` for the last, open bucket.
    pub max_isl: Option<u32>,
    /// Measured successful requests whose input length fell in the bucket.
    pub count: u64,
    /// Their time to first token (ms), when any had one.
    pub ttft: Option<Stats>,
    /// Their request latency (ms), when any had one.
    pub latency: Option<Stats>,
}

impl IslBucket {
    /// The bucket as people write it: `<128`, `128-511`, `>=2048` (ASCII, so CSV cells and
    /// terminals show it alike).
    pub fn label(&self) -> String {
        match (self.min_isl, self.max_isl) {
            (0, Some(hi)) => format!("<{hi}"),
            (lo, Some(hi)) => format!("{lo}-{}", hi.saturating_sub(1)),
            (lo, None) => format!(">={lo}"),
        }
    }
}

/// The per-bucket distributions of one aggregate. Empty `edges`: bucketing is off, and nothing
/// is allocated or recorded.
#[derive(Clone, Debug, Default)]
pub struct IslDists {
    /// Ascending bucket edges: bucket `i` holds lengths in `[edges[i-1], edges[i])`, the first
    /// starting at 0 and the last open-ended.
    edges: Vec<u32>,
    /// Per bucket: (TTFT, request latency), stored in ns.
    dists: Vec<(Dist, Dist)>,
}

impl IslDists {
    /// Buckets split at `edges` (ascending, distinct, non-zero: `--isl-buckets` resolved).
    pub fn new(edges: &[u32]) -> IslDists {
        if edges.is_empty() {
            return IslDists::default();
        }
        IslDists {
            edges: edges.to_vec(),
            dists: (0..=edges.len()).map(|_| Default::default()).collect(),
        }
    }

    /// The bucket edges (empty when bucketing is off).
    pub fn edges(&self) -> &[u32] {
        &self.edges
    }

    /// Per bucket, its (TTFT, latency) distributions, first bucket first.
    pub fn dists(&self) -> &[(Dist, Dist)] {
        &self.dists
    }

    /// Replaces bucket `i`'s distributions (rebuilding from files); false when there is no
    /// such bucket.
    pub fn set(&mut self, i: usize, ttft: Dist, latency: Dist) -> bool {
        let Some(slot) = self.dists.get_mut(i) else {
            return false;
        };
        *slot = (ttft, latency);
        true
    }

    /// Accounts a measured, successful request.
    #[inline]
    pub fn record(&mut self, rec: &RequestRecord) {
        if self.edges.is_empty() {
            return;
        }
        let i = self.edges.partition_point(|&e| e <= rec.isl);
        let (ttft, latency) = &mut self.dists[i];
        if let Some(v) = per_request_value(Metric::TimeToFirstToken, rec) {
            ttft.record(v);
        }
        if let Some(v) = per_request_value(Metric::RequestLatency, rec) {
            latency.record(v);
        }
    }

    /// Adds another aggregate's buckets. An empty side takes the other's edges; buckets cut at
    /// different edges cannot be added honestly, so the result has none.
    pub fn merge(&mut self, other: &IslDists) {
        if other.edges.is_empty() {
            return;
        }
        if self.edges.is_empty() {
            *self = IslDists::new(&other.edges);
        }
        if self.edges != other.edges {
            *self = IslDists::default();
            return;
        }
        for ((t, l), (ot, ol)) in self.dists.iter_mut().zip(&other.dists) {
            t.merge(ot);
            l.merge(ol);
        }
    }

    /// Every bucket's numbers (ms), empty buckets included so tables keep their rows.
    pub fn summarize(&self, method: PercentileMethod) -> Vec<IslBucket> {
        let ms = |d: &Dist| (d.count() > 0).then(|| d.stats_by(1e-6, method));
        self.dists
            .iter()
            .enumerate()
            .map(|(i, (ttft, latency))| IslBucket {
                min_isl: if i == 0 { 0 } else { self.edges[i - 1] },
                max_isl: self.edges.get(i).copied(),
                count: latency.count().max(ttft.count()),
                ttft: ms(ttft),
                latency: ms(latency),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(isl: u32, ttft_ms: u64) -> RequestRecord {
        let mut r = crate::stats::test_record(ttft_ms, ttft_ms + 5, 10);
        r.isl = isl;
        r
    }

    #[test]
    fn requests_land_in_the_bucket_of_their_length() {
        let mut d = IslDists::new(&[128, 512]);
        for (isl, ttft) in [
            (0, 1),
            (127, 2),
            (128, 10),
            (511, 12),
            (512, 40),
            (9000, 50),
        ] {
            d.record(&rec(isl, ttft));
        }
        let b = d.summarize(PercentileMethod::Linear);
        let got: Vec<(String, u64, f64)> = b
            .iter()
            .map(|b| (b.label(), b.count, b.ttft.as_ref().unwrap().avg))
            .collect();
        assert_eq!(
            got,
            [
                ("<128".to_string(), 2, 1.5),
                ("128-511".to_string(), 2, 11.0),
                (">=512".to_string(), 2, 45.0)
            ]
        );
        assert_eq!(b[2].latency.as_ref().unwrap().avg, 50.0);
    }

    #[test]
    fn off_records_nothing_and_merge_needs_equal_edges() {
        let mut off = IslDists::new(&[]);
        off.record(&rec(10, 1));
        assert!(off.summarize(PercentileMethod::Linear).is_empty());
        let mut a = IslDists::new(&[100]);
        a.record(&rec(10, 1));
        off.merge(&a);
        off.merge(&a);
        assert_eq!(off.summarize(PercentileMethod::Linear)[0].count, 2);
        off.merge(&IslDists::new(&[200]));
        assert!(off.edges().is_empty(), "different cuts do not add up");
    }
}
