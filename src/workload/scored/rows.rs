//! What a benchmark row holds, under its Hugging Face field names, whatever file it came from
//! (JSONL here, Parquet and Arrow through [`super::columnar`]): a row becomes an [`Item`] or is
//! refused with its place and what is missing.
//!
//! * MMLU: `question` (text), `choices` (2 to 26 texts), `answer` (the right choice's 0-based
//!   index, as a number or a digit string, or its letter), `subject` (optional).
//! * GSM8K: `question`, `answer` (the worked solution; the final answer after `####`).
//! * HellaSwag: `ctx` (or `ctx_a` and `ctx_b`), `endings` (2 to 26 texts), `label` (the right
//!   ending's index; the test split's empty labels are refused), `activity_label` (optional).

use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use super::{Benchmark, Expected, Item, ScoredError, prompt};

/// One row: its fields by name.
pub type Row = serde_json::Map<String, Value>;

/// A row and where it is (`file:line`, `file row N`).
pub type Located = (Row, String);

/// The item of `row` (at `at`) of `b`, or why it cannot be graded.
pub fn item(b: Benchmark, row: &Row, at: &str) -> Result<Item, ScoredError> {
    match b {
        Benchmark::Mmlu => mmlu(row, at),
        Benchmark::Gsm8k => gsm8k(row, at),
        Benchmark::Hellaswag => hellaswag(row, at),
    }
}

fn mmlu(row: &Row, at: &str) -> Result<Item, ScoredError> {
    let question = text(row, "question", at, "mmlu")?;
    let choices = options(row, "choices", at, "mmlu")?;
    let index = answer_index(row, "answer", choices.len(), at, "mmlu")?;
    let subject = row.get("subject").and_then(Value::as_str).map(String::from);
    Ok(choice_item(
        prompt::choice_block(question, &choices),
        index,
        choices.len(),
        subject,
        at,
    ))
}

fn gsm8k(row: &Row, at: &str) -> Result<Item, ScoredError> {
    let question = text(row, "question", at, "gsm8k")?;
    let solution = match row.get("answer") {
        Some(Value::String(s)) => s,
        Some(Value::Number(n)) => {
            return Ok(number_item(question, &n.to_string(), &n.to_string(), at));
        }
        _ => {
            return Err(missing(
                at,
                "gsm8k",
                "answer",
                "the worked solution ending in `#### <number>`",
            ));
        }
    };
    let Some((_, last)) = solution.rsplit_once("####") else {
        return Err(ScoredError(format!(
            "{at}: this gsm8k row's `answer` has no final answer after `####`: every graded row needs one (e.g. \"... #### 18\")"
        )));
    };
    let number = last.trim();
    if super::grade::parse_number(number).is_none() {
        return Err(ScoredError(format!(
            "{at}: this gsm8k row's final answer after `####` is {number:?}, not a number"
        )));
    }
    Ok(number_item(question, solution, number, at))
}

fn hellaswag(row: &Row, at: &str) -> Result<Item, ScoredError> {
    let field = |k: &str| row.get(k).and_then(Value::as_str);
    let ctx = match (field("ctx"), field("ctx_a"), field("ctx_b")) {
        (Some(c), _, _) => c.to_string(),
        (None, Some(a), Some(b)) => format!("{a} {b}").trim().to_string(),
        _ => return Err(missing(at, "hellaswag", "ctx", "the context to continue")),
    };
    let endings = options(row, "endings", at, "hellaswag")?;
    if matches!(row.get("label"), Some(Value::String(s)) if s.trim().is_empty()) {
        return Err(ScoredError(format!(
            "{at}: this hellaswag row's `label` is empty: it has no answer to grade against (HellaSwag's test split is unlabelled: use its validation split, --accuracy-split validation)"
        )));
    }
    let index = answer_index(row, "label", endings.len(), at, "hellaswag")?;
    let subject = field("activity_label").map(String::from);
    let block = prompt::continuation_block(subject.as_deref(), &ctx, &endings);
    Ok(choice_item(block, index, endings.len(), subject, at))
}

fn choice_item(block: String, index: u8, of: usize, subject: Option<String>, at: &str) -> Item {
    let of = of as u8;
    Item {
        subject,
        block,
        solution: format!(" {}", super::grade::letter(index)),
        expected: Expected::Choice { index, of },
        at: at.to_string(),
    }
}

fn number_item(question: &str, solution: &str, number: &str, at: &str) -> Item {
    Item {
        subject: None,
        block: prompt::question_block(question),
        solution: format!(" {}", solution.trim()),
        expected: Expected::Number(number.to_string()),
        at: at.to_string(),
    }
}

fn missing(at: &str, b: &str, field: &str, what: &str) -> ScoredError {
    ScoredError(format!(
        "{at}: this {b} row has no `{field}` ({what}); every graded row needs it"
    ))
}

fn text<'a>(row: &'a Row, field: &str, at: &str, b: &str) -> Result<&'a str, ScoredError> {
    match row.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        _ => Err(missing(at, b, field, "a text")),
    }
}

/// A list of 2 to 26 option texts (numbers are taken as their text).
fn options(row: &Row, field: &str, at: &str, b: &str) -> Result<Vec<String>, ScoredError> {
    let Some(Value::Array(list)) = row.get(field) else {
        return Err(missing(at, b, field, "a list of 2 to 26 options"));
    };
    if !(2..=26).contains(&list.len()) {
        return Err(ScoredError(format!(
            "{at}: this {b} row's `{field}` has {} options; 2 to 26 can be lettered A, B, ...",
            list.len()
        )));
    }
    list.iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            other => Err(ScoredError(format!(
                "{at}: this {b} row's `{field}` holds {other}, not a text"
            ))),
        })
        .collect()
}

/// The right option's 0-based index: a number, a digit string, or a letter.
fn answer_index(row: &Row, field: &str, of: usize, at: &str, b: &str) -> Result<u8, ScoredError> {
    let index = match row.get(field) {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => match s.trim().as_bytes() {
            [letter @ b'A'..=b'Z'] => Some(u64::from(letter - b'A')),
            _ => s.trim().parse().ok(),
        },
        None | Some(Value::Null) => {
            return Err(missing(
                at,
                b,
                field,
                "the right option's 0-based index, or its letter",
            ));
        }
        Some(_) => None,
    };
    match index {
        Some(i) if (i as usize) < of => Ok(i as u8),
        _ => Err(ScoredError(format!(
            "{at}: this {b} row's `{field}` is {}, not the index (0 to {}) or letter (A to {}) of one of its {of} options",
            row.get(field)
                .map_or("missing".to_string(), Value::to_string),
            of - 1,
            super::grade::letter((of - 1) as u8)
        ))),
    }
}

/// The rows of a JSONL file (blank lines skipped), each with its `file:line`.
pub fn read_jsonl(path: &Path) -> Result<Vec<Located>, ScoredError> {
    let file = std::fs::File::open(path)
        .map_err(|e| ScoredError(format!("cannot read {}: {e}", path.display())))?;
    read_jsonl_from(std::io::BufReader::new(file), path)
}

/// The rows of JSONL text read from `input`, located as lines of `path`.
pub fn read_jsonl_from(input: impl BufRead, path: &Path) -> Result<Vec<Located>, ScoredError> {
    let mut rows = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let at = format!("{}:{}", path.display(), n + 1);
        let line = line.map_err(|e| ScoredError(format!("{at}: cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(row)) => rows.push((row, at)),
            Ok(_) => {
                return Err(ScoredError(format!(
                    "{at}: expected one JSON object per line"
                )));
            }
            Err(e) => return Err(ScoredError(format!("{at}: not JSON: {e}"))),
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Row {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("test rows are objects"),
        }
    }

    #[test]
    fn mmlu_rows() {
        let r = row(
            json!({"question": "2+2?", "subject": "math", "choices": ["3", "4", "5", "6"], "answer": 1}),
        );
        let it = item(Benchmark::Mmlu, &r, "f:1").unwrap();
        assert_eq!(it.expected, Expected::Choice { index: 1, of: 4 });
        assert_eq!(it.block, "2+2?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:");
        assert_eq!(
            (it.solution.as_str(), it.subject.as_deref()),
            (" B", Some("math"))
        );
        for answer in [json!("B"), json!("1"), json!(1)] {
            let mut r = r.clone();
            r.insert("answer".into(), answer);
            assert_eq!(
                item(Benchmark::Mmlu, &r, "f:1").unwrap().expected,
                Expected::Choice { index: 1, of: 4 }
            );
        }
        let mut no_answer = r.clone();
        no_answer.remove("answer");
        let e = item(Benchmark::Mmlu, &no_answer, "data/mmlu.jsonl:7").unwrap_err();
        assert!(
            e.0.starts_with("data/mmlu.jsonl:7: this mmlu row has no `answer`"),
            "{e}"
        );
        let mut out = r.clone();
        out.insert("answer".into(), json!(4));
        let e = item(Benchmark::Mmlu, &out, "f:2").unwrap_err();
        assert!(
            e.0.contains("is 4, not the index (0 to 3) or letter (A to D)"),
            "{e}"
        );
    }

    #[test]
    fn gsm8k_rows() {
        let r = row(json!({"question": "How many?", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"}));
        let it = item(Benchmark::Gsm8k, &r, "f:1").unwrap();
        assert_eq!(it.expected, Expected::Number("7".into()));
        assert_eq!(it.block, "Question: How many?\nAnswer:");
        assert!(it.solution.ends_with("#### 7"));
        let r = row(json!({"question": "How many?", "answer": "seven"}));
        let e = item(Benchmark::Gsm8k, &r, "g.jsonl:3").unwrap_err();
        assert!(
            e.0.starts_with(
                "g.jsonl:3: this gsm8k row's `answer` has no final answer after `####`"
            ),
            "{e}"
        );
    }

    #[test]
    fn hellaswag_rows() {
        let r = row(
            json!({"ctx_a": "A man sits.", "ctx_b": "He", "endings": ["runs", "eats", "sleeps", "sings"], "label": "2", "activity_label": "Sitting"}),
        );
        let it = item(Benchmark::Hellaswag, &r, "f:1").unwrap();
        assert_eq!(it.expected, Expected::Choice { index: 2, of: 4 });
        assert!(
            it.block.starts_with("Sitting: A man sits. He\nA. runs"),
            "{}",
            it.block
        );
        let mut unlabelled = r.clone();
        unlabelled.insert("label".into(), json!(""));
        let e = item(Benchmark::Hellaswag, &unlabelled, "h:9").unwrap_err();
        assert!(
            e.0.contains("h:9: this hellaswag row's `label` is empty"),
            "{e}"
        );
    }

    #[test]
    fn jsonl_rows_carry_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.jsonl");
        std::fs::write(&p, "{\"a\": 1}\n\n{\"a\": 2}\nnot json\n").unwrap();
        let e = read_jsonl(&p).unwrap_err();
        assert!(e.0.contains("q.jsonl:4: not JSON"), "{e}");
        std::fs::write(&p, "{\"a\": 1}\n\n{\"a\": 2}\n").unwrap();
        let rows = read_jsonl(&p).unwrap();
        assert_eq!(rows.len(), 2);
        assert!(rows[1].1.ends_with("q.jsonl:3"), "{}", rows[1].1);
    }
}
