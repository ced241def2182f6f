//! Where results go: one directory per load level (GenAI-Perf's layout and names), plus the
//! sweep's `summary.csv` next to them.
//!
//! Per level: `profile_export_genai_perf.csv`, `profile_export_genai_perf.json`,
//! `requests.jsonl` (streamed during the run), `histograms.json` (serialized HDR histograms) and
//! `timeline.csv` (one row per `--timeline-interval`, for drift over long runs).
//! Per sweep: `summary.csv` (one row per level), `summary.json` (the same levels with their
//! directories, the server-side verdict and the plan) and `pareto.csv` ([`pareto`]); a search
//! adds `search.json` ([`search`]). A `--shard` run adds `shard.json` to every
//! level directory ([`shard`]) and writes under `artifacts/shard{I}-of-{N}/` by default.

pub mod atomic;
pub mod bulk_file;
pub mod escape;
pub mod genai_perf;
pub mod genai_perf_dir;
pub mod histograms;
pub mod lines;
pub mod loaded;
pub mod pareto;
pub mod raw_export;
pub mod raw_spill;
pub mod read;
pub mod records;
pub mod repeat;
pub mod search;
pub mod server_view;
pub mod shard;
pub mod summary;
pub mod timeline;

use std::path::{Path, PathBuf};

pub use atomic::write_atomic;

/// Creates `dir` and proves a file can be written in it, before anything is sent: a run that
/// could not keep its results is a usage mistake (exit 2), not a failure found after the load.
pub fn ensure_writable(dir: &Path) -> crate::error::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| unwritable(dir, e))?;
    probe(dir).map_err(|e| unwritable(dir, e))
}

/// The usage error for a directory results cannot be written under, and why.
fn unwritable(dir: &Path, why: impl std::fmt::Display) -> crate::error::Error {
    crate::error::Error::usage(format!(
        "--artifact-dir: cannot write results under {}: {why}; choose a directory you can write \
         (nothing was sent)",
        dir.display()
    ))
}

/// Writes an empty file in `dir` and removes it again.
fn probe(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".ttftbench-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Proves, before anything is sent, that every level of a run can keep its results: the first
/// level's directory is made and written to ([`ensure_writable`]); for the others, nothing may
/// be in the way (a file where a directory goes) and the nearest directory that exists takes a
/// new file. Those are made when their level starts, so a run stopped early leaves no empty
/// level directories behind.
pub fn ensure_levels_writable(dirs: &[PathBuf]) -> crate::error::Result<()> {
    let Some((first, rest)) = dirs.split_first() else {
        return Ok(());
    };
    ensure_writable(first)?;
    rest.iter().try_for_each(|d| check_creatable(d))
}

/// Whether `dir` could be created and written in, without creating it.
fn check_creatable(dir: &Path) -> crate::error::Result<()> {
    let refuse = |why: String| unwritable(dir, why);
    let mut existing = dir;
    loop {
        match std::fs::metadata(existing) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(refuse(format!(
                    "{} is a file, not a directory",
                    existing.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                existing = match existing.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
            }
            Err(e) => return Err(refuse(e.to_string())),
        }
    }
    probe(existing).map_err(|e| refuse(format!("{}: {e}", existing.display())))
}

/// Writes a whole artifact atomically (see [`atomic`]): a reader never sees half of it.
pub fn write_file(path: &Path, bytes: impl AsRef<[u8]>) -> crate::error::Result<()> {
    Ok(write_atomic(path, bytes)?)
}

impl From<atomic::WriteError> for crate::error::Error {
    /// The message already names the file and the cause; it is shown once.
    fn from(e: atomic::WriteError) -> Self {
        crate::error::Error::failed(e.to_string())
    }
}

impl From<lines::LinesError> for crate::error::Error {
    /// The message already names the file and how much of it was saved; it is shown once.
    fn from(e: lines::LinesError) -> Self {
        crate::error::Error::failed(e.to_string())
    }
}

use crate::load::Stimulus;
use crate::plan::RunPlan;

/// The version of the JSON files ttftbench writes (`schema_version` in each: level and sweep
/// JSON, histograms, shard records, the raw export and its inputs): raised when a field changes
/// meaning or goes away; new fields do not raise it. Files without it were written before 2.
pub const SCHEMA_VERSION: u32 = 2;

/// Adds `schema_version` to a JSON object (the files ttftbench writes).
pub fn stamp(doc: &mut serde_json::Value) {
    if let serde_json::Value::Object(m) = doc {
        m.insert("schema_version".into(), SCHEMA_VERSION.into());
    }
}

/// File names inside a level directory.
pub const CSV_FILE: &str = "profile_export_genai_perf.csv";
/// GenAI-Perf JSON export.
pub const JSON_FILE: &str = "profile_export_genai_perf.json";
/// The run's flags as a config file (`--config run.toml` repeats the run; see `cli::config`).
pub const RUN_CONFIG_FILE: &str = "run.toml";
/// Per-request rows.
pub const RECORDS_FILE: &str = "requests.jsonl";
/// Serialized histograms.
pub const HISTOGRAMS_FILE: &str = "histograms.json";
/// Files of a level directory besides GenAI-Perf's three (whose names `--profile-export-file`
/// sets): what that flag may not be named.
pub const OTHER_LEVEL_FILES: [&str; 7] = [
    RECORDS_FILE,
    HISTOGRAMS_FILE,
    TIMELINE_FILE,
    raw_export::INPUTS_FILE,
    RUN_CONFIG_FILE,
    shard::SHARD_FILE,
    REPORT_FILE,
];

/// The HTML report of a sweep (or of one level with `--generate-plots`).
pub const REPORT_FILE: &str = "report.html";
/// One row per interval of the level.
pub const TIMELINE_FILE: &str = "timeline.csv";
/// Sweep summary table.
pub const SUMMARY_FILE: &str = "summary.csv";
/// Sweep summary with the verdict, machine-readable.
pub const SUMMARY_JSON_FILE: &str = "summary.json";

/// Placeholders `--artifact-dir` may contain; the level ones give each level its own directory.
const LEVEL_PLACEHOLDERS: [&str; 3] = ["{concurrency}", "{rate}", "{level}"];

/// Resolves artifact directories for a run.
#[derive(Debug, Clone)]
pub struct Layout {
    template: Option<String>,
    /// Where levels go without `--artifact-dir`.
    root: PathBuf,
    base_name: String,
    levels: usize,
    timestamp: String,
}

impl Layout {
    /// Layout for `plan`, with `timestamp` substituted for `{timestamp}`.
    pub fn new(plan: &RunPlan, timestamp: String) -> Layout {
        let t = &plan.target;
        let base_name = format!(
            "{}-{}-{}",
            t.model.replace('/', "_"),
            t.api.service_kind(),
            t.dir_tag()
        );
        let shard = plan.shard.shard;
        let template = plan.artifact_dir.as_ref().map(|p| {
            p.to_string_lossy()
                .replace("{timestamp}", &timestamp)
                .replace("{model}", &t.model.replace('/', "_"))
                .replace("{shard}", &shard.index.to_string())
        });
        // Shards started on one machine must not write into each other's directories.
        let root = if shard.is_whole() {
            PathBuf::from("artifacts")
        } else {
            Path::new("artifacts").join(format!("shard{}-of-{}", shard.index, shard.count))
        };
        Layout {
            template,
            root,
            base_name,
            levels: plan.levels.len(),
            timestamp,
        }
    }

    /// The `{timestamp}` value used.
    pub fn timestamp(&self) -> &str {
        &self.timestamp
    }

    fn has_level_placeholder(&self) -> bool {
        self.template
            .as_deref()
            .is_some_and(|t| LEVEL_PLACEHOLDERS.iter().any(|p| t.contains(p)))
    }

    /// GenAI-Perf's directory name for a level (`gpt2-triton-tensorrtllm-concurrency8`).
    pub fn level_name(&self, s: &Stimulus) -> String {
        format!("{}-{}", self.base_name, s.name())
    }

    /// The directory of one level.
    pub fn level_dir(&self, s: &Stimulus) -> PathBuf {
        match &self.template {
            Some(t) if self.has_level_placeholder() => PathBuf::from(expand_level(t, s)),
            Some(t) if self.levels == 1 => PathBuf::from(t),
            Some(t) => Path::new(t).join(self.level_name(s)),
            None => self.root.join(self.level_name(s)),
        }
    }

    /// Where sweep-wide files go: the part of the template before the first per-level
    /// component, the template itself, or `artifacts/`.
    pub fn sweep_dir(&self) -> PathBuf {
        match &self.template {
            Some(t) if self.has_level_placeholder() => {
                let (dir, _) = split_at_level(t);
                if dir.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    dir
                }
            }
            Some(t) => PathBuf::from(t),
            None => self.root.clone(),
        }
    }

    /// The `--artifact-dir` of repetition `k` (1-based) of a `--repeat` run of `levels`: `rep{k}`
    /// inside the directory that holds the sweep's files (for a single level, inside the level's
    /// own directory), the per-level part of a template kept below it. The timestamp is already
    /// in: every repetition writes under the same run directory, and the combined levels go
    /// where a single run's would.
    pub fn repetition(&self, k: u32, levels: &[Stimulus]) -> PathBuf {
        let rep = format!("rep{k}");
        match (&self.template, levels) {
            (Some(t), _) if self.has_level_placeholder() => {
                self.sweep_dir().join(rep).join(split_at_level(t).1)
            }
            (_, [one]) => self.level_dir(one).join(rep),
            _ => self.sweep_dir().join(rep),
        }
    }
}

/// A template split at its first per-level component: the directories above it, and the rest.
fn split_at_level(t: &str) -> (PathBuf, PathBuf) {
    let parts: Vec<_> = Path::new(t).components().collect();
    let at = parts
        .iter()
        .position(|c| {
            let c = c.as_os_str().to_string_lossy();
            LEVEL_PLACEHOLDERS.iter().any(|p| c.contains(p))
        })
        .unwrap_or(parts.len());
    (parts[..at].iter().collect(), parts[at..].iter().collect())
}

fn expand_level(t: &str, s: &Stimulus) -> String {
    // A concurrency's whole number prints without a fraction (`8`), a rate as given (`2.5`).
    let value = s.value().to_string();
    t.replace("{concurrency}", &value)
        .replace("{rate}", &value)
        .replace("{level}", &s.name())
}

/// A layout whose `{timestamp}` directory does not exist yet: a run started within the same
/// second as an earlier one gets `_2`, `_3`, ... after the timestamp instead of overwriting it
/// (the suffixed name still sorts between that second and the next).
pub fn fresh_layout(plan: &RunPlan, timestamp: &str) -> Layout {
    let uses_timestamp = plan
        .artifact_dir
        .as_ref()
        .is_some_and(|p| p.to_string_lossy().contains("{timestamp}"));
    let mut layout = Layout::new(plan, timestamp.to_string());
    if !uses_timestamp {
        return layout;
    }
    let probe = |l: &Layout| match plan.levels.as_slice() {
        [one] => l.level_dir(one),
        _ => l.sweep_dir(),
    };
    let mut n = 2;
    while probe(&layout).exists() && n < 1000 {
        layout = Layout::new(plan, format!("{timestamp}_{n}"));
        n += 1;
    }
    layout
}

/// Local time as `YYYYMMDD_HHMMSS` (the seeds' `date +%Y%m%d_%H%M` with seconds), in the time
/// zone `TZ` or the system names.
pub fn local_timestamp() -> String {
    jiff::ZonedDateTime::now()
        .strftime("%Y%m%d_%H%M%S")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The plan of `ttftbench profile -m MODEL ARGS`.
    fn plan(model: &str, args: &[&str]) -> RunPlan {
        let mut argv = vec!["ttftbench", "profile", "-m", model];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(&argv).unwrap();
        let crate::cli::Command::Profile(p) = cli.command else {
            panic!("expected profile")
        };
        p.plan(&[]).unwrap()
    }

    /// The layout of `ttftbench profile -m org/model FLAGS` (flags split at white space).
    fn layout(flags: &str) -> Layout {
        let args: Vec<&str> = flags.split_whitespace().collect();
        Layout::new(&plan("org/model", &args), "20261129_1200".into())
    }

    /// Names follow GenAI-Perf's; shards write apart; an explicit directory of one level holds
    /// its files, of a sweep its subdirectories; placeholders are filled.
    #[test]
    fn level_and_sweep_dirs() {
        // (flags, the level's concurrency and directory, the sweep directory)
        type Case = (
            &'static str,
            Option<(u32, &'static str)>,
            Option<&'static str>,
        );
        let cases: &[Case] = &[
            (
                "--concurrency 8",
                Some((8, "artifacts/org_model-triton-tensorrtllm-concurrency8")),
                None,
            ),
            (
                "--endpoint-type chat --concurrency 1,2",
                Some((2, "artifacts/org_model-openai-chat-concurrency2")),
                Some("artifacts"),
            ),
            (
                "--concurrency 8 --shard 1/4",
                Some((
                    8,
                    "artifacts/shard1-of-4/org_model-triton-tensorrtllm-concurrency8",
                )),
                None,
            ),
            (
                "--shard 2/4 --artifact-dir /results/s{shard} --concurrency 1,2",
                None,
                Some("/results/s2"),
            ),
            ("--artifact-dir ./ttft_c1", Some((1, "./ttft_c1")), None),
            (
                "--artifact-dir out --concurrency 1:4",
                Some((4, "out/org_model-triton-tensorrtllm-concurrency4")),
                Some("out"),
            ),
            (
                "--artifact-dir ./bench/{timestamp}/c{concurrency} --concurrency 1,8,32",
                Some((8, "./bench/20261129_1200/c8")),
                Some("./bench/20261129_1200"),
            ),
        ];
        for (args, level, sweep) in cases {
            let l = layout(args);
            if let Some((c, dir)) = level {
                let got = l.level_dir(&Stimulus::Concurrency(*c));
                assert_eq!(got, PathBuf::from(dir), "{args:?}");
            }
            if let Some(dir) = sweep {
                assert_eq!(l.sweep_dir(), PathBuf::from(dir), "{args:?}");
            }
        }
    }

    #[test]
    fn repetitions_write_below_the_run_directory() {
        // (flags, repetition, the levels' concurrencies, where it writes)
        let cases: &[(&str, u32, &[u32], &str)] = &[
            ("--concurrency 1,2", 2, &[1, 2], "artifacts/rep2"),
            (
                "--concurrency 4",
                1,
                &[4],
                "artifacts/org_model-triton-tensorrtllm-concurrency4/rep1",
            ),
            (
                "--concurrency 1,2 --artifact-dir b/{timestamp}",
                3,
                &[1, 2],
                "b/20261129_1200/rep3",
            ),
            (
                "--concurrency 1,2 --artifact-dir b/{timestamp}/c{concurrency}",
                1,
                &[1, 2],
                "b/20261129_1200/rep1/c{concurrency}",
            ),
            (
                "--concurrency 1,2 --artifact-dir {level}",
                1,
                &[1, 2],
                "./rep1/{level}",
            ),
        ];
        for (args, k, cs, want) in cases {
            let levels: Vec<Stimulus> = cs.iter().map(|&c| Stimulus::Concurrency(c)).collect();
            let got = layout(args).repetition(*k, &levels);
            assert_eq!(got, PathBuf::from(want), "{args:?}");
        }
    }

    #[test]
    fn same_second_runs_do_not_overwrite() {
        let tmp = tempfile::tempdir().unwrap();
        let template = format!(
            "{}/bench/{{timestamp}}/c{{concurrency}}",
            tmp.path().display()
        );
        let plan = plan(
            "gpt2",
            &["--concurrency", "1,8", "--artifact-dir", template.as_str()],
        );
        let first = fresh_layout(&plan, "20261129_1200");
        assert_eq!(first.sweep_dir(), tmp.path().join("bench/20261129_1200"));
        std::fs::create_dir_all(first.sweep_dir()).unwrap();
        let second = fresh_layout(&plan, "20261129_1200");
        assert_eq!(second.timestamp(), "20261129_1200_2");
        assert_eq!(second.sweep_dir(), tmp.path().join("bench/20261129_1200_2"));
        // Without {timestamp} the directory is the user's to reuse.
        let l = layout("--artifact-dir ./ttft_c1");
        assert_eq!(l.timestamp(), "20261129_1200");
    }

    #[test]
    fn timestamp_shape() {
        let t = local_timestamp();
        assert_eq!(t.len(), 15, "{t}");
        assert_eq!(&t[8..9], "_");
    }
}
