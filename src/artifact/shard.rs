//! A shard's identity on disk, and the `shards` section of a merged run.
//!
//! `shard.json`, in every level directory a `--shard` run writes (also for a level at which the
//! shard had no load, whose directory holds only this file):
//!
//! ```text
//! {"format": "ttftbench-shard-v1", "ttftbench_version": "0.1.0", "mode": "profile",
//!  "plan_id": "5f0c3e1d9a7b2c44",               <- equal on every shard of one run
//!  "shard": {"index": 1, "count": 4},
//!  "start_at_unix_ns": 1767225600000000000,     <- --start-at, or null
//!  "clock_anchor_unix_ns": 1767225590123456789, <- the process's wall-clock anchor
//!  "level": {"index": 0, "name": "concurrency8", "stimulus": {"concurrency": 8}},
//!  "part": {"concurrency": 2},                  <- this shard's load at the level, or null
//!  "idle": null,                                <- or why the shard had no load here
//!  "start": {"planned_unix_ns": ..., "actual_unix_ns": ..., "late": false}}   <- or null
//! ```
//!
//! The merged level's JSON carries `shards` ([`ShardsSection`], its fields in declared order):
//! the count, the plan identity, the level's planned start, the skew between the shards' actual
//! starts, which shard's server metrics were kept, and per shard its directory, requests,
//! errors, start delay, whether it was trustworthy, and why it was idle.

use serde::{Deserialize, Serialize};

use crate::load::{Shard, Stimulus};

/// `shard.json`'s `format`.
pub const SHARD_FORMAT: &str = "ttftbench-shard-v1";

/// The file's name.
pub const SHARD_FILE: &str = "shard.json";

/// A level's start against its planned moment, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartRecord {
    /// The planned moment (Unix ns).
    pub planned_unix_ns: u64,
    /// When the level started (Unix ns).
    pub actual_unix_ns: u64,
    /// The shard was already past the moment when it got there.
    pub late: bool,
}

/// The level a shard directory belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LevelRecord {
    /// Its place in the plan.
    pub index: u32,
    /// The plan's level.
    pub stimulus: Stimulus,
}

/// `shard.json`: which run, which shard, which level, and how its start went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// [`SHARD_FORMAT`].
    pub format: String,
    /// The version that wrote it.
    pub ttftbench_version: String,
    /// `profile` or `perf`.
    pub mode: String,
    /// The plan's identity.
    pub plan_id: String,
    /// Which shard.
    pub shard: Shard,
    /// `--start-at` (Unix ns).
    pub start_at_unix_ns: Option<u64>,
    /// The process's wall-clock anchor (Unix ns): its monotonic clock's zero.
    pub clock_anchor_unix_ns: u64,
    /// The level of the plan.
    pub level: LevelRecord,
    /// This shard's load at the level (`None`: idle).
    pub part: Option<Stimulus>,
    /// Why the shard had no load at this level.
    pub idle: Option<String>,
    /// The level's start against its planned moment.
    pub start: Option<StartRecord>,
}

impl ShardRecord {
    /// The level's name as a single run writes it (`concurrency8`).
    pub fn level_name(&self) -> String {
        self.level.stimulus.name()
    }
}

/// The text of `shard.json`.
pub fn encode(r: &ShardRecord) -> String {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    super::stamp(&mut v);
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// Why a `shard.json` cannot be read: exit code 2 (`merge` was given it; the caller names the
/// file).
#[derive(Debug, thiserror::Error)]
pub enum ShardRecordError {
    /// Not the JSON of a shard record.
    #[error("not a shard record: {0}")]
    Json(#[source] serde_json::Error),
    /// A record of another format.
    #[error("format '{0}' is not {SHARD_FORMAT} (written by another version of ttftbench?)")]
    Format(String),
}

crate::error::usage_error!(ShardRecordError);

/// Reads `shard.json`'s text.
pub fn decode(text: &str) -> Result<ShardRecord, ShardRecordError> {
    let r: ShardRecord = serde_json::from_str(text).map_err(ShardRecordError::Json)?;
    if r.format != SHARD_FORMAT {
        return Err(ShardRecordError::Format(r.format));
    }
    Ok(r)
}

/// One shard's part of a merged level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShardPart {
    /// Its index.
    pub index: u32,
    /// The level directory it was read from.
    pub dir: String,
    /// Successful measured requests.
    pub requests: u64,
    /// Failed measured requests.
    pub errors: u64,
    /// How long after the planned moment its level started (ms), with `--start-at`.
    pub start_delay_ms: Option<f64>,
    /// Whether its own measurement was trustworthy.
    pub trustworthy: bool,
    /// Why it had no load at this level.
    pub idle: Option<String>,
}

/// The `shards` section of a merged level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShardsSection {
    /// Shards in the run.
    pub count: u32,
    /// The plan's identity.
    pub plan_id: String,
    /// The level's planned start (Unix ns), with `--start-at`.
    pub planned_start_unix_ns: Option<u64>,
    /// Latest minus earliest actual level start among shards with load (ms).
    pub start_skew_ms: f64,
    /// The shard whose server metrics the merged level reports (the one whose measurement
    /// spanned longest; every shard saw the same server).
    pub server_metrics_from: Option<u32>,
    /// Per shard, by index.
    pub shards: Vec<ShardPart>,
}

/// One console line: `concurrency8: 4 shards (skew 2.1 ms): requests 25+25+25+25, errors 0+0+0+0`.
pub fn section_line(level: &str, s: &ShardsSection) -> String {
    let join = |f: fn(&ShardPart) -> u64| {
        s.shards
            .iter()
            .map(|p| f(p).to_string())
            .collect::<Vec<_>>()
            .join("+")
    };
    let idle = s.shards.iter().filter(|p| p.idle.is_some()).count();
    format!(
        "{level}: {} shards (start skew {:.1} ms{}): requests {}, errors {}",
        s.count,
        s.start_skew_ms,
        if idle > 0 {
            format!(", {idle} idle")
        } else {
            String::new()
        },
        join(|p| p.requests),
        join(|p| p.errors)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ShardRecord {
        ShardRecord {
            format: SHARD_FORMAT.into(),
            ttftbench_version: "0.1.0".into(),
            mode: "profile".into(),
            plan_id: "00000000000000ab".into(),
            shard: Shard { index: 1, count: 2 },
            start_at_unix_ns: Some(1_767_225_600_000_000_000),
            clock_anchor_unix_ns: 1_767_225_590_000_000_000,
            level: LevelRecord {
                index: 0,
                stimulus: Stimulus::Concurrency(3),
            },
            part: Some(Stimulus::Concurrency(1)),
            idle: None,
            start: Some(StartRecord {
                planned_unix_ns: 1_767_225_600_000_000_000,
                actual_unix_ns: 1_767_225_600_001_000_000,
                late: false,
            }),
        }
    }

    #[test]
    fn shard_record_exact_text_and_round_trip() {
        let text = encode(&record());
        let expected = r#"{
  "format": "ttftbench-shard-v1",
  "ttftbench_version": "0.1.0",
  "mode": "profile",
  "plan_id": "00000000000000ab",
  "shard": {
    "index": 1,
    "count": 2
  },
  "start_at_unix_ns": 1767225600000000000,
  "clock_anchor_unix_ns": 1767225590000000000,
  "level": {
    "index": 0,
    "stimulus": {
      "concurrency": 3
    }
  },
  "part": {
    "concurrency": 1
  },
  "idle": null,
  "start": {
    "planned_unix_ns": 1767225600000000000,
    "actual_unix_ns": 1767225600001000000,
    "late": false
  },
  "schema_version": 2
}"#;
        assert_eq!(text, expected);
        assert_eq!(decode(&text).unwrap(), record());
        assert_eq!(record().level_name(), "concurrency3");
        let e = decode(&text.replace("ttftbench-shard-v1", "v0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not ttftbench-shard-v1"), "{e}");
        assert!(
            decode("{}")
                .unwrap_err()
                .to_string()
                .starts_with("not a shard record")
        );
    }

    #[test]
    fn section_exact_json_and_line() {
        let s = ShardsSection {
            count: 2,
            plan_id: "00000000000000ab".into(),
            planned_start_unix_ns: Some(1_767_225_600_000_000_000),
            start_skew_ms: 1.5,
            server_metrics_from: Some(0),
            shards: vec![
                ShardPart {
                    index: 0,
                    dir: "s0/c3".into(),
                    requests: 20,
                    errors: 1,
                    start_delay_ms: Some(0.5),
                    trustworthy: true,
                    idle: None,
                },
                ShardPart {
                    index: 1,
                    dir: "s1/c3".into(),
                    requests: 0,
                    errors: 0,
                    start_delay_ms: None,
                    trustworthy: true,
                    idle: Some("no worker".into()),
                },
            ],
        };
        assert_eq!(
            serde_json::json!(s).to_string(),
            r#"{"count":2,"plan_id":"00000000000000ab","planned_start_unix_ns":1767225600000000000,"start_skew_ms":1.5,"server_metrics_from":0,"shards":[{"index":0,"dir":"s0/c3","requests":20,"errors":1,"start_delay_ms":0.5,"trustworthy":true,"idle":null},{"index":1,"dir":"s1/c3","requests":0,"errors":0,"start_delay_ms":null,"trustworthy":true,"idle":"no worker"}]}"#
        );
        assert_eq!(
            section_line("concurrency3", &s),
            "concurrency3: 2 shards (start skew 1.5 ms, 1 idle): requests 20+0, errors 1+0"
        );
    }
}
