//! Request traces in the Mooncake form: what production sent and when, without its text.
//!
//! An `--input-file` whose first row has an `input_length` key is a trace (any other file is read
//! as `{"text": ...}` prompts). JSONL, one object per line; blank lines are skipped, other keys
//! are ignored:
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `timestamp` | number ≥ 0 | ms since the trace's start when the request arrived; never decreasing from one row to the next; required with `--fixed-schedule` |
//! | `input_length` | integer 1..=2^24 | prompt tokens |
//! | `output_length` | integer ≥ 1 | output tokens, sent as the request's max tokens |
//! | `hash_ids` | array of integers ≥ 0 | one id per block of `--block-size` tokens (512 by default), in prompt order: requests with the same id at a block share that block's tokens. At least ceil(`input_length` / block size) ids; ids beyond that are ignored |
//!
//! ```text
//! {"timestamp": 0, "input_length": 1200, "output_length": 40, "hash_ids": [0, 1, 2]}
//! {"timestamp": 250, "input_length": 700, "output_length": 12, "hash_ids": [0, 3]}
//! ```
//!
//! Every row is checked before anything is sent; an error names the file, the line and the field,
//! and says what to change. `--fixed-schedule-start`/`--fixed-schedule-end` keep the rows whose
//! timestamp lies in that window (inclusive); the schedule then counts from the start given, or
//! from the first row kept.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::UsageError;

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Line in the file (1-based), for messages.
    pub line: usize,
    /// Arrival (ms from the trace's start), when the row has one.
    pub timestamp_ms: Option<f64>,
    /// Prompt tokens.
    pub input_length: u32,
    /// Output tokens asked for.
    pub output_length: u32,
    /// Block ids, exactly ceil(`input_length` / block size) of them (extra ids are dropped).
    pub hash_ids: Vec<u64>,
}

/// The rows of a trace a run uses, in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    /// The requests.
    pub requests: Vec<TraceRequest>,
}

/// How a trace is read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadOptions {
    /// Tokens per hash id.
    pub block_size: u32,
    /// `--fixed-schedule`: every row needs a timestamp.
    pub fixed_schedule: bool,
    /// Rows before this timestamp (ms) are left out.
    pub start_ms: Option<u64>,
    /// Rows after this timestamp (ms) are left out.
    pub end_ms: Option<u64>,
}

/// The longest prompt synthesized: bounds the memory one row can ask for (2^24 tokens, about
/// 100 MB of text).
pub const MAX_INPUT_LENGTH: u32 = 1 << 24;

/// The field that makes a row a trace row.
const TRACE_KEY: &str = "input_length";

/// An example row, shown in errors.
const EXAMPLE: &str =
    r#"{"timestamp": 0, "input_length": 600, "output_length": 20, "hash_ids": [0, 1]}"#;

fn err<T>(msg: String) -> Result<T, UsageError> {
    Err(UsageError(msg))
}

/// Whether a first row ([`first_row`]) is a trace's (it has `input_length`).
pub fn is_trace(row: &Value) -> bool {
    row.get(TRACE_KEY).is_some()
}

/// The first non-blank line of an `--input-file`, parsed (`Null` when it is not JSON: the
/// reader of the file's form names the line), so its keys tell the form. An empty file is
/// refused here, whatever its form would have been.
pub fn first_row(path: &Path) -> Result<Value, UsageError> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("--input-file {}: cannot open: {e}", path.display())))?;
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(|e| {
            UsageError(format!("--input-file {}: cannot read: {e}", path.display()))
        })?;
        let text = String::from_utf8_lossy(&line);
        let text = text.trim().trim_start_matches('\u{feff}');
        if text.is_empty() {
            continue;
        }
        return Ok(serde_json::from_str::<Value>(text).unwrap_or(Value::Null));
    }
    err(format!(
        "--input-file {}: the file is empty: give one JSON object per line, {{\"text\": \"...\"}} prompts, conversations or trace rows such as {EXAMPLE}",
        path.display()
    ))
}

/// Reads and checks a trace file, then keeps the rows in the window of `opts`.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Trace, UsageError> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("--input-file {}: cannot open: {e}", path.display())))?;
    read_from(BufReader::new(file), path, opts)
}

/// [`read`] over any reader; `path` only names the source in errors (the fuzz target's entry
/// point).
pub fn read_from(
    reader: impl BufRead,
    path: &Path,
    opts: &ReadOptions,
) -> Result<Trace, UsageError> {
    let mut requests: Vec<TraceRequest> = Vec::new();
    let mut last: Option<(f64, usize)> = None;
    for (i, line) in reader.split(b'\n').enumerate() {
        let n = i + 1;
        let at = || format!("--input-file {}: line {n}", path.display());
        let line = line.map_err(|e| UsageError(format!("{}: cannot read: {e}", at())))?;
        let Ok(text) = std::str::from_utf8(&line) else {
            return err(format!("{}: not valid UTF-8", at()));
        };
        let text = text.trim().trim_start_matches('\u{feff}');
        if text.is_empty() {
            continue;
        }
        let row = parse_row(text, n, opts).map_err(|why| UsageError(format!("{}: {why}", at())))?;
        if let Some(ts) = row.timestamp_ms {
            if let Some((prev, prev_line)) = last
                && ts < prev
            {
                return err(format!(
                    "{}: field \"timestamp\" goes backwards ({ts} ms, after {prev} ms on line {prev_line}): sort the trace by timestamp",
                    at()
                ));
            }
            last = Some((ts, n));
        }
        requests.push(row);
    }
    if requests.is_empty() {
        return err(format!(
            "--input-file {}: no trace rows (the file is empty or blank): give one row per line, such as {EXAMPLE}",
            path.display()
        ));
    }
    window(Trace { requests }, path, opts)
}

/// What is wrong with one row of a trace: the field, and what it must be. The reader puts
/// `--input-file`, the file and the line in front, as a usage error (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum TraceRowError {
    /// Not JSON.
    #[error("invalid JSON ({0}): each line must be one object such as {EXAMPLE}")]
    Json(#[source] serde_json::Error),
    /// Not a JSON object.
    #[error("expected a JSON object such as {EXAMPLE}")]
    NotObject,
    /// No timestamp, with `--fixed-schedule`.
    #[error(
        "missing field \"timestamp\": --fixed-schedule sends each request at its timestamp (ms)"
    )]
    NoTimestamp,
    /// A timestamp that is not a time.
    #[error("field \"timestamp\" must be a number of milliseconds ≥ 0, not {0}")]
    Timestamp(Value),
    /// An input length past any context.
    #[error(
        "field \"input_length\" {0} is beyond any model's context (at most {MAX_INPUT_LENGTH} tokens are synthesized per prompt)"
    )]
    InputTooLong(u32),
    /// A length missing.
    #[error(
        "missing field \"{0}\" (a trace row has input_length, output_length and hash_ids, and a timestamp with --fixed-schedule)"
    )]
    NoLength(&'static str),
    /// A length that is not a token count.
    #[error("field \"{field}\" must be a whole number of tokens ≥ 1, not {got}")]
    Length {
        /// `input_length` or `output_length`.
        field: &'static str,
        /// What it was.
        got: Value,
    },
    /// No block ids.
    #[error(
        "missing field \"hash_ids\": give one block id per {block} tokens of input_length (requests with the same id share that block)"
    )]
    NoHashIds {
        /// `--block-size`.
        block: u32,
    },
    /// Block ids that are not an array.
    #[error("field \"hash_ids\" must be an array of whole numbers, not {0}")]
    HashIdsNotArray(Value),
    /// Fewer block ids than the input length needs.
    #[error(
        "field \"hash_ids\" has {got} id{} but input_length {input_length} needs {needed} (one per block of {block} tokens): give one id per block, or set --block-size to the trace's block size",
        if *.got == 1 { "" } else { "s" }
    )]
    FewHashIds {
        /// Ids given.
        got: usize,
        /// The row's input length.
        input_length: u32,
        /// Ids it needs.
        needed: usize,
        /// `--block-size`.
        block: u32,
    },
    /// A block id that is not a whole number.
    #[error("field \"hash_ids\" must hold whole numbers ≥ 0, not {0}")]
    HashId(Value),
}

/// One row, checked; `Err` says which field is wrong and how.
fn parse_row(text: &str, line: usize, opts: &ReadOptions) -> Result<TraceRequest, TraceRowError> {
    let value: Value = serde_json::from_str(text).map_err(TraceRowError::Json)?;
    let Value::Object(row) = value else {
        return Err(TraceRowError::NotObject);
    };
    let timestamp_ms = match row.get("timestamp") {
        None if opts.fixed_schedule => return Err(TraceRowError::NoTimestamp),
        None => None,
        Some(v) => match v.as_f64() {
            Some(t) if t.is_finite() && t >= 0.0 => Some(t),
            _ => return Err(TraceRowError::Timestamp(v.clone())),
        },
    };
    let input_length = length(&row, "input_length")?;
    if input_length > MAX_INPUT_LENGTH {
        return Err(TraceRowError::InputTooLong(input_length));
    }
    let output_length = length(&row, "output_length")?;
    let hash_ids = hash_ids(&row, input_length, opts.block_size)?;
    Ok(TraceRequest {
        line,
        timestamp_ms,
        input_length,
        output_length,
        hash_ids,
    })
}

/// A required whole number of tokens, at least 1.
fn length(row: &Map<String, Value>, field: &'static str) -> Result<u32, TraceRowError> {
    let Some(v) = row.get(field) else {
        return Err(TraceRowError::NoLength(field));
    };
    match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
        Some(n) if n >= 1 => Ok(n),
        _ => Err(TraceRowError::Length {
            field,
            got: v.clone(),
        }),
    }
}

/// The block ids a prompt of `input_length` tokens needs, checked.
fn hash_ids(
    row: &Map<String, Value>,
    input_length: u32,
    block: u32,
) -> Result<Vec<u64>, TraceRowError> {
    let Some(v) = row.get("hash_ids") else {
        return Err(TraceRowError::NoHashIds { block });
    };
    let Some(items) = v.as_array() else {
        return Err(TraceRowError::HashIdsNotArray(v.clone()));
    };
    let needed = input_length.div_ceil(block.max(1)) as usize;
    if items.len() < needed {
        return Err(TraceRowError::FewHashIds {
            got: items.len(),
            input_length,
            needed,
            block,
        });
    }
    items[..needed]
        .iter()
        .map(|id| id.as_u64().ok_or_else(|| TraceRowError::HashId(id.clone())))
        .collect()
}

/// The rows whose timestamp lies in `[start_ms, end_ms]` (all of them without a window).
fn window(trace: Trace, path: &Path, opts: &ReadOptions) -> Result<Trace, UsageError> {
    if opts.start_ms.is_none() && opts.end_ms.is_none() {
        return Ok(trace);
    }
    let (first, last) = (
        trace.requests.first().and_then(|r| r.timestamp_ms),
        trace.requests.last().and_then(|r| r.timestamp_ms),
    );
    let start = opts.start_ms.map_or(f64::NEG_INFINITY, |s| s as f64);
    let end = opts.end_ms.map_or(f64::INFINITY, |e| e as f64);
    let requests: Vec<TraceRequest> = trace
        .requests
        .into_iter()
        .filter(|r| r.timestamp_ms.is_some_and(|t| t >= start && t <= end))
        .collect();
    if requests.is_empty() {
        return err(format!(
            "--fixed-schedule-start/--fixed-schedule-end: no row of {} has a timestamp in that window (its timestamps run from {} to {} ms)",
            path.display(),
            first.unwrap_or(0.0),
            last.unwrap_or(0.0)
        ));
    }
    Ok(Trace { requests })
}

impl Trace {
    /// Each row's send time in ns after the schedule's start: its timestamp minus `start_ms`
    /// (or minus the first row's timestamp), `None` when a row has no timestamp.
    pub fn schedule_ns(&self, start_ms: Option<u64>) -> Option<Vec<u64>> {
        let first = self.requests.first()?.timestamp_ms?;
        let base = start_ms.map_or(first, |s| s as f64);
        self.requests
            .iter()
            .map(|r| {
                r.timestamp_ms
                    .map(|t| ((t - base).max(0.0) * 1e6).round() as u64)
            })
            .collect()
    }

    /// Keeps the first `n` rows.
    pub fn truncate(&mut self, n: usize) {
        self.requests.truncate(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(fixed: bool) -> ReadOptions {
        ReadOptions {
            block_size: 4,
            fixed_schedule: fixed,
            start_ms: None,
            end_ms: None,
        }
    }

    fn read_str(text: &str, o: &ReadOptions) -> Result<Trace, UsageError> {
        read_from(text.as_bytes(), Path::new("t.jsonl"), o)
    }

    #[test]
    fn reads_rows_and_drops_extra_ids() {
        let t = read_str(
            "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3, \"hash_ids\": [7, 8, 9]}\n\n{\"timestamp\": 2.5, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [7], \"x\": 1}\n",
            &opts(true),
        )
        .unwrap();
        assert_eq!(t.requests.len(), 2);
        assert_eq!(t.requests[0].hash_ids, [7, 8]);
        assert_eq!(t.requests[1].line, 3);
        assert_eq!(t.schedule_ns(None), Some(vec![0, 2_500_000]));
        assert_eq!(t.schedule_ns(Some(1)), Some(vec![0, 1_500_000]));
        // Without --fixed-schedule a timestamp may be missing.
        let t = read_str(
            "{\"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}",
            &opts(false),
        )
        .unwrap();
        assert_eq!(t.schedule_ns(None), None);
    }

    #[test]
    fn bad_rows_name_line_and_field() {
        let ok =
            "{\"timestamp\": 5, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\n";
        let cases = [
            ("{\"timestamp\": 1,", "line 2: invalid JSON"),
            ("[1]", "line 2: expected a JSON object"),
            (
                "{\"timestamp\": 6, \"output_length\": 2, \"hash_ids\": [1]}",
                "line 2: missing field \"input_length\"",
            ),
            (
                "{\"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}",
                "line 2: missing field \"timestamp\"",
            ),
            (
                "{\"timestamp\": 4, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}",
                "line 2: field \"timestamp\" goes backwards (4 ms, after 5 ms on line 1)",
            ),
            (
                "{\"timestamp\": 6, \"input_length\": 9, \"output_length\": 2, \"hash_ids\": [1, 2]}",
                "line 2: field \"hash_ids\" has 2 ids but input_length 9 needs 3",
            ),
            (
                "{\"timestamp\": 6, \"input_length\": 0, \"output_length\": 2, \"hash_ids\": []}",
                "field \"input_length\" must be a whole number of tokens ≥ 1, not 0",
            ),
            (
                "{\"timestamp\": 6, \"input_length\": 2, \"output_length\": 2, \"hash_ids\": [-1]}",
                "field \"hash_ids\" must hold whole numbers",
            ),
        ];
        for (second, want) in cases {
            let e = read_str(&format!("{ok}{second}\n"), &opts(true)).unwrap_err();
            assert!(e.0.contains(want), "{e} lacks {want:?}");
            assert!(e.0.contains("t.jsonl"), "{e}");
        }
        let e = read_str("\n \n", &opts(true)).unwrap_err();
        assert!(e.0.contains("no trace rows"), "{e}");
    }

    #[test]
    fn window_keeps_rows_between_start_and_end() {
        let text: String = (0..5)
            .map(|i| {
                format!(
                    "{{\"timestamp\": {}, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [{i}]}}\n",
                    i * 100
                )
            })
            .collect();
        let o = ReadOptions {
            start_ms: Some(150),
            end_ms: Some(300),
            ..opts(true)
        };
        let t = read_str(&text, &o).unwrap();
        assert_eq!(
            t.requests.iter().map(|r| r.line).collect::<Vec<_>>(),
            [3, 4]
        );
        assert_eq!(
            t.schedule_ns(o.start_ms),
            Some(vec![50_000_000, 150_000_000])
        );
        let e = read_str(
            &text,
            &ReadOptions {
                start_ms: Some(1000),
                ..opts(true)
            },
        )
        .unwrap_err();
        assert!(e.0.contains("from 0 to 400 ms"), "{e}");
    }
}
