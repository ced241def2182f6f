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

/// Reads a reranker input at `path` (a directory in GenAI-Perf's form, or a file of rows).
pub fn read(path: &Path) -> Result<RankingsData, String> {
    if path.is_dir() {
        let file = |name: &str| {
            let p = path.join(name);
            std::fs::read_to_string(&p).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "{}: no {name}; a rankings input is {RANKINGS_FORM}",
                    path.display()
                ),
                _ => format!("{}: {e}", p.display()),
            })
        };
        let queries = texts(&file("queries.jsonl")?).map_err(|e| format!("queries.jsonl {e}"))?;
        let passages =
            texts(&file("passages.jsonl")?).map_err(|e| format!("passages.jsonl {e}"))?;
        return Ok(RankingsData::Pool { queries, passages });
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    rows(&text)
}

/// `{"text": ...}` lines (blank lines skipped); `Err` names the line.
pub fn texts(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (n, line) in lines(text) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {n}: invalid JSON: {e}"))?;
        match v.get("text") {
            Some(serde_json::Value::String(s)) => out.push(s.clone()),
            _ => return Err(format!("line {n}: expected {{\"text\": \"...\"}}")),
        }
    }
    if out.is_empty() {
        return Err("has no rows".into());
    }
    Ok(out)
}

/// `{"query": ..., "passages": [...]}` rows; `Err` names the line and what it lacks.
pub fn rows(text: &str) -> Result<RankingsData, String> {
    let mut out = Vec::new();
    for (n, line) in lines(text) {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("line {n}: invalid JSON: {e}"))?;
        let query = match v.get("query") {
            Some(serde_json::Value::String(q)) => q.clone(),
            Some(serde_json::Value::Object(o)) => match o.get("text") {
                Some(serde_json::Value::String(q)) => q.clone(),
                _ => return Err(format!("line {n}: \"query\" has no \"text\"")),
            },
            _ => {
                return Err(format!(
                    "line {n}: no \"query\"; a rankings input is {RANKINGS_FORM}"
                ));
            }
        };
        let list = v
            .get("passages")
            .or_else(|| v.get("documents"))
            .and_then(serde_json::Value::as_array)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                format!(
                    "line {n}: a rankings row needs \"passages\": [\"...\", ...] next to its \"query\""
                )
            })?;
        let passages = list
            .iter()
            .map(|p| match p {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Object(o) => o.get("text")?.as_str().map(str::to_string),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("line {n}: every passage must be a string"))?;
        out.push((query, passages));
    }
    if out.is_empty() {
        return Err("has no rows".into());
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
        let e = read(dir.path()).unwrap_err();
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
            let e = rows(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert!(texts("{\"prompt\": \"x\"}").unwrap_err().contains("line 1"));
    }
}
