//! The plan's shard section: which part of the plan this process runs (`--shard I/N`, or
//! `--shards N` with the index from `JOB_COMPLETION_INDEX`), when its levels start
//! (`--start-at`, `--level-slot`), each level's part ([`ShardPlan::part`]), and the plan's
//! identity — a hash of everything but the per-process fields, equal on every shard of one run,
//! which `merge` checks before it adds anything up.
//!
//! Levels start on shared boundaries: level k of the plan starts at `start_at + k × slot` on
//! every shard, whether or not that shard has load at level k, so all shards are at the same
//! level at the same time. The slot is `--level-slot`, or, when each level's length is known
//! from the plan (a time window, a timed warm-up), that length plus a drain allowance for
//! requests still in flight at the window's end: a quarter of the length, at least 5 s, rounded
//! up to whole seconds. A level that overruns its slot makes the next one start late, which that
//! level records.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::load::{LevelLength, Shard, Stimulus};

/// Whether and how this process's run is part of a larger one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct ShardPlan {
    /// This process's part ([`Shard::WHOLE`] when alone).
    #[serde(flatten)]
    pub shard: Shard,
    /// When the first level starts (Unix ns), from `--start-at`.
    pub start_at_unix_ns: Option<u64>,
    /// Time between level starts, when there is more than one level and a start time.
    #[serde(with = "super::opt_duration_secs")]
    pub level_slot: Option<Duration>,
}

/// One level as this shard runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelPart {
    /// The level's place in the plan.
    pub index: u32,
    /// The plan's level (what the merged result is about).
    pub whole: Stimulus,
    /// This shard's load and stop, or why it has none at this level.
    pub load: Result<(Stimulus, LevelLength), Idle>,
    /// This shard's warm-up.
    pub warmup: Option<LevelLength>,
    /// When the level starts (Unix ns), with a start time.
    pub start_at: Option<u64>,
}

/// Why a shard has no load at a level: not a failure (it writes `shard.json` alone, its
/// `idle` says this), but the reason is what `merge` and the log show.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Idle {
    /// Fewer workers than shards.
    #[error("{level} split over {count} shards leaves {shard} no worker")]
    NoWorker {
        /// The level's name.
        level: String,
        /// Shards in the run.
        count: u32,
        /// This shard.
        shard: Shard,
    },
    /// Fewer requests than shards with a worker.
    #[error("{requests} requests split over {count} shards leave {shard} none")]
    NoRequests {
        /// The level's requests.
        requests: u64,
        /// Shards in the run.
        count: u32,
        /// This shard.
        shard: Shard,
    },
}

impl ShardPlan {
    /// When level `index` of the plan starts (Unix ns), with `--start-at`.
    pub fn level_start(&self, index: u32) -> Option<u64> {
        let at = self.start_at_unix_ns?;
        let slot = self.level_slot.map_or(0, |d| d.as_nanos() as u64);
        Some(at + u64::from(index) * slot)
    }

    /// Level `index` of the plan (`whole`, ended by `stop`, warmed up by `warmup`) as this shard
    /// runs it: its part of the workers or rate, of the request counts, and the level's start.
    pub fn part(
        &self,
        index: u32,
        whole: Stimulus,
        stop: LevelLength,
        warmup: Option<LevelLength>,
    ) -> LevelPart {
        let s = self.shard;
        // Request counts go to the shards with load at this level only (concurrency 3 over 4
        // shards: the counts split over the three with a worker), so the parts add up.
        let loaded = match whole {
            Stimulus::Concurrency(n) => s.count.min(n).max(1),
            Stimulus::RequestRate { .. } | Stimulus::FixedSchedule { .. } => s.count,
        };
        let among_loaded = Shard {
            index: s.index.min(loaded - 1),
            count: loaded,
        };
        let stop_part = stop.for_shard(among_loaded);
        let load = match whole.for_shard(s) {
            None => Err(Idle::NoWorker {
                level: whole.name(),
                count: s.count,
                shard: s,
            }),
            Some(_) if stop_part.is_empty() => Err(Idle::NoRequests {
                requests: stop.requests().unwrap_or(0),
                count: s.count,
                shard: s,
            }),
            Some(part) => Ok((part, stop_part)),
        };
        LevelPart {
            index,
            whole,
            load,
            warmup: warmup
                .map(|w| w.for_shard(among_loaded))
                .filter(|w| !w.is_empty()),
            start_at: self.level_start(index),
        }
    }
}

/// A derived slot: the level's length plus a quarter of it for requests in flight at its end
/// (at least 5 s), in whole seconds.
pub fn derived_slot(level_length: Duration) -> Duration {
    let drain = (level_length / 4).max(Duration::from_secs(5));
    let total = level_length + drain;
    Duration::from_secs(total.as_secs() + u64::from(total.subsec_nanos() > 0))
}

/// The identity of a resolved plan: FNV-1a (64 bits) of its JSON (`input_config`) without the
/// `per_process` top-level keys (the shard section, output paths, the command line), as 16 hex
/// digits. The JSON's field order is the plan's declaration order, so shards of one run
/// (same version, same flags) agree on it.
pub fn plan_id(input_config: &Value, per_process: &[&str]) -> String {
    let mut v = input_config.clone();
    if let Value::Object(m) = &mut v {
        for k in per_process {
            m.remove(*k);
        }
    }
    let text = serde_json::to_string(&v).unwrap_or_default();
    let h = crate::workload::salt::fnv1a(text.as_bytes());
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Arrival;

    fn plan(index: u32, count: u32) -> ShardPlan {
        ShardPlan {
            shard: Shard { index, count },
            start_at_unix_ns: Some(1_000_000_000_000_000_000),
            level_slot: Some(Duration::from_secs(15)),
        }
    }

    #[test]
    fn parts_of_levels() {
        let p = plan(3, 4).part(2, Stimulus::Concurrency(3), LevelLength::Requests(30), None);
        assert_eq!(
            p.load.unwrap_err().to_string(),
            "concurrency3 split over 4 shards leaves shard 3/4 no worker"
        );
        assert_eq!(p.start_at, Some(1_000_000_030_000_000_000));
        let parts: Vec<_> = (0..3)
            .map(|i| {
                plan(i, 4)
                    .part(0, Stimulus::Concurrency(3), LevelLength::Requests(90), None)
                    .load
            })
            .collect();
        assert_eq!(
            parts,
            vec![Ok((Stimulus::Concurrency(1), LevelLength::Requests(30))); 3],
            "requests split over the shards with a worker"
        );
        let (ten, two) = (LevelLength::Requests(10), Some(LevelLength::Requests(2)));
        let p = plan(1, 4).part(0, Stimulus::Concurrency(8), ten, two);
        assert_eq!(
            p.load,
            Ok((Stimulus::Concurrency(2), LevelLength::Requests(3)))
        );
        assert_eq!(p.warmup, Some(LevelLength::Requests(1)));
        let p = plan(2, 4).part(0, Stimulus::Concurrency(8), ten, two);
        assert_eq!(
            p.warmup, None,
            "2 warm-up requests over 4 shards: none for shard 2"
        );
        let rate = Stimulus::RequestRate {
            rate: 8.0,
            arrival: Arrival::Constant,
            max_inflight: 64,
        };
        let p = plan(3, 4).part(0, rate, LevelLength::Requests(3), None);
        assert_eq!(
            p.load.unwrap_err().to_string(),
            "3 requests split over 4 shards leave shard 3/4 none"
        );
        let alone = ShardPlan::default();
        assert_eq!(alone.level_start(3), None);
        assert_eq!(
            alone.part(0, rate, LevelLength::Requests(3), None).load,
            Ok((rate, LevelLength::Requests(3)))
        );
    }

    #[test]
    fn derived_slots() {
        let ms = Duration::from_millis;
        for (level, slot) in [(10_000, 15_000), (60_000, 75_000), (2_500, 8_000)] {
            assert_eq!(derived_slot(ms(level)), ms(slot));
        }
    }

    #[test]
    fn plan_id_ignores_per_process_fields_only() {
        let a = serde_json::json!({"target": {"model": "m"}, "shard": {"index": 0}, "command_line": "x --shard 0/2"});
        let b = serde_json::json!({"target": {"model": "m"}, "shard": {"index": 1}, "command_line": "x --shard 1/2"});
        let c = serde_json::json!({"target": {"model": "n"}, "shard": {"index": 1}, "command_line": "x"});
        let drop = ["shard", "command_line"];
        assert_eq!(plan_id(&a, &drop), plan_id(&b, &drop));
        assert_ne!(plan_id(&a, &drop), plan_id(&c, &drop));
        assert_eq!(plan_id(&a, &drop).len(), 16);
        // FNV-1a of `{}`: fixed, so ids written by one build are read by the next.
        assert_eq!(plan_id(&serde_json::json!({}), &[]), "08f44b07b5901a25");
    }
}
