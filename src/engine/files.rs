//! What a measured level leaves in its directory for `report`, `compare` and `merge`, the same
//! for `profile` and `perf`: GenAI-Perf's CSV and JSON, `histograms.json` (the HDR histograms
//! and counters `merge` adds up) and, for a shard, `shard.json` (which run, which part, how its
//! start went); a level at which a shard has no load gets only `shard.json`, saying why.

use std::path::Path;

use serde_json::Value;

use super::Measured;
use super::start::LevelStart;
use crate::analysis::slo::SloResult;
use crate::artifact::shard::{self, LevelRecord, SHARD_FILE, ShardRecord, StartRecord};
use crate::artifact::{self, write_file};
use crate::context::RunContext;
use crate::error::Result;
use crate::plan::outputs::ExportNames;
use crate::plan::{LevelPart, ShardPlan};
use crate::stats::LevelSummary;

/// Who wrote a level: the mode, the plan's identity and this process's shard section.
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    /// `profile` or `perf`.
    pub mode: &'a str,
    /// The plan's identity.
    pub plan_id: &'a str,
    /// This process's part of the run.
    pub shard: &'a ShardPlan,
    /// The run clock's Unix anchor (ns): its times on the wall clock.
    pub anchor_unix_ns: u64,
    /// The run's flags as a config file (`run.toml`; empty: not written).
    pub run_config: &'a str,
}

impl Writer<'_> {
    /// `shard.json` of a level this shard ran (`start`: how its start went), or of a level at
    /// which it had no load (`part.load` says why); `None` for a whole run.
    pub fn shard_record(&self, part: &LevelPart, start: Option<LevelStart>) -> Option<ShardRecord> {
        (!self.shard.shard.is_whole()).then(|| ShardRecord {
            format: shard::SHARD_FORMAT.into(),
            ttftbench_version: crate::VERSION.into(),
            mode: self.mode.into(),
            plan_id: self.plan_id.to_string(),
            shard: self.shard.shard,
            start_at_unix_ns: self.shard.start_at_unix_ns,
            clock_anchor_unix_ns: self.anchor_unix_ns,
            level: LevelRecord {
                index: part.index,
                stimulus: part.whole,
            },
            part: part.load.as_ref().ok().map(|(s, _)| *s),
            idle: part.load.as_ref().err().map(ToString::to_string),
            start: start.map(|s| StartRecord {
                planned_unix_ns: s.planned_unix_ns,
                actual_unix_ns: s.actual_unix_ns,
                late: s.late,
            }),
        })
    }

    /// A level's JSON document, in this key order: GenAI-Perf's numbers of `summary` (with
    /// `input_config`), the identity fields (the version, the plan's identity and, for a shard,
    /// which), the mode's own sections (`own`:
    /// profile's workload fingerprint, perf's windows), the `--slo` results when there are
    /// objectives, the run's `context` and the schema version.
    pub fn level_doc(
        &self,
        summary: &LevelSummary,
        input_config: &Value,
        own: Vec<(&str, Value)>,
        slo: &[SloResult],
        context: &RunContext,
    ) -> Value {
        let mut doc = artifact::genai_perf::json(summary, input_config);
        if let Value::Object(map) = &mut doc {
            map.insert("ttftbench_version".into(), crate::VERSION.into());
            map.insert("plan_id".into(), self.plan_id.into());
            if !self.shard.shard.is_whole() {
                map.insert(
                    "shard".into(),
                    serde_json::to_value(self.shard.shard).unwrap_or_default(),
                );
            }
            for (key, value) in own {
                map.insert(key.into(), value);
            }
            if !slo.is_empty() {
                map.insert("slo".into(), crate::analysis::slo::json(slo));
            }
            map.insert(
                "context".into(),
                serde_json::to_value(context).unwrap_or_default(),
            );
        }
        artifact::stamp(&mut doc);
        doc
    }

    /// Writes a measured level's GenAI-Perf CSV, its JSON (`doc`; both named by `names`), its
    /// histograms (`requests.jsonl` was streamed already) and, for a shard, `shard.json` (of
    /// `part`, with how its start went).
    pub fn write_level(
        &self,
        dir: &Path,
        names: &ExportNames,
        m: &Measured,
        doc: &Value,
        part: &LevelPart,
    ) -> Result<()> {
        write_file(&dir.join(&names.csv), artifact::genai_perf::csv(&m.summary))?;
        write_file(
            &dir.join(&names.json),
            serde_json::to_string_pretty(doc).unwrap_or_default(),
        )?;
        write_file(
            &dir.join(artifact::HISTOGRAMS_FILE),
            serde_json::to_string(&artifact::histograms::encode(&m.agg, self.anchor_unix_ns))
                .unwrap_or_default(),
        )?;
        if !self.run_config.is_empty() {
            write_file(&dir.join(crate::artifact::RUN_CONFIG_FILE), self.run_config)?;
        }
        match self.shard_record(part, m.start) {
            Some(r) => write_file(&dir.join(SHARD_FILE), shard::encode(&r)),
            None => Ok(()),
        }
    }
}
