//! Reading artifact directories back: what `report` and `compare` work on.
//!
//! A directory is one of:
//!
//! * a **level**: it holds `profile_export_genai_perf.json` (or GenAI-Perf's
//!   `<stem>_genai_perf.json`), written by ttftbench or by GenAI-Perf itself
//!   ([`super::genai_perf_dir`]); so a GenAI-Perf artifact directory reads as a run;
//! * a **sweep**: it holds `summary.json`, whose `levels[].path` (relative to the sweep directory;
//!   older files only have `dir`, as the run's command line wrote it) lead to its levels;
//! * a **run made by a shell loop**: no `summary.json`, but level directories right below it
//!   (the seeds' `./bench/$TS/c$c`); when those levels repeat one load, each is a run of its own
//!   (a fixed-concurrency check written to `./bench/{timestamp}` after every change);
//! * a **timeline**: none of the above, but runs right below it (`bench/` with one directory per
//!   timestamp).
//!
//! Every level is rebuilt into a [`LevelSummary`] from its JSON, so the same knee, verdict, SLO
//! and table code serves live runs and old directories.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use serde_json::Value;

pub use super::loaded::{LoadedLevel, RecordedSlo};
use super::{JSON_FILE, SUMMARY_JSON_FILE};
use crate::error::UsageError;
use crate::load::Stimulus;
use crate::metrics::{Metric, Stat, Stats};
use crate::server_metrics::ServerDelta;
use crate::stats::{LevelStats, LevelSummary};

/// One run: the levels of one sweep (or of one shell loop), in load order.
#[derive(Debug, Clone)]
pub struct Run {
    /// Short name: the run directory's name (a timestamp in a timeline).
    pub label: String,
    /// The run's directory.
    pub dir: PathBuf,
    /// Its levels, sorted by load.
    pub levels: Vec<LoadedLevel>,
    /// The search that chose its levels, when one did (`search.json`).
    pub search: Option<super::search::SearchDoc>,
}

impl Run {
    /// The level summaries, for the knee, verdict and tables.
    pub fn summaries(&self) -> Vec<LevelSummary> {
        self.levels.iter().map(|l| l.summary.clone()).collect()
    }

    /// When the run's last level ended (Unix ns; 0 when not recorded).
    pub fn ended_unix_ns(&self) -> u64 {
        self.levels
            .iter()
            .map(|l| l.summary.ended_unix_ns)
            .max()
            .unwrap_or(0)
    }

    /// When the run started (its first level), Unix ns; 0 when unknown.
    pub fn started_unix_ns(&self) -> u64 {
        self.levels
            .iter()
            .map(|l| l.summary.started_unix_ns)
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(0)
    }

    /// Whether any level brings repetitions (`--repeat`).
    pub fn repeated(&self) -> bool {
        self.levels.iter().any(|l| !l.repetitions.is_empty())
    }

    /// The command line of the run (the first level's).
    pub fn command_line(&self) -> Option<&str> {
        self.levels.iter().find_map(|l| l.command_line.as_deref())
    }
}

/// What a directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirKind {
    /// A level's files.
    Level,
    /// A sweep's `summary.json`.
    Sweep,
    /// Neither; maybe runs or levels below it.
    Other,
}

/// A level directory's JSON: `profile_export_genai_perf.json`, or else the first
/// `<stem>_genai_perf.json` (GenAI-Perf names it after `--profile-export-file`).
pub fn level_json(dir: &Path) -> Option<PathBuf> {
    let default = dir.join(JSON_FILE);
    if default.is_file() {
        return Some(default);
    }
    let mut named: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with("_genai_perf.json"))
        })
        .collect();
    named.sort();
    named.into_iter().next()
}

/// Classifies a directory.
pub fn kind_of(dir: &Path) -> DirKind {
    if level_json(dir).is_some() {
        DirKind::Level
    } else if dir.join(SUMMARY_JSON_FILE).is_file() {
        DirKind::Sweep
    } else {
        DirKind::Other
    }
}

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

/// A whole-number field, 0 when absent.
fn whole(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// A number that fits a `u32`, when there is one.
fn u32_of(v: Option<&Value>) -> Option<u32> {
    v.and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

/// The text at a JSON pointer into `v`, when both are there.
fn text_at(v: Option<&Value>, pointer: &str) -> Option<String> {
    v.and_then(|v| v.pointer(pointer))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// A block as its type, `None` when it does not read as one (absent in older files).
fn typed<T: serde::de::DeserializeOwned>(v: &Value) -> Option<T> {
    serde_json::from_value(v.clone()).ok()
}

/// An array field's items, each read by `item`; empty when absent.
fn items<T>(v: &Value, k: &str, item: impl Fn(&Value) -> T) -> Vec<T> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(item).collect())
        .unwrap_or_default()
}

fn stats_from(v: &Value) -> Stats {
    Stats::from_fn(whole(v, "count"), |s| f(v, s.key()))
}

/// The distribution at `k`, when `v` has one there (null or absent: none).
fn dist(v: &Value, k: &str) -> Option<Stats> {
    v.get(k).filter(|v| v.is_object()).map(stats_from)
}

/// The level document's `isl_buckets` (see [`super::genai_perf`]); none in older files.
fn isl_buckets_from(doc: &Value) -> Vec<crate::stats::isl::IslBucket> {
    items(doc, "isl_buckets", |b| crate::stats::isl::IslBucket {
        min_isl: u32_of(b.get("min_isl")).unwrap_or(0),
        max_isl: u32_of(b.get("max_isl")),
        count: whole(b, "count"),
        ttft: dist(b, "time_to_first_token"),
        latency: dist(b, "request_latency"),
    })
}

/// The level document's `turns` (see [`super::genai_perf`]); none in runs without sessions.
fn turns_from(doc: &Value) -> Vec<crate::stats::turns::TurnStats> {
    items(doc, "turns", |t| crate::stats::turns::TurnStats {
        turn: u32_of(t.get("turn")).unwrap_or(0),
        and_later: t.get("and_later").and_then(Value::as_bool).unwrap_or(false),
        count: whole(t, "count"),
        ttft: dist(t, "time_to_first_token"),
        isl_avg: t["input_sequence_length"]["avg"].as_f64().unwrap_or(0.0),
        cached_avg: t["cached_prompt_tokens"]["avg"].as_f64(),
    })
}

fn server_from(v: &Value) -> Option<ServerDelta> {
    if !v.is_object() {
        return None;
    }
    let u = |k: &str| whole(v, k);
    Some(ServerDelta {
        source: match v.get("source").and_then(Value::as_str) {
            Some("statistics") => "statistics",
            _ => "prometheus",
        },
        requests: u("requests"),
        failures: u("failures"),
        executions: u("executions"),
        avg_request_ms: f(v, "avg_request_ms"),
        avg_queue_ms: v.get("avg_queue_ms").and_then(Value::as_f64),
        avg_compute_input_ms: f(v, "avg_compute_input_ms"),
        avg_compute_infer_ms: f(v, "avg_compute_infer_ms"),
        avg_compute_output_ms: f(v, "avg_compute_output_ms"),
        queue_share: v.get("queue_share").and_then(Value::as_f64),
        max_pending: f(v, "max_pending"),
    })
}

/// The load level from the JSON's `level` block; for a request rate, the arrival process and
/// in-flight cap come from the recorded plan (`input_config.levels`) when it has them.
fn stimulus_from(level: &Value, cfg: &Value, dir: &Path) -> Result<Stimulus> {
    use crate::load::Arrival;
    let kind = level["stimulus"].as_str().unwrap_or("");
    let value = level["value"].as_f64();
    let levels = cfg["levels"].as_array().map_or(&[][..], Vec::as_slice);
    match (kind, value) {
        ("concurrency", Some(v)) if v >= 1.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX) => {
            Ok(Stimulus::Concurrency(v as u32))
        }
        ("request_rate", Some(rate)) if rate > 0.0 && rate.is_finite() => {
            let planned = levels
                .iter()
                .map(|l| &l["request_rate"])
                .find(|r| r["rate"].as_f64() == Some(rate))
                .unwrap_or(&Value::Null);
            let arrival = match planned["arrival"]["kind"].as_str() {
                Some("poisson") => Arrival::Poisson,
                Some("gamma") => Arrival::Gamma {
                    shape: planned["arrival"]["shape"].as_f64().unwrap_or(1.0),
                },
                _ => Arrival::Constant,
            };
            let max_inflight = u32_of(planned.get("max_inflight")).unwrap_or(1024);
            Ok(Stimulus::RequestRate {
                rate,
                arrival,
                max_inflight,
            })
        }
        ("fixed_schedule", Some(speedup)) if speedup > 0.0 && speedup.is_finite() => {
            let planned = levels
                .iter()
                .find_map(|l| l.pointer("/fixed_schedule/max_inflight"));
            let max_inflight = u32_of(planned).unwrap_or(1024);
            Ok(Stimulus::FixedSchedule {
                speedup,
                max_inflight,
            })
        }
        _ => Err(Error::usage(format!(
            "{}: level kind '{kind}' with value {value:?} cannot be read by this version of ttftbench",
            dir.display()
        ))),
    }
}

/// The newer APIs' level numbers, where the file has them (`{unit, avg}` entries).
fn apis_from(doc: &Value) -> crate::stats::apis::ApiStats {
    let v = |k: &str| doc[k]["avg"].as_f64();
    let n = |k: &str| v(k).map(|x| x.round() as u64);
    crate::stats::apis::ApiStats {
        input_throughput: v("input_throughput"),
        input_token_throughput: v("input_token_throughput"),
        input_count: n("input_count"),
        image_count: n("image_count"),
        image_bytes: n("image_bytes"),
        tool_call_share: v("tool_call_share"),
        tool_args_valid_share: v("tool_args_valid_share"),
    }
}

/// A scored level's accuracy and changed answers, where the file has them (`accuracy` and
/// `answer_changed_share` entries, as [`super::genai_perf::accuracy_json`] writes them).
fn accuracy_from(doc: &Value) -> Option<crate::stats::scored::AccuracyStats> {
    use crate::stats::scored::{AccuracyStats, ChangedStats, Counts};
    let a = doc.get("accuracy")?;
    let x = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    let confidence = x(a, "confidence").unwrap_or(0.95);
    let changed = doc.get("answer_changed_share").map(|c| {
        let example = c.get("example").and_then(typed);
        ChangedStats::of(
            whole(c, "changed"),
            whole(c, "compared"),
            confidence,
            example,
        )
    });
    let counts = Counts {
        graded: whole(a, "graded"),
        correct: whole(a, "correct"),
        unparsed: whole(a, "unparsed"),
    };
    Some(AccuracyStats::of(counts, confidence, changed).at(confidence, x(a, "chance")))
}

/// Rebuilds a level summary from the text of `profile_export_genai_perf.json` (pure: no I/O),
/// whether ttftbench or GenAI-Perf wrote it.
pub fn level_from_json(doc: &Value, dir: &Path) -> Result<LoadedLevel> {
    if super::genai_perf_dir::is_genai_perf(doc) {
        return super::genai_perf_dir::level_from_genai_perf(doc, dir);
    }
    let level = doc.get("level").ok_or_else(|| {
        Error::usage(format!(
            "{}: no 'level' block in {JSON_FILE}",
            dir.display()
        ))
    })?;
    let cfg = doc.get("input_config");
    let stimulus = stimulus_from(level, &doc["input_config"], dir)?;
    let streaming = doc["input_config"]["target"]["streaming"]
        .as_bool()
        .unwrap_or_else(|| doc.get(Metric::TimeToFirstToken.key()).is_some());
    let metrics = Metric::ALL
        .iter()
        .filter_map(|m| {
            let v = doc.get(m.key())?;
            v.is_object().then(|| (*m, stats_from(v)))
        })
        .collect();
    let avg = |k: &str| doc.get(k).map_or(0.0, |v| f(v, "avg"));
    let count = |k: &str| doc.get(k).map_or(0, |v| whole(v, "avg"));
    let validity = doc.get("validity");
    let vcount = |k: &str| validity.map_or(0, |v| whole(v, k));
    let summary = LevelSummary {
        stimulus,
        stats: LevelStats {
            metrics,
            request_count: count("request_count"),
            error_count: count("error_count"),
            cancelled_count: count("cancelled_count"),
            abandoned_count: count("abandoned_count"),
            reconnect_count: count("reconnect_count"),
            burst_count: count("burst_count"),
            connections: doc.get("connections").and_then(typed),
            errors: items(doc, "errors", |e| typed(e).unwrap_or_default()),
            warmup_count: 0,
            duration_s: avg("benchmark_duration"),
            output_token_throughput: avg("output_token_throughput"),
            total_token_throughput: avg("total_token_throughput"),
            request_throughput: avg("request_throughput"),
            request_goodput: doc.pointer("/request_goodput/avg").and_then(Value::as_f64),
            osl_mismatch: vcount("osl_mismatch_count"),
            osl_compared: vcount("osl_compared_count"),
            isl_mismatch: vcount("isl_mismatch_count"),
            isl_compared: vcount("isl_compared_count"),
            short_outputs: vcount("short_output_count"),
            percentile_method: level.get("percentile_method").and_then(typed),
            isl_buckets: isl_buckets_from(doc),
            turns: turns_from(doc),
            sessions: doc.get("sessions").and_then(typed),
            apis: apis_from(doc),
            accuracy: accuracy_from(doc),
        },
        server: doc.get("server_metrics").and_then(server_from),
        engine: doc.get("engine_metrics").and_then(typed),
        gpu: doc.get("gpu_metrics").and_then(typed),
        streaming,
        interrupted: doc["validity"]["interrupted"].as_bool().unwrap_or(false),
        started_unix_ns: whole(level, "started_unix_ns"),
        ended_unix_ns: whole(level, "ended_unix_ns"),
        validity: validity.and_then(typed).unwrap_or_default(),
        drift: doc.get("drift").and_then(typed),
    };
    Ok(LoadedLevel {
        context: doc.get("context").and_then(typed),
        fingerprint: doc
            .get(crate::plan::fingerprint::FINGERPRINT_KEY)
            .and_then(typed),
        command_line: text_at(cfg, "/command_line"),
        version: text_at(Some(doc), "/ttftbench_version"),
        slo: items(doc, "slo", |s| typed(s).unwrap_or_default()),
        model: text_at(cfg, "/target/model"),
        api: text_at(cfg, "/target/api"),
        ..LoadedLevel::new(dir, summary)
    })
}

/// The JSON document in `path`, with the file named in the error.
fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::usage(format!("{} is not valid JSON: {e}", path.display())))
}

/// Reads one level directory.
/// A `--repeat` run's combined level also reads each repetition's level (named in its
/// `repetitions` block).
pub fn read_level(dir: &Path) -> Result<LoadedLevel> {
    let path = level_json(dir).unwrap_or_else(|| dir.join(JSON_FILE));
    let doc = read_json(&path)?;
    let mut level = level_from_json(&doc, dir)?;
    for rel in super::repeat::dirs(&doc) {
        let rep = dir.join(&rel);
        let rep_path = level_json(&rep).ok_or_else(|| {
            Error::usage(format!(
                "{}: repetition {rel} is listed but {} has no level file",
                path.display(),
                rep.display()
            ))
        })?;
        level
            .repetitions
            .push(level_from_json(&read_json(&rep_path)?, &rep)?.summary);
    }
    Ok(level)
}

fn label_of(dir: &Path) -> String {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.is_empty() || name == "." || name == ".." {
        std::fs::canonicalize(dir)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string())
    } else {
        name
    }
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn sort_levels(levels: &mut [LoadedLevel]) {
    levels.sort_by(|a, b| {
        a.summary
            .stimulus
            .value()
            .total_cmp(&b.summary.stimulus.value())
    });
}

/// Reads a sweep directory through its `summary.json`.
pub fn read_sweep(dir: &Path) -> Result<Run> {
    let path = dir.join(SUMMARY_JSON_FILE);
    let doc = read_json(&path)?;
    let rows = doc["levels"]
        .as_array()
        .ok_or_else(|| Error::usage(format!("{}: no 'levels' list", path.display())))?;
    let mut levels = Vec::with_capacity(rows.len());
    for row in rows {
        let rel = row.get("path").and_then(Value::as_str).map(|p| dir.join(p));
        let written = row.get("dir").and_then(Value::as_str).map(PathBuf::from);
        // `dir` is relative to where the run was started; the last component below the sweep
        // directory is the usual layout when the tree was moved.
        let moved = written
            .as_ref()
            .and_then(|w| w.file_name())
            .map(|n| dir.join(n));
        let found = [rel, written, moved]
            .into_iter()
            .flatten()
            .find(|p| kind_of(p) == DirKind::Level)
            .ok_or_else(|| {
                Error::usage(format!(
                    "{}: level {} is listed but its directory is missing",
                    path.display(),
                    row.get("name").and_then(Value::as_str).unwrap_or("?")
                ))
            })?;
        levels.push(read_level(&found)?);
    }
    let mut run = run_from(dir, levels);
    run.search = super::search::read(dir);
    Ok(run)
}

/// A run of `levels` (any order) kept in `dir`, named after it.
pub fn run_from(dir: &Path, mut levels: Vec<LoadedLevel>) -> Run {
    sort_levels(&mut levels);
    Run {
        label: label_of(dir),
        dir: dir.to_path_buf(),
        levels,
        search: None,
    }
}

/// A run from level directories directly below `dir` (a shell loop's output), if there are any.
fn read_loop_run(dir: &Path) -> Result<Option<Run>> {
    let levels = subdirs(dir)
        .into_iter()
        .filter(|p| kind_of(p) == DirKind::Level)
        .map(|p| read_level(&p))
        .collect::<Result<Vec<_>>>()?;
    Ok((!levels.is_empty()).then(|| run_from(dir, levels)))
}

/// The runs one directory holds: itself (a sweep, a level, a loop's run) or, for a timeline, one
/// run per subdirectory, oldest first.
pub fn runs_in(dir: &Path) -> Result<Vec<Run>> {
    if dir.is_file() {
        return file_run(dir).map(|r| vec![r]);
    }
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "{}: no such directory (give an artifact directory: a level, a sweep, or a folder of runs; or a perf_analyzer CSV file)",
            dir.display()
        ))
        .into());
    }
    match kind_of(dir) {
        DirKind::Level => Ok(vec![run_from(dir, vec![read_level(dir)?])]),
        DirKind::Sweep => Ok(vec![read_sweep(dir)?]),
        DirKind::Other => {
            if let Some(run) = read_loop_run(dir)? {
                // Level directories with distinct loads are one run (a shell loop's ladder);
                // repeats of one load are one run each (`--artifact-dir ./bench/{timestamp}`
                // at a fixed concurrency, run after every change).
                let names: std::collections::BTreeSet<String> = run
                    .levels
                    .iter()
                    .map(|l| l.summary.stimulus.name())
                    .collect();
                if names.len() == run.levels.len() {
                    return Ok(vec![run]);
                }
                let mut runs: Vec<Run> = run
                    .levels
                    .into_iter()
                    .map(|l| run_from(&l.dir.clone(), vec![l]))
                    .collect();
                sort_runs(&mut runs);
                return Ok(runs);
            }
            let mut runs = Vec::new();
            for sub in subdirs(dir) {
                match kind_of(&sub) {
                    DirKind::Sweep => runs.push(read_sweep(&sub)?),
                    DirKind::Level => {}
                    DirKind::Other => runs.extend(read_loop_run(&sub)?),
                }
            }
            if runs.is_empty() {
                return Err(UsageError(format!(
                    "{}: no ttftbench artifacts found (looked for {JSON_FILE} and {SUMMARY_JSON_FILE} in it and one level below)",
                    dir.display()
                ))
                .into());
            }
            sort_runs(&mut runs);
            Ok(runs)
        }
    }
}

/// Oldest first: by start time, then by name (timestamps sort by name too).
pub fn sort_runs(runs: &mut [Run]) {
    runs.sort_by(|a, b| {
        a.started_unix_ns()
            .cmp(&b.started_unix_ns())
            .then_with(|| a.label.cmp(&b.label))
    });
}

/// A run from a file: a perf_analyzer CSV (`perf -f`), or a sweep's own `summary.csv` /
/// `summary.json` / a level's JSON, which stand for their directory.
fn file_run(path: &Path) -> Result<Run> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if name == super::SUMMARY_FILE || name == SUMMARY_JSON_FILE {
        return read_sweep(parent);
    }
    if name == JSON_FILE
        || name == super::CSV_FILE
        || name.ends_with("_genai_perf.json")
        || name.ends_with("_genai_perf.csv")
    {
        return Ok(run_from(parent, vec![read_level(parent)?]));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    let mut levels = perf_csv_levels(&text, path)?;
    attach_perf_repetitions(path, &mut levels)?;
    let label = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut run = run_from(path, levels);
    run.label = label;
    Ok(run)
}

/// A `perf --repeat` CSV (its medians) has its spread beside it (`x.repetitions.csv`) and each
/// repetition's file in `rep{k}/`: those become each level's repetitions. A file without the
/// spread file is a single run's.
fn attach_perf_repetitions(path: &Path, levels: &mut [LoadedLevel]) -> Result<()> {
    use super::repeat::{in_repetition, repetition_count, sidecar};
    let Ok(spread) = std::fs::read_to_string(sidecar(path)) else {
        return Ok(());
    };
    for k in 1..=repetition_count(&spread) as u32 {
        let rep = in_repetition(path, k);
        let text = std::fs::read_to_string(&rep).map_err(|e| {
            Error::usage(format!(
                "{}: repetition {k} of the run ({}) cannot be read: {e}",
                path.display(),
                rep.display()
            ))
        })?;
        for r in perf_csv_levels(&text, &rep)? {
            let name = r.summary.stimulus.name();
            if let Some(l) = levels
                .iter_mut()
                .find(|l| l.summary.stimulus.name() == name)
            {
                l.repetitions.push(r.summary);
            }
        }
    }
    Ok(())
}

/// Levels of a perf_analyzer CSV (`-f FILE`, perf_analyzer's own or `ttftbench perf`'s), read by
/// column name: `Concurrency` or `Request Rate`, `Inferences/Second`, `pN latency` and
/// `Avg latency` (µs), and the server's `Server Queue` / `Server Compute *` (µs) when present.
/// The file has no request or error counts (perf_analyzer stops on errors), so each row counts
/// as measured without errors; statistics it lacks are NaN and shown as missing.
pub fn perf_csv_levels(text: &str, path: &Path) -> Result<Vec<LoadedLevel>> {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let headers = rdr
        .headers()
        .map_err(|e| Error::usage(format!("{}: no CSV header: {e}", path.display())))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    let Some(tput_col) = col("Inferences/Second") else {
        return Err(UsageError(format!(
            "{}: not a perf_analyzer CSV (no Inferences/Second column); give an artifact directory or a `perf -f` CSV",
            path.display()
        ))
        .into());
    };
    let (load_col, rate) = match (col("Concurrency"), col("Request Rate")) {
        (Some(c), _) => (c, false),
        (None, Some(c)) => (c, true),
        (None, None) => {
            return Err(UsageError(format!(
                "{}: no Concurrency or Request Rate column",
                path.display()
            ))
            .into());
        }
    };
    // The file has no start times: every row is dated by the file's modification time.
    let modified_ns = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    let cols = PerfCols {
        headers,
        load: load_col,
        tput: tput_col,
        rate,
    };
    let mut levels = Vec::new();
    for (i, rec) in rdr.records().enumerate() {
        let rec =
            rec.map_err(|e| Error::usage(format!("{}: row {}: {e}", path.display(), i + 2)))?;
        levels.push(perf_row(&rec, &cols, (path, i + 2), modified_ns)?);
    }
    if levels.is_empty() {
        return Err(UsageError(format!("{}: no rows", path.display())).into());
    }
    Ok(levels)
}

/// Where a perf_analyzer CSV keeps the load and throughput, and its header to find the rest.
struct PerfCols {
    headers: csv::StringRecord,
    load: usize,
    tput: usize,
    /// The load column is `Request Rate` (else `Concurrency`).
    rate: bool,
}

/// One row of a perf_analyzer CSV as a level: the load, throughput, latency percentiles (µs in
/// the file) and the server's phase averages; `(path, row)` for messages.
fn perf_row(
    rec: &csv::StringRecord,
    cols: &PerfCols,
    (path, row): (&Path, usize),
    modified_ns: u64,
) -> Result<LoadedLevel> {
    let num = |c: Option<usize>| -> Option<f64> {
        c.and_then(|c| rec.get(c))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let col = |name: &str| cols.headers.iter().position(|h| h.trim() == name);
    let us = |name: &str| num(col(name)).map(|v| v / 1000.0);
    let (Some(load), Some(tput)) = (num(Some(cols.load)), num(Some(cols.tput))) else {
        return Err(Error::usage(format!(
            "{}: row {row}: load or throughput is not a number",
            path.display()
        )));
    };
    let stimulus = if cols.rate {
        Stimulus::RequestRate {
            rate: load,
            arrival: crate::load::Arrival::Constant,
            max_inflight: 1024,
        }
    } else if load >= 1.0 && load.fract() == 0.0 && load <= f64::from(u32::MAX) {
        Stimulus::Concurrency(load as u32)
    } else {
        return Err(Error::usage(format!(
            "{}: row {row}: concurrency '{load}' is not a whole number",
            path.display()
        )));
    };
    let latency = Stats::from_fn(1, |s| {
        match s {
            Stat::Avg => us("Avg latency"),
            Stat::P50 | Stat::P75 | Stat::P90 | Stat::P95 | Stat::P99 => {
                us(&format!("{} latency", s.key()))
            }
            _ => None,
        }
        .unwrap_or(f64::NAN)
    });
    let server = us("Server Queue").map(|q| {
        let ci = us("Server Compute Input").unwrap_or(0.0);
        let cf = us("Server Compute Infer").unwrap_or(0.0);
        let co = us("Server Compute Output").unwrap_or(0.0);
        ServerDelta::from_phase_avgs(q, ci, cf, co)
    });
    let stats = LevelStats {
        metrics: vec![(Metric::RequestLatency, latency)],
        request_count: 1,
        request_throughput: tput,
        // perf_analyzer's CSV does not say; perf_analyzer itself uses nearest rank.
        percentile_method: None,
        ..Default::default()
    };
    let summary = LevelSummary {
        server,
        streaming: false,
        started_unix_ns: modified_ns,
        ended_unix_ns: modified_ns,
        ..LevelSummary::new(stimulus, stats)
    };
    Ok(LoadedLevel {
        api: Some("perf_analyzer CSV".into()),
        ..LoadedLevel::new(path, summary)
    })
}

/// The runs named on a command line: level directories given together form one run (the seeds'
/// `./ttft_c*`), each sweep is a run, a folder of runs adds all of them.
pub fn runs_from_args(paths: &[PathBuf]) -> Result<Vec<Run>> {
    let mut loose: Vec<LoadedLevel> = Vec::new();
    let mut runs = Vec::new();
    for p in paths {
        if p.is_dir() && kind_of(p) == DirKind::Level {
            loose.push(read_level(p)?);
        } else {
            runs.extend(runs_in(p)?);
        }
    }
    if !loose.is_empty() {
        sort_levels(&mut loose);
        let parent = common_parent(paths);
        runs.push(Run {
            label: parent
                .as_deref()
                .map_or_else(|| "levels".to_string(), label_of),
            dir: parent.unwrap_or_else(|| PathBuf::from(".")),
            levels: loose,
            search: None,
        });
    }
    sort_runs(&mut runs);
    Ok(runs)
}

fn common_parent(paths: &[PathBuf]) -> Option<PathBuf> {
    let parents: Vec<&Path> = paths.iter().filter_map(|p| p.parent()).collect();
    let first = *parents.first()?;
    parents
        .iter()
        .all(|p| *p == first)
        .then(|| first.to_path_buf())
        .filter(|p| !p.as_os_str().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ErrorCount;
    use serde_json::json;

    #[test]
    fn level_json_round_trip_through_the_encoder() {
        let summary = LevelSummary {
            server: Some(ServerDelta {
                requests: 5,
                executions: 5,
                max_pending: 3.0,
                ..ServerDelta::from_phase_avgs(2.0, 0.5, 7.0, 0.5)
            }),
            interrupted: true,
            started_unix_ns: 42,
            ended_unix_ns: 43,
            ..LevelSummary::new(
                Stimulus::Concurrency(8),
                LevelStats {
                    metrics: vec![(
                        Metric::TimeToFirstToken,
                        Stats {
                            count: 5,
                            avg: 10.0,
                            min: 9.0,
                            max: 12.0,
                            std: 0.5,
                            p1: 9.0,
                            p5: 9.0,
                            p10: 9.0,
                            p25: 9.5,
                            p50: 10.0,
                            p75: 10.5,
                            p90: 11.0,
                            p95: 11.5,
                            p99: 12.0,
                            p999: 12.0,
                        },
                    )],
                    request_count: 5,
                    error_count: 1,
                    errors: vec![ErrorCount {
                        kind: "http_503".into(),
                        count: 1,
                        example: "busy".into(),
                        hint: Some("retry".into()),
                    }],
                    duration_s: 2.0,
                    output_token_throughput: 250.0,
                    total_token_throughput: 750.0,
                    request_throughput: 2.5,
                    request_goodput: Some(2.0),
                    osl_mismatch: 1,
                    osl_compared: 1,
                    short_outputs: 2,
                    ..Default::default()
                },
            )
        };
        let cfg =
            json!({"target": {"streaming": true}, "command_line": "ttftbench profile -m gpt2"});
        let mut doc = crate::artifact::genai_perf::json(&summary, &cfg);
        doc["slo"] = json!([{"objective": "queue_share<=50%", "actual": 0.2, "unit": "fraction", "passed": true}]);
        let back = level_from_json(&doc, Path::new("x")).unwrap();
        assert_eq!(back.summary, summary);
        assert_eq!(
            back.command_line.as_deref(),
            Some("ttftbench profile -m gpt2")
        );
        assert_eq!(back.slo[0].objective, "queue_share<=50%");
        assert!(back.slo[0].passed);
    }

    #[test]
    fn request_rate_levels_read_back_with_their_arrival() {
        let doc = json!({
            "level": {"name": "request_rate2.5", "stimulus": "request_rate", "value": 2.5},
            "input_config": {"levels": [
                {"request_rate": {"rate": 1.0, "arrival": {"kind": "constant"}, "max_inflight": 8}},
                {"request_rate": {"rate": 2.5, "arrival": {"kind": "gamma", "shape": 0.5}, "max_inflight": 64}}
            ]}
        });
        let l = level_from_json(&doc, Path::new("d")).unwrap();
        assert_eq!(
            l.summary.stimulus,
            Stimulus::RequestRate {
                rate: 2.5,
                arrival: crate::load::Arrival::Gamma { shape: 0.5 },
                max_inflight: 64
            }
        );
        assert_eq!(l.summary.stimulus.name(), "request_rate2.5");
    }

    #[test]
    fn perf_analyzer_csv_levels() {
        let text = "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency\n1,540.2,20,300,100,50,1200,30,10,1700,1900,2000,2400\n4,1900,20,400,300,50,1300,30,10,2000,2300,2500,3100\n";
        let levels = perf_csv_levels(text, Path::new("sweep.csv")).unwrap();
        assert_eq!(levels.len(), 2);
        let l = &levels[1].summary;
        assert_eq!(l.stimulus, Stimulus::Concurrency(4));
        assert_eq!(l.stats.request_throughput, 1900.0);
        use crate::metrics::{MetricRef, MetricSource, Stat, SystemMetric};
        assert_eq!(
            l.metric(MetricRef::Dist(Metric::RequestLatency, Stat::P99)),
            Some(3.1)
        );
        assert!(
            l.metric(MetricRef::Dist(Metric::RequestLatency, Stat::Avg))
                .unwrap()
                .is_nan()
        );
        let q = l
            .metric(MetricRef::System(SystemMetric::QueueShare))
            .unwrap();
        assert!((q - 300.0 / 1680.0).abs() < 1e-12);
        let e = perf_csv_levels("Metric,avg\nx,1\n", Path::new("s.csv")).unwrap_err();
        assert!(format!("{e}").contains("not a perf_analyzer CSV"), "{e}");
    }

    #[test]
    fn unknown_level_kind_is_an_error() {
        let doc = json!({"level": {"name": "x", "stimulus": "bogus", "value": 1}});
        let e = level_from_json(&doc, Path::new("d")).unwrap_err();
        assert!(format!("{e}").contains("level kind 'bogus'"), "{e}");
    }
}
