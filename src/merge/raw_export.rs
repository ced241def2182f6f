//! The merged level's raw GenAI-Perf export (`profile_export.json`): every shard's requests in
//! one file of the layout [`crate::artifact::raw_export`] documents, streamed — each shard's
//! file is read one request object at a time (its bytes copied as they are, never decoded into
//! a document), and the shards' requests are interleaved by their last response, so memory
//! holds one request per shard whatever the file sizes.
//!
//! Time base: every timestamp in a shard's export is Unix ns — the shard's monotonic offsets
//! plus its wall-clock anchor (`clock_anchor_unix_ns` in `shard.json`) — and the merged run's
//! time base is the same wall clock, so timestamps are copied unchanged; the merged
//! `window_boundaries` span the earliest start and the latest end of any shard's. Shards on
//! different machines are as comparable as their clocks are synchronized (NTP: well under the
//! 150 ms the start check allows).
//!
//! A level is merged only when every shard with load there has the file; otherwise a notice
//! says which shards lack it and no merged export is written.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::inputs::Member;
use crate::artifact::raw_export::{self, RAW_EXPORT_FILE};
use crate::error::{Error, Result};
use crate::load::Stimulus;

/// Where the requests array of a one-level export begins, after the experiment's header.
const REQUESTS_OPEN: &[u8] = b"\"requests\":[";
/// A header longer than this is not one ttftbench (or perf_analyzer) writes.
const MAX_HEADER: usize = 4096;

/// One shard's `profile_export.json`, read a request at a time.
struct Reader {
    path: PathBuf,
    r: BufReader<File>,
    /// The request object just read.
    object: Vec<u8>,
}

/// The end of a shard's file: its window and footer fields.
#[derive(Debug, Clone, PartialEq)]
struct Tail {
    window: Option<(u64, u64)>,
    service_kind: String,
    endpoint: String,
}

/// Just what orders a request: its send time and response times.
#[derive(Deserialize)]
struct Times {
    timestamp: u64,
    #[serde(default)]
    response_timestamps: Vec<u64>,
}

impl Reader {
    fn open(path: &Path) -> Result<Reader> {
        let f = File::open(path).map_err(|e| Error::io("read", path, e))?;
        let mut r = Reader {
            path: path.to_path_buf(),
            r: BufReader::with_capacity(1 << 16, f),
            object: Vec::new(),
        };
        r.header()?;
        Ok(r)
    }

    fn bad(&self, what: &str) -> Error {
        Error::usage(format!(
            "{}: {what}; it is not a one-level profile_export.json written by ttftbench",
            self.path.display()
        ))
    }

    fn byte(&mut self) -> Result<Option<u8>> {
        let buf = self
            .r
            .fill_buf()
            .map_err(|e| Error::io("read", &self.path, e))?;
        let Some(&b) = buf.first() else {
            return Ok(None);
        };
        self.r.consume(1);
        Ok(Some(b))
    }

    /// Reads through the experiment's header, up to its requests.
    fn header(&mut self) -> Result<()> {
        let mut head = Vec::new();
        while !head.ends_with(REQUESTS_OPEN) {
            match self.byte()? {
                Some(b) if head.len() < MAX_HEADER => head.push(b),
                _ => return Err(self.bad("no requests array at its start")),
            }
        }
        let text = String::from_utf8_lossy(&head);
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if !compact.starts_with("{\"experiments\":[{\"experiment\":") {
            return Err(self.bad("it does not open with one experiment"));
        }
        Ok(())
    }

    /// The next request object (in `self.object`) and its order key (its last response, or its
    /// send time without one); `None` at the array's end.
    fn next(&mut self) -> Result<Option<u64>> {
        let first = loop {
            match self.byte()? {
                Some(b) if b.is_ascii_whitespace() || b == b',' => continue,
                Some(b) => break b,
                None => return Err(self.bad("it ends inside its requests")),
            }
        };
        match first {
            b']' => return Ok(None),
            b'{' => {}
            _ => return Err(self.bad("a request is not a JSON object")),
        }
        self.object.clear();
        self.object.push(b'{');
        let (mut depth, mut in_str, mut escaped) = (1u32, false, false);
        while depth > 0 {
            let Some(b) = self.byte()? else {
                return Err(self.bad("it ends inside a request"));
            };
            self.object.push(b);
            match (in_str, escaped, b) {
                (true, true, _) => escaped = false,
                (true, false, b'\\') => escaped = true,
                (true, false, b'"') => in_str = false,
                (true, false, _) => {}
                (false, _, b'"') => in_str = true,
                (false, _, b'{' | b'[') => depth += 1,
                (false, _, b'}' | b']') => depth -= 1,
                _ => {}
            }
        }
        let t: Times = serde_json::from_slice(&self.object)
            .map_err(|e| self.bad(&format!("a request without its timestamps ({e})")))?;
        Ok(Some(
            t.response_timestamps.last().copied().unwrap_or(t.timestamp),
        ))
    }

    /// After the requests: the window and the footer (a few hundred bytes).
    fn tail(mut self) -> Result<Tail> {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.r, &mut rest)
            .map_err(|e| Error::io("read", &self.path, e))?;
        let compact: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
        let window_text = compact
            .strip_prefix(",\"window_boundaries\":[")
            .and_then(|s| s.split_once(']'))
            .ok_or_else(|| self.bad("no window_boundaries after its requests"))?;
        let (bounds, after) = window_text;
        let footer = after
            .strip_prefix("}]")
            .and_then(|s| s.strip_prefix(','))
            .ok_or_else(|| self.bad("more than one experiment"))?;
        let doc: serde_json::Value = serde_json::from_str(&format!("{{{footer}"))
            .map_err(|e| self.bad(&format!("its end is not JSON ({e})")))?;
        let nums: Vec<u64> = bounds.split(',').filter_map(|n| n.parse().ok()).collect();
        let field = |k: &str| {
            doc.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        Ok(Tail {
            window: match nums.as_slice() {
                [a, b] => Some((*a, *b)),
                _ => None,
            },
            service_kind: field("service_kind"),
            endpoint: field("endpoint"),
        })
    }
}

/// Merges the level's shards' exports into `dir`'s `profile_export.json` when every loaded
/// shard has one; returns notices (why none was written).
pub fn merge_level(g: &[Member], dir: &Path, whole: Stimulus) -> Result<Vec<String>> {
    let (with, without): (Vec<&Member>, Vec<&Member>) = g
        .iter()
        .filter(|m| m.record.idle.is_none())
        .partition(|m| m.dir.join(RAW_EXPORT_FILE).is_file());
    if with.is_empty() {
        return Ok(Vec::new());
    }
    if !without.is_empty() {
        return Ok(vec![format!(
            "{}: no merged {RAW_EXPORT_FILE}: {} of the shards have none ({})",
            whole.name(),
            without.len(),
            without
                .iter()
                .map(|m| m.dir.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )]);
    }
    let files: Vec<PathBuf> = with.iter().map(|m| m.dir.join(RAW_EXPORT_FILE)).collect();
    merge_files(&files, &dir.join(RAW_EXPORT_FILE), whole).map(|_| Vec::new())
}

/// Merges one-level exports `files` into `to` as the experiment of `whole`; returns the number
/// of requests written. Written beside `to` and renamed, so a failure leaves no half file.
pub fn merge_files(files: &[PathBuf], to: &Path, whole: Stimulus) -> Result<u64> {
    let part = to.with_extension("json.part");
    match write_merged(files, &part, whole) {
        Ok(n) => {
            std::fs::rename(&part, to).map_err(|e| Error::io("write", to, e))?;
            Ok(n)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            Err(e)
        }
    }
}

fn write_merged(files: &[PathBuf], to: &Path, whole: Stimulus) -> Result<u64> {
    let mut readers = files
        .iter()
        .map(|p| Reader::open(p))
        .collect::<Result<Vec<_>>>()?;
    let f = File::create(to).map_err(|e| Error::io("write", to, e))?;
    let mut out = BufWriter::with_capacity(1 << 16, f);
    let io = |e| Error::io("write", to, e);
    out.write_all(raw_export::open(&whole).as_bytes())
        .map_err(io)?;
    // Heads of every file, earliest last response first (ties: lower shard first).
    let mut heads = BinaryHeap::new();
    for (i, r) in readers.iter_mut().enumerate() {
        if let Some(key) = r.next()? {
            heads.push(Reverse((key, i)));
        }
    }
    let mut written = 0u64;
    while let Some(Reverse((_, i))) = heads.pop() {
        if written > 0 {
            out.write_all(b",").map_err(io)?;
        }
        out.write_all(&readers[i].object).map_err(io)?;
        written += 1;
        if let Some(key) = readers[i].next()? {
            heads.push(Reverse((key, i)));
        }
    }
    let tails = readers
        .into_iter()
        .map(Reader::tail)
        .collect::<Result<Vec<_>>>()?;
    let window = tails
        .iter()
        .filter_map(|t| t.window)
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
    let first = &tails[0];
    if let Some(t) = tails
        .iter()
        .find(|t| (&t.service_kind, &t.endpoint) != (&first.service_kind, &first.endpoint))
    {
        return Err(Error::usage(format!(
            "the shards' exports are of different traffic ({} {:?} and {} {:?}): not parts of one run",
            first.service_kind, first.endpoint, t.service_kind, t.endpoint
        )));
    }
    let version = format!("ttftbench {}", crate::VERSION);
    out.write_all(raw_export::experiment_close(window).as_bytes())
        .map_err(io)?;
    out.write_all(raw_export::footer(&version, &first.service_kind, &first.endpoint).as_bytes())
        .map_err(io)?;
    out.flush().map_err(io)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard's export as the writer lays it out, with requests (sent, [responses]).
    fn export(value: u32, reqs: &[(u64, &[u64])], window: Option<(u64, u64)>) -> String {
        let mut s = raw_export::open(&Stimulus::Concurrency(value));
        for (i, (sent, resp)) in reqs.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let ts: Vec<String> = resp.iter().map(u64::to_string).collect();
            let outs: Vec<&str> = resp
                .iter()
                .map(|_| r#"{"response":"data: {\"x\":\"}]\\\"\"}\n\n"}"#)
                .collect();
            s.push_str(&format!(
                r#"{{"timestamp":{sent},"request_inputs":{{"payload":"{{\"a\":[1]}}"}},"response_timestamps":[{}],"response_outputs":[{}]}}"#,
                ts.join(","),
                outs.join(",")
            ));
        }
        s.push_str(&raw_export::experiment_close(window));
        s.push_str(&raw_export::footer(
            "ttftbench 0",
            "openai",
            "v1/chat/completions",
        ));
        s
    }

    #[test]
    fn requests_interleave_by_last_response_and_windows_span_all() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a.json");
        let b = tmp.path().join("b.json");
        let c = tmp.path().join("c.json");
        std::fs::write(
            &a,
            export(1, &[(10, &[15, 20]), (30, &[45])], Some((10, 45))),
        )
        .unwrap();
        std::fs::write(
            &b,
            export(1, &[(12, &[14, 30]), (40, &[41, 50])], Some((12, 50))),
        )
        .unwrap();
        std::fs::write(&c, export(1, &[], None)).unwrap();
        let to = tmp.path().join("m.json");
        let n = merge_files(&[a, b, c], &to, Stimulus::Concurrency(2)).unwrap();
        assert_eq!(n, 4);
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&to).unwrap()).unwrap();
        let e = &doc["experiments"][0];
        assert_eq!(
            e["experiment"],
            serde_json::json!({"mode": "concurrency", "value": 2})
        );
        let sent: Vec<u64> = e["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["timestamp"].as_u64().unwrap())
            .collect();
        assert_eq!(
            sent,
            [10, 12, 30, 40],
            "ordered by last response: 20, 30, 45, 50"
        );
        assert_eq!(e["window_boundaries"], serde_json::json!([10, 50]));
        assert_eq!(
            e["requests"][0]["response_outputs"][0]["response"], "data: {\"x\":\"}]\\\"\"}\n\n",
            "strings with brackets and escapes copied as they were"
        );
        assert_eq!(doc["service_kind"], "openai");
        assert_eq!(doc["endpoint"], "v1/chat/completions");
        assert!(!tmp.path().join("m.json.part").exists());
    }

    #[test]
    fn foreign_or_cut_files_are_refused_and_leave_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let good = tmp.path().join("g.json");
        std::fs::write(&good, export(1, &[(10, &[20])], Some((10, 20)))).unwrap();
        let to = tmp.path().join("m.json");
        for (name, text) in [
            (
                "cut.json",
                export(1, &[(10, &[20])], Some((10, 20)))[..60].to_string(),
            ),
            ("other.json", r#"{"data": []}"#.to_string()),
            (
                "two.json",
                export(1, &[(10, &[20])], Some((10, 20))).replace(
                    "]}],\"version\"",
                    "]},{\"experiment\":{},\"requests\":[],\"window_boundaries\":[]}],\"version\"",
                ),
            ),
        ] {
            let p = tmp.path().join(name);
            std::fs::write(&p, text).unwrap();
            let e = merge_files(&[good.clone(), p], &to, Stimulus::Concurrency(2)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{name}: {e}");
            assert!(e.to_string().contains(name), "{name}: {e}");
            assert!(!to.exists() && !tmp.path().join("m.json.part").exists());
        }
    }
}
