//! What `--tokenizer SPEC` names: a `tokenizer.json` file, a directory holding one, or a Hugging
//! Face model name (`meta-llama/Meta-Llama-3-8B-Instruct`, as GenAI-Perf users write it) looked up
//! in the local hub cache, offline: nothing is downloaded.
//!
//! The hub cache keeps a model as `<cache>/models--ORG--NAME/` with `refs/main` (the commit the
//! `main` branch pointed at when it was downloaded) and `snapshots/<commit>/tokenizer.json`.
//! Caches are looked for where `huggingface_hub` puts them: `HF_HUB_CACHE`, the legacy
//! `HUGGINGFACE_HUB_CACHE`, `HF_HOME/hub`, `XDG_CACHE_HOME/huggingface/hub` and
//! `~/.cache/huggingface/hub`, in that order (each at most once). In each, the `refs/main`
//! snapshot comes first, then the other snapshots, newest first.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::TokenizerError;

/// Where Hugging Face caches may be: the candidate hub cache directories, in lookup order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HubEnv {
    /// Hub cache roots (each holding `models--ORG--NAME` directories), first match wins.
    pub caches: Vec<PathBuf>,
}

/// Tokenizer files other than `tokenizer.json`, named when a snapshot has only those.
const OTHER_TOKENIZER_FILES: [&str; 5] = [
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "tiktoken.model",
    "tokenizer_config.json",
];

impl HubEnv {
    /// The caches this process's environment points at.
    pub fn from_process() -> HubEnv {
        HubEnv::from_vars(|k| std::env::var_os(k))
    }

    /// The caches an environment (a variable lookup) points at.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> HubEnv {
        HubEnv {
            caches: cache_dirs(&var, &["HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"], "hub"),
        }
    }
}

/// The Hugging Face cache directories of kind `sub` (`hub`, `datasets`) an environment points
/// at, in lookup order, each once: the variables `own` names, then `HF_HOME/<sub>`,
/// `XDG_CACHE_HOME/huggingface/<sub>` and `~/.cache/huggingface/<sub>`.
pub fn cache_dirs(
    var: &impl Fn(&str) -> Option<OsString>,
    own: &[&str],
    sub: &str,
) -> Vec<PathBuf> {
    let set = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = own.iter().filter_map(|k| set(k)).collect();
    dirs.extend(set("HF_HOME").map(|h| h.join(sub)));
    dirs.extend(set("XDG_CACHE_HOME").map(|c| c.join("huggingface").join(sub)));
    dirs.extend(set("HOME").map(|h| h.join(".cache").join("huggingface").join(sub)));
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|c| seen.insert(c.clone()));
    dirs
}

/// The `tokenizer.json` that `spec` names (see the module docs), or every path looked at.
pub fn locate(spec: &str, env: &HubEnv) -> Result<PathBuf, TokenizerError> {
    let not_found = |tried| TokenizerError::NotFound {
        spec: spec.to_string(),
        tried,
    };
    let given = Path::new(spec);
    if given.is_file() {
        return Ok(given.to_path_buf());
    }
    if given.is_dir() {
        let file = given.join("tokenizer.json");
        if file.is_file() {
            return Ok(file);
        }
        return Err(missing_json(given).unwrap_or_else(|| not_found(vec![file])));
    }
    let mut tried = vec![given.to_path_buf()];
    let Some(repo) = repo_dir_name(spec) else {
        return Err(not_found(tried));
    };
    let mut without_json = None;
    for cache in &env.caches {
        let dir = cache.join(&repo);
        let snapshots = snapshots(&dir);
        if snapshots.is_empty() {
            tried.push(dir);
            continue;
        }
        for snap in snapshots {
            let file = snap.join("tokenizer.json");
            if file.is_file() {
                return Ok(file);
            }
            without_json = without_json.or_else(|| missing_json(&snap));
            tried.push(file);
        }
    }
    Err(without_json.unwrap_or_else(|| not_found(tried)))
}

/// `models--ORG--NAME` for a model name `ORG/NAME` (or `NAME`); `None` for what can only be a
/// path.
fn repo_dir_name(spec: &str) -> Option<String> {
    repo_name(spec, &[".json"]).map(|n| format!("models--{n}"))
}

/// `ORG--NAME` for a name `ORG/NAME` (or `NAME`) in a Hugging Face cache; `None` for what can
/// only be a path (absolute, relative with `.`, more than one `/`, a file name ending in one of
/// `file_ends`).
pub fn repo_name(spec: &str, file_ends: &[&str]) -> Option<String> {
    let path_like = spec.is_empty()
        || spec.starts_with(['/', '.', '~'])
        || spec.matches('/').count() > 1
        || spec.contains('\\')
        || file_ends.iter().any(|e| spec.ends_with(e));
    (!path_like).then(|| spec.replace('/', "--"))
}

/// A model (or dataset) directory's snapshots: the one `refs/main` names first, then the
/// others, newest first (by modification time, then name).
pub fn snapshots(model_dir: &Path) -> Vec<PathBuf> {
    let root = model_dir.join("snapshots");
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let others = newest_first(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    let main = std::fs::read_to_string(model_dir.join("refs").join("main"))
        .ok()
        .map(|c| root.join(c.trim()))
        .filter(|p| p.is_dir());
    let mut out: Vec<PathBuf> = main.iter().cloned().collect();
    out.extend(others.into_iter().filter(|p| Some(p) != main.as_ref()));
    out
}

/// Paths newest first (by modification time, then name).
pub fn newest_first(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut dated: Vec<(std::time::SystemTime, PathBuf)> = paths
        .into_iter()
        .map(|p| {
            let t = p.metadata().and_then(|m| m.modified());
            (t.unwrap_or(std::time::UNIX_EPOCH), p)
        })
        .collect();
    dated.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    dated.into_iter().map(|(_, p)| p).collect()
}

/// The "only other tokenizer files here" error for `dir`, when it holds some.
fn missing_json(dir: &Path) -> Option<TokenizerError> {
    let found: Vec<String> = OTHER_TOKENIZER_FILES
        .iter()
        .filter(|f| dir.join(f).is_file())
        .map(|f| f.to_string())
        .collect();
    (!found.is_empty()).then(|| TokenizerError::NoTokenizerJson {
        dir: dir.to_path_buf(),
        found,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Tokenizer;
    use super::super::builtin::{GPT2_TOKENIZER_JSON_GZ, gunzip};
    use super::*;
    use TokenizerError::NoTokenizerJson;

    /// A fake hub cache: `models--ORG--NAME` with an old snapshot and the `refs/main` one, each
    /// holding a `tokenizer.json` (the main one is the real GPT-2 file).
    fn fake_cache(root: &Path, org_name: &str) -> PathBuf {
        let model = root.join(format!("models--{}", org_name.replace('/', "--")));
        let json = gunzip(GPT2_TOKENIZER_JSON_GZ).unwrap();
        let old = model.join("snapshots").join("0ld");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("tokenizer.json"), "{}").unwrap();
        let main = model.join("snapshots").join("ma1n");
        std::fs::create_dir_all(&main).unwrap();
        std::fs::write(main.join("tokenizer.json"), json).unwrap();
        std::fs::create_dir_all(model.join("refs")).unwrap();
        std::fs::write(model.join("refs").join("main"), "ma1n\n").unwrap();
        main.join("tokenizer.json")
    }

    fn env(vars: &[(&str, &Path)]) -> HubEnv {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        HubEnv::from_vars(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn cache_roots_follow_huggingface_hub() {
        let e = env(&[
            ("HF_HOME", Path::new("/h")),
            ("HOME", Path::new("/home/u")),
            ("HF_HUB_CACHE", Path::new("/c")),
            ("XDG_CACHE_HOME", Path::new("/x")),
        ]);
        let expected = "/c /h/hub /x/huggingface/hub /home/u/.cache/huggingface/hub";
        let expected: Vec<PathBuf> = expected.split(' ').map(PathBuf::from).collect();
        assert_eq!(e.caches, expected);
        let e = env(&[
            ("HF_HUB_CACHE", Path::new("/h/hub")),
            ("HF_HOME", Path::new("/h")),
        ]);
        assert_eq!(e.caches, [PathBuf::from("/h/hub")], "each root once");
    }

    /// A model name resolves to the `refs/main` snapshot in the cache HF_HOME points at, and the
    /// tokenizer loaded from it counts like the built-in one.
    #[test]
    fn model_name_resolves_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("hf");
        let expected = fake_cache(&home.join("hub"), "openai-community/gpt2");
        let e = env(&[("HF_HOME", &home), ("HOME", &dir.path().join("nobody"))]);
        assert_eq!(locate("openai-community/gpt2", &e).unwrap(), expected);
        let tk = Tokenizer::from_spec("openai-community/gpt2", &e).unwrap();
        assert!(
            tk.name().starts_with("openai-community/gpt2 ("),
            "{}",
            tk.name()
        );
        assert!(tk.is_fast());
        assert_eq!(tk.count(" the quick brown fox"), 4);
        // A directory holding tokenizer.json, and the file itself.
        let snap = expected.parent().unwrap();
        assert_eq!(locate(snap.to_str().unwrap(), &e).unwrap(), expected);
        assert_eq!(locate(expected.to_str().unwrap(), &e).unwrap(), expected);
        assert_eq!(
            Tokenizer::from_spec(expected.to_str().unwrap(), &e)
                .unwrap()
                .name(),
            expected.to_str().unwrap()
        );
    }

    /// Without `refs/main`, the newest snapshot holding tokenizer.json wins; a second cache is
    /// searched when the first lacks the model.
    #[test]
    fn snapshots_without_refs_and_second_cache() {
        let dir = tempfile::tempdir().unwrap();
        let second = dir.path().join("second");
        let main = fake_cache(&second, "org/m");
        std::fs::remove_file(second.join("models--org--m/refs/main")).unwrap();
        std::fs::remove_file(second.join("models--org--m/snapshots/0ld/tokenizer.json")).unwrap();
        let e = env(&[
            ("HF_HUB_CACHE", &dir.path().join("first")),
            ("HF_HOME", dir.path()),
        ]);
        let e = HubEnv {
            caches: vec![e.caches[0].clone(), second],
        };
        assert_eq!(locate("org/m", &e).unwrap(), main);
    }

    /// What cannot be found says every place it looked, and what to do.
    #[test]
    fn not_found_names_every_path_tried() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let e = HubEnv {
            caches: vec![a.clone(), b.clone()],
        };
        let err = locate("meta-llama/Meta-Llama-3-8B-Instruct", &e).unwrap_err();
        let TokenizerError::NotFound { tried, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(
            tried,
            &[
                PathBuf::from("meta-llama/Meta-Llama-3-8B-Instruct"),
                a.join("models--meta-llama--Meta-Llama-3-8B-Instruct"),
                b.join("models--meta-llama--Meta-Llama-3-8B-Instruct"),
            ]
        );
        let msg = err.to_string();
        for p in tried {
            assert!(msg.contains(&p.display().to_string()), "{msg}");
        }
        assert!(msg.contains("huggingface-cli download"), "{msg}");
        // A path that cannot be a model name is only looked at as a path.
        let err = locate("./nope/tokenizer.json", &e).unwrap_err();
        assert!(matches!(err, TokenizerError::NotFound { ref tried, .. } if tried.len() == 1));
    }

    /// A snapshot with only a SentencePiece model says so instead of "not found".
    #[test]
    fn sentencepiece_only_snapshot_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let snap = dir.path().join("models--org--llama/snapshots/abc");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(snap.join("tokenizer.model"), b"\0").unwrap();
        let e = HubEnv {
            caches: vec![dir.path().to_path_buf()],
        };
        let err = locate("org/llama", &e).unwrap_err();
        assert!(matches!(err, NoTokenizerJson { .. }), "{err}");
        assert!(err.to_string().contains("tokenizer.model"), "{err}");
        // The same for a directory given directly.
        let err = locate(snap.to_str().unwrap(), &e).unwrap_err();
        assert!(matches!(err, NoTokenizerJson { .. }), "{err}");
    }
}
