//! The merged level's `requests.jsonl` and `timeline.csv`, streamed: the shards' files are read
//! a line at a time and merged by end time (each shard's file is in completion order), so memory
//! holds one row per shard whatever the request count. Rows keep their fields, name the plan's
//! level (a shard's rows name its part, `concurrency2`), and gain `shard`; the timeline is rebuilt
//! from the merged rows exactly as a single run's collector builds it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::artifact::lines::LineFile;
use crate::artifact::records::{read_row, write_shard_row};
use crate::artifact::timeline::Timeline;
use crate::error::{Error, Result};
use crate::record::{Clock, Phase, RequestRecord};

/// One shard's `requests.jsonl` being read.
struct Source {
    shard: u32,
    path: PathBuf,
    lines: std::io::Lines<BufReader<std::fs::File>>,
    line_no: usize,
}

impl Source {
    fn next(&mut self) -> Result<Option<(RequestRecord, Option<String>)>> {
        loop {
            let Some(line) = self.lines.next() else {
                return Ok(None);
            };
            self.line_no += 1;
            let line = line.map_err(|e| Error::io("read", &self.path, e))?;
            if line.trim().is_empty() {
                continue;
            }
            return read_row(&line)
                .map(|r| Some((r.record, r.request_id)))
                .map_err(|e| {
                    let at = format!("{} line {}", self.path.display(), self.line_no);
                    Error::from(e).context(at)
                });
        }
    }
}

/// What the merged rows held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Rows written.
    pub rows: u64,
    /// Measured rows (the rest are warm-up).
    pub measured: u64,
}

/// Where the merged level's rows go, and how its timeline is cut.
pub struct Target<'a> {
    /// The merged `requests.jsonl`.
    pub records: &'a Path,
    /// The merged `timeline.csv`.
    pub timeline: &'a Path,
    /// The plan's timeline interval.
    pub every: Duration,
    /// The level's start (Unix ns): the timeline's first interval begins here.
    pub start_unix_ns: u64,
    /// The plan's level name.
    pub level: &'a str,
    /// Whether the level's responses streamed (the timeline has TTFT columns only then).
    pub streaming: bool,
}

/// Merges the shards' `requests.jsonl` files (`(shard index, path)`, a missing file counts as
/// empty) into `to`, by end time.
pub fn merge(files: &[(u32, PathBuf)], to: &Target<'_>) -> Result<Written> {
    let mut sources = Vec::new();
    for (shard, path) in files {
        let Ok(f) = std::fs::File::open(path) else {
            continue;
        };
        sources.push(Source {
            shard: *shard,
            path: path.clone(),
            lines: BufReader::new(f).lines(),
            line_no: 0,
        });
    }
    let clock = Clock::unix();
    let mut out = LineFile::create(to.records).map_err(|e| Error::io("write", to.records, e))?;
    let mut timeline = Timeline::create_at(
        to.timeline,
        to.every,
        (clock, to.start_unix_ns),
        to.streaming,
    )
    .map_err(|e| Error::io("write", to.timeline, e))?;
    // Heads of every file, smallest end time first (ties: lower shard first).
    let mut heads = BinaryHeap::new();
    let mut pending: Vec<Option<(RequestRecord, Option<String>)>> =
        Vec::with_capacity(sources.len());
    for (i, s) in sources.iter_mut().enumerate() {
        let r = s.next()?;
        if let Some((r, _)) = &r {
            heads.push(Reverse((r.end_ns, i)));
        }
        pending.push(r);
    }
    let mut written = Written::default();
    let mut last_end = to.start_unix_ns;
    while let Some(Reverse((_, i))) = heads.pop() {
        let Some((rec, id)) = pending[i].take() else {
            continue;
        };
        let tags = (
            Some(sources[i].shard),
            id.as_ref().map(|s| s as &dyn std::fmt::Display),
        );
        out.line(|b| write_shard_row(b, to.level, &clock, &rec, tags));
        timeline.record(&rec);
        written.rows += 1;
        written.measured += u64::from(rec.phase == Phase::Measure);
        last_end = last_end.max(rec.end_ns);
        if let Some(next) = sources[i].next()? {
            heads.push(Reverse((next.0.end_ns, i)));
            pending[i] = Some(next);
        }
    }
    timeline.finish_at(last_end)?;
    out.finish()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(level: &str, end_ms: u64, phase: &str) -> String {
        let t = 1_767_225_600_000_000_000u64 + end_ms * 1_000_000;
        format!(
            "{{\"level\":\"{level}\",\"phase\":\"{phase}\",\"seq\":0,\"prompt_index\":1,\"intended_ns\":{s},\"sent_ns\":{s},\"first_byte_ns\":null,\"first_token_ns\":{f},\"second_token_ns\":null,\"last_token_ns\":{t},\"end_ns\":{t},\"ttft_ms\":null,\"latency_ms\":null,\"itl_ms\":null,\"isl\":3,\"osl\":1,\"server_osl\":null,\"requested_osl\":1,\"chunks\":1,\"responses\":1,\"lossy_text\":false,\"error\":null,\"error_message\":null}}",
            s = t - 50_000_000,
            f = t - 10_000_000,
        )
    }

    #[test]
    fn rows_merge_by_end_time_with_their_shard() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a.jsonl");
        let b = tmp.path().join("b.jsonl");
        std::fs::write(
            &a,
            [
                line("concurrency1", 100, "warmup"),
                line("concurrency1", 300, "measure"),
            ]
            .join("\n"),
        )
        .unwrap();
        std::fs::write(
            &b,
            format!(
                "{}\n\n{}\n",
                line("concurrency1", 200, "measure"),
                line("concurrency1", 250, "measure")
            ),
        )
        .unwrap();
        let records = tmp.path().join("m.jsonl");
        let timeline = tmp.path().join("t.csv");
        let w = merge(
            &[(0, a), (1, b), (2, tmp.path().join("absent.jsonl"))],
            &Target {
                records: &records,
                timeline: &timeline,
                every: Duration::from_millis(200),
                start_unix_ns: 1_767_225_600_000_000_000,
                level: "concurrency2",
                streaming: true,
            },
        )
        .unwrap();
        assert_eq!(
            w,
            Written {
                rows: 4,
                measured: 3
            }
        );
        let text = std::fs::read_to_string(&records).unwrap();
        let ends: Vec<(u64, u64)> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert_eq!(v["level"], "concurrency2");
                (v["end_ns"].as_u64().unwrap(), v["shard"].as_u64().unwrap())
            })
            .collect();
        let t0 = 1_767_225_600_000_000_000u64;
        assert_eq!(
            ends,
            [(100, 0), (200, 1), (250, 1), (300, 0)].map(|(ms, s)| (t0 + ms * 1_000_000, s))
        );
        let rows: Vec<String> = std::fs::read_to_string(&timeline)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
            .collect();
        let ms = t0 / 1_000_000;
        assert_eq!(
            rows,
            [
                format!("{ms},{},1,0", ms + 200),
                format!("{},{},3,0", ms + 200, ms + 300)
            ]
        );
    }
}
