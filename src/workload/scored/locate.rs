//! Which files `--accuracy-dataset` names, offline: nothing is downloaded.
//!
//! * A file (`.jsonl`, `.parquet`, `.arrow`): its rows are the questions; the few-shot examples
//!   are its first rows.
//! * A directory: the files of the graded split below it (the Hub's layout
//!   `<config>/<split>-00000-of-00001.parquet`, the Parquet conversion's `<config>/<split>/0000.parquet`,
//!   the `datasets` library's `<name>-<split>.arrow`, or `<split>.jsonl`), in the configuration's
//!   directory when there is one; the examples from the few-shot split's files beside them.
//! * A dataset name (`cais/mmlu`; without the flag the benchmark's own): looked for in the
//!   Hugging Face hub cache as `datasets--ORG--NAME/snapshots/<revision>/` (the `refs/main`
//!   revision first), then in the `datasets` library's Arrow cache as
//!   `ORG___NAME/<config>/<version>/<hash>/` (the newest), each then read as a directory.
//!
//! The hub caches are the tokenizer's (`HF_HUB_CACHE`, `HUGGINGFACE_HUB_CACHE`, `HF_HOME/hub`,
//! `XDG_CACHE_HOME/huggingface/hub`, `~/.cache/huggingface/hub`); the Arrow caches are
//! `HF_DATASETS_CACHE`, `HF_HOME/datasets`, `XDG_CACHE_HOME/huggingface/datasets` and
//! `~/.cache/huggingface/datasets`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::ScoredError;
use crate::workload::tokenizer::{HubEnv, hub};

/// Where Hugging Face keeps datasets on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatasetCaches {
    /// Hub caches (`datasets--ORG--NAME` directories).
    pub hub: Vec<PathBuf>,
    /// The `datasets` library's Arrow caches (`ORG___NAME` directories).
    pub arrow: Vec<PathBuf>,
}

impl DatasetCaches {
    /// The caches this process's environment points at.
    pub fn from_process() -> DatasetCaches {
        DatasetCaches::from_vars(|k| std::env::var_os(k))
    }

    /// The caches an environment (a variable lookup) points at.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> DatasetCaches {
        DatasetCaches {
            hub: HubEnv::from_vars(&var).caches,
            arrow: hub::cache_dirs(&var, &["HF_DATASETS_CACHE"], "datasets"),
        }
    }
}

/// What a dataset is asked for with.
#[derive(Debug, Clone, Copy)]
pub struct Want<'a> {
    /// `--accuracy-dataset` (a path or a dataset name).
    pub spec: &'a str,
    /// The configuration (subset) directory to prefer, when there are several.
    pub config: Option<&'a str>,
    /// The graded split.
    pub split: &'a str,
    /// The split few-shot examples come from.
    pub shots_split: &'a str,
}

/// The files found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The graded split's files, in name order.
    pub graded: Vec<PathBuf>,
    /// The few-shot split's files (empty: take the examples from the first graded rows).
    pub shots: Vec<PathBuf>,
}

/// The files `want` names (see the module's notes), or every place looked at.
pub fn locate(want: &Want, caches: &DatasetCaches) -> Result<Found, ScoredError> {
    let given = Path::new(want.spec);
    if given.is_file() {
        return Ok(Found {
            graded: vec![given.to_path_buf()],
            shots: Vec::new(),
        });
    }
    if given.is_dir() {
        return in_dir(given, want).ok_or_else(|| no_split(given, want));
    }
    let mut tried = vec![given.to_path_buf()];
    let Some((hub_dir, arrow_dir)) = cache_names(want.spec) else {
        return Err(not_found(want, &tried));
    };
    for cache in &caches.hub {
        let repo = cache.join(&hub_dir);
        let snaps = hub::snapshots(&repo);
        tried.push(repo);
        for snap in snaps {
            if let Some(f) = in_dir(&snap, want) {
                return Ok(f);
            }
        }
    }
    for cache in &caches.arrow {
        let root = cache.join(&arrow_dir);
        let config = want.config.unwrap_or("default");
        let builds = builds(&root.join(config), 2);
        tried.push(root.join(config));
        for build in builds {
            if let Some(f) = in_dir(&build, want) {
                return Ok(f);
            }
        }
    }
    Err(not_found(want, &tried))
}

/// `datasets--ORG--NAME` and `ORG___NAME` for a dataset name; `None` for what can only be a
/// path.
fn cache_names(spec: &str) -> Option<(String, String)> {
    let name = hub::repo_name(spec, &[".jsonl", ".json", ".parquet", ".arrow"])?;
    Some((format!("datasets--{name}"), spec.replace('/', "___")))
}

/// The split's files below `dir` (and the few-shot split's), when it has the graded split.
fn in_dir(dir: &Path, want: &Want) -> Option<Found> {
    let mut files = Vec::new();
    walk(dir, 4, &mut files);
    files.sort();
    // A configuration's directory, when one of that name holds files, narrows the choice.
    if let Some(config) = want.config {
        let under: Vec<PathBuf> = files
            .iter()
            .filter(|f| {
                f.strip_prefix(dir)
                    .is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == config))
            })
            .cloned()
            .collect();
        if !under.is_empty() {
            files = under;
        }
    }
    let graded = of_split(&files, want.split);
    (!graded.is_empty()).then(|| Found {
        shots: of_split(&files, want.shots_split),
        graded,
    })
}

/// Files holding `split`, of one format (Parquet, then Arrow, then JSONL, whichever comes first).
fn of_split(files: &[PathBuf], split: &str) -> Vec<PathBuf> {
    for ext in ["parquet", "arrow", "jsonl"] {
        let hits: Vec<PathBuf> = files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == ext) && names_split(f, split))
            .cloned()
            .collect();
        if !hits.is_empty() {
            return hits;
        }
    }
    Vec::new()
}

/// Whether a file's name (or its directory's) says it holds `split`: `test.jsonl`,
/// `test-00000-of-00001.parquet`, `mmlu-test.arrow`, `mmlu-test-00000-of-00002.arrow`,
/// `test/0000.parquet`.
fn names_split(f: &Path, split: &str) -> bool {
    let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let parent = f
        .parent()
        .and_then(Path::file_name)
        .and_then(|s| s.to_str())
        .unwrap_or("");
    stem == split
        || stem.starts_with(&format!("{split}-"))
        || stem.ends_with(&format!("-{split}"))
        || stem.contains(&format!("-{split}-"))
        || parent == split
}

/// Every file below `dir`, `depth` levels down at most.
fn walk(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if depth > 0 {
                walk(&p, depth - 1, out);
            }
        } else {
            out.push(p);
        }
    }
}

/// The directories `depth` levels below `dir` (the Arrow cache's `<version>/<hash>`), newest
/// first.
fn builds(dir: &Path, depth: u32) -> Vec<PathBuf> {
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..depth {
        level = level
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flat_map(|rd| rd.flatten().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
    }
    hub::newest_first(level)
}

fn no_split(dir: &Path, want: &Want) -> ScoredError {
    ScoredError(format!(
        "--accuracy-dataset {}: no .parquet, .arrow or .jsonl file of the {} split below it (looked for names like {0}-00000-of-00001.parquet, NAME-{0}.arrow, {0}.jsonl, or a {0}/ directory); give the split's file, or --accuracy-split NAME",
        dir.display(),
        want.split
    ))
}

fn not_found(want: &Want, tried: &[PathBuf]) -> ScoredError {
    let lines: Vec<String> = tried.iter().map(|p| format!("  {}", p.display())).collect();
    let list = lines.join("\n");
    ScoredError(format!(
        "--accuracy-dataset {}: no such file or directory, and no copy of it in the Hugging Face caches; looked at:\n{list}\ngive a .jsonl, .parquet or .arrow file (or a directory of them), or fetch the dataset on a machine with internet (`huggingface-cli download --repo-type dataset {}`) and copy its cache here",
        want.spec, want.spec
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want<'a>(spec: &'a str, config: Option<&'a str>) -> Want<'a> {
        Want {
            spec,
            config,
            split: "test",
            shots_split: "dev",
        }
    }

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    /// `cais/mmlu` in a hub cache: the `refs/main` snapshot's `all/` configuration, test and dev
    /// splits.
    #[test]
    fn hub_cache_layout() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("hub/datasets--cais--mmlu");
        let snap = repo.join("snapshots/c30699e");
        for f in [
            "all/test-00000-of-00001.parquet",
            "all/dev-00000-of-00001.parquet",
            "all/validation-00000-of-00001.parquet",
            "anatomy/test-00000-of-00001.parquet",
        ] {
            touch(&snap.join(f));
        }
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), "c30699e").unwrap();
        let caches = DatasetCaches {
            hub: vec![dir.path().join("elsewhere"), dir.path().join("hub")],
            arrow: vec![],
        };
        let f = locate(&want("cais/mmlu", Some("all")), &caches).unwrap();
        assert_eq!(f.graded, [snap.join("all/test-00000-of-00001.parquet")]);
        assert_eq!(f.shots, [snap.join("all/dev-00000-of-00001.parquet")]);
        let f = locate(&want("cais/mmlu", Some("anatomy")), &caches).unwrap();
        assert_eq!(f.graded, [snap.join("anatomy/test-00000-of-00001.parquet")]);
        assert!(f.shots.is_empty(), "anatomy has no dev split here");
        // The snapshot directory itself, given as a path.
        let f = locate(&want(snap.to_str().unwrap(), Some("all")), &caches).unwrap();
        assert_eq!(f.graded, [snap.join("all/test-00000-of-00001.parquet")]);
    }

    /// The `datasets` library's Arrow cache: `ORG___NAME/<config>/<version>/<hash>/NAME-<split>.arrow`.
    #[test]
    fn arrow_cache_layout() {
        let dir = tempfile::tempdir().unwrap();
        let build = dir
            .path()
            .join("datasets/openai___gsm8k/main/0.0.0/e53f048856ff4f59");
        touch(&build.join("gsm8k-test.arrow"));
        touch(&build.join("gsm8k-train-00000-of-00002.arrow"));
        touch(&build.join("gsm8k-train-00001-of-00002.arrow"));
        touch(&build.join("dataset_info.json"));
        let caches = DatasetCaches::from_vars(|k| match k {
            "HF_HOME" => Some(dir.path().into()),
            _ => None,
        });
        let w = Want {
            spec: "openai/gsm8k",
            config: Some("main"),
            split: "test",
            shots_split: "train",
        };
        let f = locate(&w, &caches).unwrap();
        assert_eq!(f.graded, [build.join("gsm8k-test.arrow")]);
        assert_eq!(f.shots.len(), 2);
    }

    #[test]
    fn refusals_name_what_was_tried() {
        let dir = tempfile::tempdir().unwrap();
        let caches = DatasetCaches {
            hub: vec![dir.path().join("hub")],
            arrow: vec![dir.path().join("ds")],
        };
        let e = locate(&want("cais/mmlu", Some("all")), &caches).unwrap_err();
        for p in [
            "hub/datasets--cais--mmlu",
            "ds/cais___mmlu/all",
            "huggingface-cli download",
        ] {
            assert!(e.0.contains(p), "{e}");
        }
        touch(&dir.path().join("d/train.jsonl"));
        let e = locate(&want(dir.path().join("d").to_str().unwrap(), None), &caches).unwrap_err();
        assert!(
            e.0.contains("no .parquet, .arrow or .jsonl file of the test split"),
            "{e}"
        );
        assert_eq!(cache_names("./x.jsonl"), None);
    }
}
