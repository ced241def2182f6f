//! Reranker inputs (`--endpoint-type rankings --input-file`), read and checked when the plan is
//! resolved so a bad file is refused before anything connects.
//!
//! Two forms:
//! * GenAI-Perf's: a directory holding `queries.jsonl` and `passages.jsonl`, one
//!   `{"text": "..."}` per line. Request `i` sends query `i` with `--batch-size-text` passages
//!   taken from the passages in turn (`i·b … i·b+b−1`, wrapping), one request per query.
//! * One JSONL file, one request per line: `{"query": "...", "passages": ["...", ...]}`
//!   (`documents` is accepted for `passages`); each row's passages are sent as they are.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

/// A reranker input file, read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingsSource {
    /// The directory or file.
    pub path: PathBuf,
    /// Its requests' texts.
    #[serde(skip)]
    pub data: Arc<RankingsData>,
}

/// The texts of a reranker input.
#[derive(Debug, Clone, PartialEq)]
pub enum RankingsData {
    /// GenAI-Perf's directory: queries, and a pool of passages taken in turn.
    Pool {
        /// `queries.jsonl`.
        queries: Vec<String>,
        /// `passages.jsonl`.
        passages: Vec<String>,
    },
    /// One request per row: a query and its own passages.
    Rows(Vec<(String, Vec<String>)>),
}

impl RankingsData {
    /// Requests the input makes (one per query).
    pub fn len(&self) -> usize {
        match self {
            RankingsData::Pool { queries, .. } => queries.len(),
            RankingsData::Rows(r) => r.len(),
        }
    }

    /// Whether it makes none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Request `i`'s query and passages (`batch` of them from a pool).
    pub fn request(&self, i: usize, batch: u32) -> (&str, Vec<&str>) {
        match self {
            RankingsData::Pool { queries, passages } => {
                let b = batch.max(1) as usize;
                let ps = (0..b)
                    .map(|j| passages[(i * b + j) % passages.len()].as_str())
                    .collect();
                (&queries[i % queries.len()], ps)
            }
            RankingsData::Rows(rows) => {
                let (q, ps) = &rows[i % rows.len()];
                (q, ps.iter().map(String::as_str).collect())
            }
        }
    }
}

/// The form of a reranker input, for error messages.
pub const RANKINGS_FORM: &str = r#"a directory holding queries.jsonl and passages.jsonl ({"text": "..."} per line, GenAI-Perf's form), or a JSONL file of {"query": "...", "passages": ["...", ...]} rows"#;

/// What is wrong with the lines of a rankings file: the line and what it lacks.
#[derive(Debug, thiserror::Error)]
pub enum RowsError {
    /// Not JSON.
    #[error("line {line}: invalid JSON: {source}")]
    Json {
        /// The line (1-based).
        line: usize,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// A queries or passages line without `text`.
    #[error("line {0}: expected {{\"text\": \"...\"}}")]
    NotText(usize),
    /// A query object without `text`.
    #[error("line {0}: \"query\" has no \"text\"")]
    QueryText(usize),
    /// A row without a query.
    #[error("line {0}: no \"query\"; a rankings input is {RANKINGS_FORM}")]
    NoQuery(usize),
    /// A row without passages.
    #[error("line {0}: a rankings row needs \"passages\": [\"...\", ...] next to its \"query\"")]
    NoPassages(usize),
    /// A passage that is not text.
    #[error("line {0}: every passage must be a string")]
    PassageNotText(usize),
    /// Nothing but blank lines.
    #[error("has no rows")]
    Empty,
}

/// Why a reranker input cannot be read; the plan puts `--input-file` and the path in front,
/// as a usage error.
#[derive(Debug, thiserror::Error)]
pub enum RankingsError {
    /// A directory without one of its two files.
    #[error("{}: no {name}; a rankings input is {RANKINGS_FORM}", dir.display())]
    NoFile {
        /// The directory.
        dir: PathBuf,
        /// `queries.jsonl` or `passages.jsonl`.
        name: &'static str,
    },
    /// A file that cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A line of the directory's `queries.jsonl` or `passages.jsonl`.
    #[error("{name} {problem}")]
    File {
        /// The file's name.
        name: &'static str,
        /// What is wrong with it.
        problem: RowsError,
    },
    /// A line of a file of rows.
    #[error(transparent)]
    Rows(#[from] RowsError),
}

/// Reads a reranker input at `path` (a directory in GenAI-Perf's form, or a file of rows).
pub fn read(path: &Path) -> Result<RankingsData, RankingsError> {
    if path.is_dir() {
        let file = |name: &'static str| {
            let p = path.join(name);
            let text = std::fs::read_to_string(&p).map_err(|source| match source.kind() {
                std::io::ErrorKind::NotFound => RankingsError::NoFile {
                    dir: path.into(),
                    name,
                },
                _ => RankingsError::Read { path: p, source },
            })?;
            texts(&text).map_err(|problem| RankingsError::File { name, problem })
        };
        let queries = file("queries.jsonl")?;
        let passages = file("passages.jsonl")?;
        return Ok(RankingsData::Pool { queries, passages });
    }
    let text = std::fs::read_to_string(path).map_err(|source| RankingsError::Read {
        path: path.into(),
        source,
    })?;
    Ok(rows(&text)?)
}

/// `{"text": ...}` lines (blank lines skipped); `Err` names the line.
pub fn texts(text: &str) -> Result<Vec<String>, RowsError> {
    let mut out = Vec::new();
    for (n, line) in lines(text) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|source| RowsError::Json { line: n, source })?;
        match v.get("text") {
            Some(serde_json::Value::String(s)) => out.push(s.clone()),
            _ => return Err(RowsError::NotText(n)),
        }
    }
    if out.is_empty() {
        return Err(RowsError::Empty);
    }
    Ok(out)
}

/// `{"query": ..., "passages": [...]}` rows; `Err` names the line and what it lacks.
pub fn rows(text: &str) -> Result<RankingsData, RowsError> {
    let mut out = Vec::new();
    for (n, line) in lines(text) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|source| RowsError::Json { line: n, source })?;
        let query = match v.get("query") {
            Some(serde_json::Value::String(q)) => q.clone(),
            Some(serde_json::Value::Object(o)) => match o.get("text") {
                Some(serde_json::Value::String(q)) => q.clone(),
                _ => return Err(RowsError::QueryText(n)),
            },
            _ => return Err(RowsError::NoQuery(n)),
        };
        let list = v
            .get("passages")
            .or_else(|| v.get("documents"))
            .and_then(serde_json::Value::as_array)
            .filter(|l| !l.is_empty())
            .ok_or(RowsError::NoPassages(n))?;
        let passages = list
            .iter()
            .map(|p| match p {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Object(o) => o.get("text")?.as_str().map(str::to_string),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .ok_or(RowsError::PassageNotText(n))?;
        out.push((query, passages));
    }
    if out.is_empty() {
        return Err(RowsError::Empty);
    }
    Ok(RankingsData::Rows(out))
}

/// Non-blank lines with their 1-based numbers (a UTF-8 byte-order mark dropped).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.trim_start_matches('\u{feff}')
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_form_takes_passages_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("queries.jsonl"),
            "{\"text\": \"q0\"}\n\n{\"text\": \"q1\"}\n",
        )
        .unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("no passages.jsonl") && e.contains("queries.jsonl and passages.jsonl"),
            "{e}"
        );
        std::fs::write(
            dir.path().join("passages.jsonl"),
            "{\"text\": \"a\"}\n{\"text\": \"b\"}\n{\"text\": \"c\"}\n",
        )
        .unwrap();
        let d = read(dir.path()).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d.request(0, 2), ("q0", vec!["a", "b"]));
        assert_eq!(d.request(1, 2), ("q1", vec!["c", "a"]));
        assert_eq!(d.request(2, 1), ("q0", vec!["c"]));
    }

    #[test]
    fn row_form_and_its_refusals() {
        let d = rows(
            "{\"query\": \"q\", \"passages\": [\"a\", {\"text\": \"b\"}]}\n{\"query\": {\"text\": \"r\"}, \"documents\": [\"c\"]}",
        )
        .unwrap();
        assert_eq!(d.request(0, 9), ("q", vec!["a", "b"]));
        assert_eq!(d.request(1, 9), ("r", vec!["c"]));
        for (text, says) in [
            (
                "{\"query\": \"q\"}",
                "line 1: a rankings row needs \"passages\"",
            ),
            ("{\"query\": \"q\", \"passages\": []}", "needs \"passages\""),
            ("\n{\"text\": \"q\"}", "line 2: no \"query\""),
            ("{\"query\": \"q\", \"passages\": [1]}", "must be a string"),
            ("{", "line 1: invalid JSON"),
            ("\n\n", "has no rows"),
        ] {
            let e = rows(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        let e = texts("{\"prompt\": \"x\"}").unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
