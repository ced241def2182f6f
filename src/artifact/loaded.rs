//! A level read back from disk, whoever wrote it (ttftbench's own files or GenAI-Perf's): what
//! `report` and `compare` work on. The readers ([`super::read`], [`super::genai_perf_dir`])
//! both build it, so it sits below them.

use std::path::PathBuf;

use crate::stats::LevelSummary;

/// An SLO check as recorded in a level's JSON (a field absent there reads as empty).
#[derive(Debug, Clone, PartialEq, Default, serde::Deserialize)]
#[serde(default)]
pub struct RecordedSlo {
    /// The objective as written (`time_to_first_token.p99<=500ms`).
    pub objective: String,
    /// The level's value, in `unit`.
    pub actual: Option<f64>,
    /// `ms`, `fraction`, `tokens/sec`, ...
    pub unit: String,
    /// Whether it held.
    pub passed: bool,
}

/// One level read back from disk.
#[derive(Debug, Clone)]
pub struct LoadedLevel {
    /// Its directory.
    pub dir: PathBuf,
    /// Its numbers.
    pub summary: LevelSummary,
    /// The command line that produced it (secrets were redacted when it was written).
    pub command_line: Option<String>,
    /// The ttftbench version that wrote it, when recorded.
    pub version: Option<String>,
    /// SLO checks recorded with it.
    pub slo: Vec<RecordedSlo>,
    /// Model name, from the recorded plan.
    pub model: Option<String>,
    /// Endpoint type (`kserve`, `chat`, ...), from the recorded plan.
    pub api: Option<String>,
    /// The workload fingerprint, when the run recorded one (not before it was introduced, nor
    /// in GenAI-Perf's own artifacts).
    pub fingerprint: Option<crate::plan::fingerprint::Fingerprint>,
    /// Where and against what it was measured (run id, labels, hosts, server version), when
    /// recorded (ttftbench 2 files and later).
    pub context: Option<crate::context::RunContext>,
    /// A `--repeat` run's combined level: each repetition's own numbers, in order (`summary`
    /// holds their medians); empty for a level of a single run.
    pub repetitions: Vec<LevelSummary>,
}

impl LoadedLevel {
    /// A level in `dir` with nothing recorded beside its numbers.
    pub fn new(dir: &std::path::Path, summary: LevelSummary) -> LoadedLevel {
        LoadedLevel {
            dir: dir.to_path_buf(),
            summary,
            command_line: None,
            version: None,
            slo: Vec::new(),
            model: None,
            api: None,
            fingerprint: None,
            context: None,
            repetitions: Vec::new(),
        }
    }
}

impl RecordedSlo {
    /// The record of a check made in this process.
    pub fn from_result(r: &crate::analysis::slo::SloResult) -> RecordedSlo {
        RecordedSlo {
            objective: r.slo.to_string(),
            actual: r.actual,
            unit: r.slo.metric.kind().unit().to_string(),
            passed: r.passed,
        }
    }

    /// `612.00 ms`, `72.1%`: the value in the unit people read.
    pub fn shown_actual(&self) -> String {
        match self.actual {
            None => "no value".to_string(),
            Some(v) if self.unit == "fraction" => format!("{:.1}%", v * 100.0),
            Some(v) if self.unit == "ms" => format!("{v:.2} ms"),
            Some(v) if self.unit == "count" => format!("{v:.0}"),
            Some(v) => format!("{v:.2} {}", self.unit),
        }
    }
}
