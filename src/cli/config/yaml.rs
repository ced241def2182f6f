//! `--config FILE.yaml` (or `.yml`): the same flat table of long flag names as the TOML form,
//! written as a YAML mapping:
//!
//! ```yaml
//! model: gpt2
//! url: localhost:8001
//! streaming: true
//! concurrency: [1, 2, 4, 8]
//! slo:
//!   - time_to_first_token.p99<=500ms
//!   - error_rate<1%
//! ```
//!
//! Values are scalars or lists of scalars; a plain `true`/`false` is a switch's value, a plain
//! number a number, and anything quoted a string (`model: "007"`). Nested mappings, anchors and
//! aliases are refused with their line. Read from the parser's events, which carry each key's
//! line, so errors name it as they do for TOML.

use std::path::Path;

use toml::Value;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::Entry;
use crate::error::UsageError;

/// Every event of the file with its (1-based) line.
struct Events(Vec<(Event, usize)>);

impl MarkedEventReceiver for Events {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        self.0.push((ev, mark.line()));
    }
}

/// The file's keys with their values and lines, in file order.
pub(super) fn parse(text: &str, path: &Path) -> Result<Vec<Entry>, UsageError> {
    let mut events = Events(Vec::new());
    Parser::new_from_str(text)
        .load(&mut events, false)
        .map_err(|e| {
            UsageError(format!(
                "{}:{}: not a YAML file of flags: {}",
                path.display(),
                e.marker().line(),
                e.info()
            ))
        })?;
    let fail = |line: usize, why: String| UsageError(format!("{}:{line}: {why}", path.display()));
    let mut it = events.0.into_iter().filter(|(e, _)| {
        !matches!(
            e,
            Event::StreamStart | Event::StreamEnd | Event::DocumentStart | Event::DocumentEnd
        )
    });
    match it.next() {
        None => return Ok(Vec::new()),
        Some((Event::MappingStart(..), _)) => {}
        Some((_, line)) => {
            return Err(fail(
                line,
                "expected a mapping of long flag names to values, e.g. model: gpt2".into(),
            ));
        }
    }
    let mut out: Vec<Entry> = Vec::new();
    loop {
        let (key, line) = match it.next() {
            Some((Event::MappingEnd, _)) | None => return Ok(out),
            Some((Event::Scalar(k, ..), line)) => (k, line),
            Some((_, line)) => return Err(fail(line, "a key must be a flag name".into())),
        };
        if out.iter().any(|(k, _)| *k == key) {
            return Err(fail(line, format!("{key} is given twice")));
        }
        let value = match it.next() {
            Some((Event::Scalar(v, style, ..), _)) => scalar(v, style),
            Some((Event::SequenceStart(..), _)) => list(&mut it).ok_or_else(|| {
                fail(
                    line,
                    format!("{key}: a list may hold only strings and numbers"),
                )
            })?,
            Some((Event::MappingStart(..), _)) => {
                return Err(fail(
                    line,
                    format!("{key}: expected a value or a list, found a mapping"),
                ));
            }
            _ => return Err(fail(line, format!("{key}: expected a value"))),
        };
        if value == Value::String(String::new()) {
            return Err(fail(line, format!("{key}: no value given")));
        }
        out.push((key, (value, line)));
    }
}

/// The scalars of a list, up to its end; `None` when it holds anything else (a list or a
/// mapping).
fn list(it: &mut impl Iterator<Item = (Event, usize)>) -> Option<Value> {
    let mut items = Vec::new();
    loop {
        match it.next()? {
            (Event::SequenceEnd, _) => return Some(Value::Array(items)),
            (Event::Scalar(v, style, ..), _) => items.push(scalar(v, style)),
            _ => return None,
        }
    }
}

/// A scalar as the value it reads as: quoted text is a string; plain `true`/`false`, integers
/// and numbers are typed; `null`/`~`/nothing is no value (an empty string).
fn scalar(v: String, style: TScalarStyle) -> Value {
    if style != TScalarStyle::Plain {
        return Value::String(v);
    }
    match v.as_str() {
        "true" | "True" | "TRUE" => Value::Boolean(true),
        "false" | "False" | "FALSE" => Value::Boolean(false),
        "null" | "Null" | "NULL" | "~" | "" => Value::String(String::new()),
        _ => match (v.parse::<i64>(), v.parse::<f64>()) {
            (Ok(i), _) => Value::Integer(i),
            (_, Ok(f)) if f.is_finite() => Value::Float(f),
            _ => Value::String(v),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Result<Vec<Entry>, UsageError> {
        parse(text, Path::new("run.yaml"))
    }

    #[test]
    fn flat_mapping_with_lines_and_types() {
        let e = entries(
            "# a run\nmodel: gpt2\nconcurrency: [1, 2, 4]\nslo:\n  - 'a<=1'\n  - b\nstreaming: true\nrate: 2.5\nname: \"007\"\n",
        )
        .unwrap();
        let got: Vec<(&str, &Value, usize)> =
            e.iter().map(|(k, (v, l))| (k.as_str(), v, *l)).collect();
        assert_eq!(
            got,
            vec![
                ("model", &Value::String("gpt2".into()), 2),
                (
                    "concurrency",
                    &Value::Array(vec![1.into(), 2.into(), 4.into()]),
                    3
                ),
                ("slo", &Value::Array(vec!["a<=1".into(), "b".into()]), 4),
                ("streaming", &Value::Boolean(true), 7),
                ("rate", &Value::Float(2.5), 8),
                ("name", &Value::String("007".into()), 9),
            ]
        );
        assert!(entries("").unwrap().is_empty());
    }

    #[test]
    fn refusals_name_the_line() {
        let err = |t: &str| entries(t).unwrap_err().0;
        assert_eq!(
            err("model: gpt2\nextra:\n  a: 1\n"),
            "run.yaml:2: extra: expected a value or a list, found a mapping"
        );
        assert_eq!(
            err("model: a\nmodel: b\n"),
            "run.yaml:2: model is given twice"
        );
        assert_eq!(
            err("- a\n- b\n"),
            "run.yaml:1: expected a mapping of long flag names to values, e.g. model: gpt2"
        );
        assert_eq!(err("streaming:\n"), "run.yaml:1: streaming: no value given");
        assert_eq!(
            err("slo: [[a]]\n"),
            "run.yaml:1: slo: a list may hold only strings and numbers"
        );
        assert!(err("model: [a\n").starts_with("run.yaml:"), "a scan error");
    }
}
