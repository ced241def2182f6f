//! Which part of a plan this process runs when N processes run it together (`--shard I/N`):
//! the shard's identity and the integer split every divided quantity uses. The splits
//! themselves live with what they split: [`super::Stimulus::for_shard`] (workers, rate),
//! [`super::LevelLength::for_shard`] (request counts), [`super::pacer::Pacer::for_shard`] (the arrival
//! schedule), and the dataset's partition of prompts (`workload::Dataset::partition`).

use serde::{Deserialize, Serialize};

/// One process's part of a plan run by `count` processes; `index` is 0-based, as Kubernetes'
/// `JOB_COMPLETION_INDEX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    /// This process's index, `0..count`.
    pub index: u32,
    /// How many processes run the plan.
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl Shard {
    /// The whole plan in one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Whether this is the whole plan (no split).
    pub fn is_whole(&self) -> bool {
        self.count <= 1
    }

    /// This shard's part of `total` whole units: `total / count`, and one more for the first
    /// `total % count` shards, so the parts add up to `total` and differ by at most one.
    pub fn share(&self, total: u64) -> u64 {
        let count = u64::from(self.count.max(1));
        let index = u64::from(self.index);
        total / count + u64::from(index < total % count)
    }

    /// The number of this shard's request `local` among the whole run's: shard `index` of
    /// `count` takes every `count`-th number from `index` on. The shards' numbers are disjoint,
    /// and when each phase's request count is split by [`Shard::share`] they are exactly the
    /// whole run's `0..total`, so anything chosen by request number (which requests
    /// `--request-cancellation-rate` cancels) is chosen for the union of the shards as for one
    /// process. The whole plan's numbers are its own.
    pub fn whole_seq(&self, local: u64) -> u64 {
        local * u64::from(self.count.max(1)) + u64::from(self.index)
    }

    /// `2/4`: index and count as `--shard` takes them.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard {}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_of_the_shards_are_the_whole_runs() {
        for count in 1..=5u32 {
            for total in [0u64, 1, 7, 40] {
                let mut all: Vec<u64> = (0..count)
                    .flat_map(|index| {
                        let s = Shard { index, count };
                        (0..s.share(total)).map(move |l| s.whole_seq(l))
                    })
                    .collect();
                all.sort_unstable();
                assert_eq!(
                    all,
                    (0..total).collect::<Vec<_>>(),
                    "{count} shards, {total}"
                );
            }
        }
        assert_eq!(Shard::WHOLE.whole_seq(9), 9);
    }

    #[test]
    fn shares_add_up_and_spread_the_remainder() {
        for count in 1..=9u32 {
            for total in [0u64, 1, 2, 3, 7, 8, 10, 1000, 1001] {
                let parts: Vec<u64> = (0..count)
                    .map(|index| Shard { index, count }.share(total))
                    .collect();
                assert_eq!(parts.iter().sum::<u64>(), total, "{total} over {count}");
                let (mn, mx) = (parts.iter().min().unwrap(), parts.iter().max().unwrap());
                assert!(mx - mn <= 1, "{total} over {count}: {parts:?}");
                assert!(
                    parts.windows(2).all(|w| w[0] >= w[1]),
                    "first shards get more"
                );
            }
        }
        let s = |index| Shard { index, count: 4 };
        assert_eq!([0, 1, 2, 3].map(|i| s(i).share(3)), [1, 1, 1, 0]);
        assert_eq!([0, 1, 2, 3].map(|i| s(i).share(10)), [3, 3, 2, 2]);
        assert_eq!(Shard::WHOLE.share(7), 7);
        assert_eq!(s(2).to_string(), "shard 2/4");
        assert_eq!(s(2).label(), "2/4");
    }
}
