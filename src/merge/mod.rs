//! `ttftbench merge DIR... -o OUT`: the shards of one run (`--shard I/N`) added up into the
//! files one process running the whole plan writes — per level the GenAI-Perf CSV and JSON,
//! `histograms.json`, `requests.jsonl` and `timeline.csv`; for a sweep `summary.csv`,
//! `summary.json` and `report.html` — so `report` and `compare` read the result like any run.
//!
//! Every percentile comes from the sum of the shards' HDR histograms (adding HDR histograms is
//! exact at their recorded precision: the sum equals the histogram of all the requests);
//! throughput is the union's requests over the union's window; the server's view is taken once;
//! a level is untrustworthy when any shard was, or when the shards did not run together
//! ([`level`]). The merged JSON says how many shards there were, their start skew and each one's
//! requests and errors (`shards`). Mixed runs, missing or repeated shards and directories that
//! are not shard output are refused before anything is written ([`inputs`]). When every loaded
//! shard of a level has GenAI-Perf's raw export (`profile_export.json`), the merged level gets
//! one holding all their requests ([`raw_export`], streamed). Shards of `perf` also give
//! `perf.csv`, perf_analyzer's `-f` CSV of the union ([`perf`]).

pub mod inputs;
pub mod level;
pub mod perf;
pub mod raw_export;
pub mod records;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::analysis::knee::{self, Analysis};
use crate::analysis::verdict::{self, Verdict};
use crate::artifact;
use crate::artifact::write_file;
use crate::error::{Error, Result, create_dir};
use crate::metrics::PercentileMethod;
use crate::perf::files::PerfSection;
use crate::stats::{Aggregate, LevelSummary};
use inputs::Member;
use level::{MergedLevel, Rules, ShardLevel};

/// What the shards' recorded plan says about summarizing and writing the merged run.
#[derive(Debug, Clone)]
pub struct PlanView {
    /// The plan as recorded (`input_config`), without the shard index.
    pub input_config: Value,
    /// Its identity.
    pub plan_id: String,
    /// How levels are summarized.
    pub rules: Rules,
    /// Timeline row length.
    pub timeline_every: Duration,
    /// Knee detection's minimum gain.
    pub knee_min_gain: f64,
    /// Levels in the plan.
    pub levels: usize,
}

impl PlanView {
    /// Reads the plan's settings from a shard level's JSON document.
    pub fn from_level_json(doc: &Value, plan_id: &str) -> PlanView {
        let mut cfg = doc.get("input_config").cloned().unwrap_or(Value::Null);
        if let Some(s) = cfg.get_mut("shard").and_then(Value::as_object_mut) {
            s.remove("index");
        }
        let slos = cfg["slos"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter_map(|s| crate::metrics::parse(s).ok())
                    .collect()
            })
            .unwrap_or_default();
        let method: PercentileMethod = doc
            .pointer("/level/percentile_method")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        PlanView {
            rules: Rules {
                goodput: cfg["goodput"].as_array().is_some_and(|g| !g.is_empty()),
                method,
                slos,
            },
            timeline_every: Duration::from_secs_f64(
                cfg["timeline_interval"]
                    .as_f64()
                    .filter(|s| *s > 0.0)
                    .unwrap_or(1.0),
            ),
            knee_min_gain: cfg["knee_min_gain"].as_f64().unwrap_or(0.10),
            levels: cfg["levels"].as_array().map_or(1, Vec::len),
            plan_id: plan_id.to_string(),
            input_config: cfg,
        }
    }
}

/// One merged level and where it was written.
#[derive(Debug, Clone)]
pub struct WrittenLevel {
    /// Its numbers.
    pub merged: MergedLevel,
    /// Its directory.
    pub dir: PathBuf,
}

/// What a merge produced.
#[derive(Debug, Clone)]
pub struct Merged {
    /// Levels in plan order.
    pub levels: Vec<WrittenLevel>,
    /// The server-side verdict over the levels.
    pub verdict: Verdict,
    /// The knee of the sweep.
    pub knee: Analysis,
    /// Things the user should know that did not stop the merge.
    pub notices: Vec<String>,
    /// perf shards: perf_analyzer's numbers of every merged level, written to `perf.csv`.
    pub perf: Vec<crate::perf::PerfLevel>,
}

/// Merges the shard directories `args` into `out`.
pub fn run(args: &[PathBuf], out: &Path) -> Result<Merged> {
    let groups = inputs::gather(args)?;
    refuse_output_inside(args, out)?;
    let mut levels = Vec::new();
    let mut notices = Vec::new();
    let mut plan: Option<PlanView> = None;
    let mut perf_levels = Vec::new();
    for g in &groups {
        let (shards, doc, sections) = read_group(g)?;
        let view = match (&plan, doc) {
            (Some(p), _) => p.clone(),
            (None, Some(doc)) => PlanView::from_level_json(&doc, &g[0].record.plan_id),
            (None, None) => continue,
        };
        let merged = level::merge(g[0].record.level.stimulus, &shards, &view.rules);
        let dir = if view.levels > 1 {
            out.join(level_dir_name(&g[0]))
        } else {
            out.to_path_buf()
        };
        let written = write_level(&dir, &merged, &view, g)?;
        // Fewer rows than histogram counts: a file was cut short. More is perf's way: its rows
        // include requests that completed outside the reported windows.
        let expected = merged.agg.ok + merged.agg.error_count();
        if written.measured < expected {
            notices.push(format!(
                "{}: the shards' requests.jsonl hold {} measured requests, their histograms {expected}: a requests file was cut short",
                merged.summary.stimulus.name(),
                written.measured
            ));
        }
        if g[0].record.mode == "perf"
            && let Some(section) = perf::combine(&sections, merged.shards.server_metrics_from)
        {
            let pv = perf::PerfView::from_config(&view.input_config);
            perf_levels.push(perf::level(&merged, &section, pv, view.rules.method));
        }
        notices.extend(raw_export::merge_level(g, &dir, merged.summary.stimulus)?);
        levels.push(WrittenLevel { merged, dir });
        plan.get_or_insert(view);
    }
    let Some(plan) = plan else {
        return Err(Error::usage(
            "nothing to merge: every shard was idle at every level given (their shard.json files say why)",
        ));
    };
    if levels.len() < plan.levels {
        notices.push(format!(
            "the plan has {} levels and the directories hold {}: the shards stopped early (or not every level's directory was given)",
            plan.levels,
            levels.len()
        ));
    }
    let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.merged.summary.clone()).collect();
    let verdict = verdict::verdict(&summaries);
    let knee = knee::analyze(&summaries, plan.knee_min_gain);
    if !perf_levels.is_empty() {
        let pv = perf::PerfView::from_config(&plan.input_config);
        write_file(&out.join(perf::PERF_CSV_FILE), perf::csv(&perf_levels, pv))?;
    }
    if plan.levels > 1 {
        write_sweep(out, &levels, &plan, (&verdict, &knee), args)?;
    }
    Ok(Merged {
        levels,
        verdict,
        knee,
        notices,
        perf: perf_levels,
    })
}

/// Writing into a shard's own directory would mix the merged files with its own.
fn refuse_output_inside(args: &[PathBuf], out: &Path) -> Result<()> {
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    let Some(o) = canon(out) else {
        return Ok(());
    };
    for a in args {
        if let Some(a) = canon(a)
            && (o.starts_with(&a) || a.starts_with(&o))
        {
            return Err(Error::usage(format!(
                "-o {}: the output must not be inside a shard's directory or contain one ({}); choose another directory",
                out.display(),
                a.display()
            )));
        }
    }
    Ok(())
}

/// A level directory's name for the merged sweep: shard 0's (named after the plan's level).
fn level_dir_name(m: &Member) -> String {
    m.dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| m.record.level_name())
}

/// A level's shards as read: their parts, the first loaded level JSON (the plan's record), and
/// each loaded shard's `perf` section (perf shards).
type ReadGroup = (Vec<ShardLevel>, Option<Value>, Vec<(u32, PerfSection)>);

/// Reads every shard's part of a level.
fn read_group(g: &[Member]) -> Result<ReadGroup> {
    let mut out = Vec::with_capacity(g.len());
    let mut first_doc = None;
    let mut sections = Vec::new();
    for m in g {
        let measured = if m.record.idle.is_some() {
            None
        } else {
            let (summary, agg, doc) = read_measured(&m.dir)?;
            if let Some(s) = crate::perf::files::section(&doc) {
                sections.push((m.record.shard.index, s));
            }
            first_doc.get_or_insert(doc);
            Some((summary, agg))
        };
        out.push(ShardLevel {
            dir: m.dir.display().to_string(),
            record: m.record.clone(),
            measured,
        });
    }
    Ok((out, first_doc, sections))
}

/// A shard level's summary (from its JSON) and aggregate (from `histograms.json`, which must
/// carry counters).
fn read_measured(dir: &Path) -> Result<(LevelSummary, Aggregate, Value)> {
    let read = |name: &str| -> Result<Value> {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error::usage(format!(
                "{}: cannot read {name} ({e}); the shard's level directory is incomplete",
                dir.display()
            ))
        })?;
        serde_json::from_str(&text)
            .map_err(|e| Error::usage(format!("{} is not valid JSON: {e}", path.display())))
    };
    let doc = read(artifact::JSON_FILE)?;
    let loaded = artifact::read::level_from_json(&doc, dir)?;
    let mut agg = Aggregate::new();
    let (_, counters) =
        artifact::histograms::decode(&read(artifact::HISTOGRAMS_FILE)?, &mut agg)
            .map_err(|e| Error::from(e).context(dir.join(artifact::HISTOGRAMS_FILE).display()))?;
    if !counters {
        return Err(Error::usage(format!(
            "{}: histograms.json has no counters (written by an older ttftbench); run the shards again with this version",
            dir.display()
        )));
    }
    Ok((loaded.summary, agg, doc))
}

/// The merged level's GenAI-Perf JSON: the single-run document with the plan's identity, the
/// objectives' results and the `shards` section.
pub fn level_json(m: &MergedLevel, plan: &PlanView) -> Value {
    let mut doc = artifact::genai_perf::json(&m.summary, &plan.input_config);
    if let Value::Object(map) = &mut doc {
        map.insert("ttftbench_version".into(), crate::VERSION.into());
        map.insert("plan_id".into(), plan.plan_id.clone().into());
        if !m.slo.is_empty() {
            map.insert("slo".into(), crate::analysis::slo::json(&m.slo));
        }
        map.insert("shards".into(), serde_json::json!(m.shards));
    }
    doc
}

/// Writes one merged level's files; says what the merged `requests.jsonl` held.
fn write_level(
    dir: &Path,
    m: &MergedLevel,
    plan: &PlanView,
    g: &[Member],
) -> Result<records::Written> {
    create_dir(dir)?;
    write_file(
        &dir.join(artifact::CSV_FILE),
        artifact::genai_perf::csv(&m.summary),
    )?;
    write_file(
        &dir.join(artifact::JSON_FILE),
        serde_json::to_string_pretty(&level_json(m, plan)).unwrap_or_default(),
    )?;
    write_file(
        &dir.join(artifact::HISTOGRAMS_FILE),
        serde_json::to_string(&artifact::histograms::encode(&m.agg, 0)).unwrap_or_default(),
    )?;
    let files: Vec<(u32, PathBuf)> = g
        .iter()
        .filter(|m| m.record.idle.is_none())
        .map(|m| (m.record.shard.index, m.dir.join(artifact::RECORDS_FILE)))
        .collect();
    let level = m.summary.stimulus.name();
    records::merge(
        &files,
        &records::Target {
            records: &dir.join(artifact::RECORDS_FILE),
            timeline: &dir.join(artifact::TIMELINE_FILE),
            every: plan.timeline_every,
            start_unix_ns: m.summary.started_unix_ns,
            level: &level,
            streaming: m.summary.streaming,
        },
    )
}

/// `summary.json` of the merged sweep: the single-run document with the plan's identity and,
/// per level, its `shards` section; `shards` at the top says how many and from where.
pub fn summary_json(
    out: &Path,
    levels: &[WrittenLevel],
    plan: &PlanView,
    (verdict, knee): (&Verdict, &Analysis),
    inputs: &[PathBuf],
) -> Value {
    let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.merged.summary.clone()).collect();
    let dirs: Vec<PathBuf> = levels.iter().map(|l| l.dir.clone()).collect();
    let slos: Vec<Vec<_>> = levels.iter().map(|l| l.merged.slo.clone()).collect();
    let mut doc = artifact::summary::with_decisions(
        artifact::summary::json(&summaries, &dirs, verdict, &plan.input_config),
        out,
        &dirs,
        &slos,
        knee,
    );
    if let Some(rows) = doc.get_mut("levels").and_then(Value::as_array_mut) {
        for (row, l) in rows.iter_mut().zip(levels) {
            if let Value::Object(r) = row {
                r.insert("shards".into(), serde_json::json!(l.merged.shards));
            }
        }
    }
    if let Value::Object(map) = &mut doc {
        map.insert("plan_id".into(), plan.plan_id.clone().into());
        map.insert(
            "shards".into(),
            serde_json::json!({
                "count": levels.first().map_or(0, |l| l.merged.shards.count),
                "inputs": inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            }),
        );
    }
    doc
}

/// `summary.csv`, `summary.json` and `report.html` of the merged sweep.
fn write_sweep(
    out: &Path,
    levels: &[WrittenLevel],
    plan: &PlanView,
    decisions: (&Verdict, &Analysis),
    inputs: &[PathBuf],
) -> Result<()> {
    let summaries: Vec<LevelSummary> = levels.iter().map(|l| l.merged.summary.clone()).collect();
    write_file(
        &out.join(artifact::SUMMARY_FILE),
        artifact::summary::csv(&summaries),
    )?;
    let doc = summary_json(out, levels, plan, decisions, inputs);
    write_file(
        &out.join(artifact::SUMMARY_JSON_FILE),
        serde_json::to_string_pretty(&doc).unwrap_or_default(),
    )?;
    // The page is drawn from the files just written, as `ttftbench report OUT` would.
    let run = artifact::read::read_sweep(out)?;
    let opts = crate::report::html::Options {
        knee_min_gain: plan.knee_min_gain,
        version: crate::VERSION.to_string(),
        generated_at: crate::report::html::utc(crate::record::unix_now_ns()),
    };
    write_file(
        &out.join(crate::report::html::REPORT_FILE),
        crate::report::html::render(&[run], &opts),
    )
}
