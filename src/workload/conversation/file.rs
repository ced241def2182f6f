//! Conversation files: real multi-turn text replayed turn by turn (`--input-file`).
//!
//! JSONL, one conversation per line, in either of two forms told apart by their keys (as a
//! trace is told apart by `input_length`); blank lines are skipped, other keys ignored:
//!
//! | form | line | roles |
//! |---|---|---|
//! | ShareGPT | `{"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}, ...]}` | `from`: `human`/`user`, `gpt`/`assistant`/`chatgpt`/`bard`/`bing`, `system` |
//! | OpenAI | `{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, ...]}` | `role`: `user`, `assistant`, `system`/`developer`; `content` a string or an array of `{"type": "text", "text": ...}` parts |
//!
//! A file whose first character is `[` is one JSON array of such conversations instead (the
//! form the ShareGPT dumps come in); errors then name the element.
//!
//! Each user message is one turn, replayed in order. The file's assistant messages are not
//! sent by default: turn N carries the server's own answers to turns 1..N−1, which is what a
//! real chat client sends (and what a prefix cache sees); with `--session-replies recorded` it
//! carries the file's answers instead (the first assistant message after each user message). System messages go first, in file order. A line
//! that is not JSON, a message without its role or text, an unknown role or a conversation
//! without a user message is refused with its line and field before anything is sent.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::UsageError;

/// The keys that make a row a conversation (ShareGPT's, then OpenAI's).
pub const KEYS: [&str; 2] = ["conversations", "messages"];

/// One conversation of a file: what is sent of it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileConversation {
    /// Line in the file (1-based), or position in a JSON array file (1-based), for messages.
    pub line: usize,
    /// System messages, sent first in every turn.
    pub system: Vec<String>,
    /// The user messages, one per turn, in order.
    pub users: Vec<String>,
    /// The recorded assistant answer to each user message (the first assistant message after
    /// it, before the next user message), `None` where there is none; sent only with
    /// `--session-replies recorded`.
    pub replies: Vec<Option<String>>,
}

/// An example line of each form, shown in errors.
const EXAMPLE: &str = r#"{"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]} or {"messages": [{"role": "user", "content": "Hi"}]}"#;

/// Whether a first row (a JSON object) is a conversation.
pub fn is_conversation(row: &Value) -> bool {
    KEYS.iter().any(|k| row.get(k).is_some())
}

/// Whether the file is one JSON array (its first non-blank character is `[`): a ShareGPT dump.
pub fn is_array(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(64);
    let _ = file.take(4096).read_to_end(&mut head);
    String::from_utf8_lossy(&head)
        .trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
        .starts_with('[')
}

/// Reads and checks a conversation file (JSONL, or one JSON array).
pub fn read(path: &Path) -> Result<Vec<FileConversation>, UsageError> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("--input-file {}: cannot open: {e}", path.display())))?;
    if is_array(path) {
        return read_array(BufReader::new(file), path);
    }
    read_from(BufReader::new(file), path)
}

/// A file holding one JSON array of conversations; errors name the element (1-based).
pub fn read_array(reader: impl BufRead, path: &Path) -> Result<Vec<FileConversation>, UsageError> {
    let at = || format!("--input-file {}", path.display());
    let value: Value = serde_json::from_reader(reader).map_err(|e| {
        UsageError(format!(
            "{}: invalid JSON ({e}): a file starting with [ must be one array of conversations such as {EXAMPLE}",
            at()
        ))
    })?;
    let Value::Array(items) = value else {
        return Err(UsageError(format!("{}: expected one JSON array", at())));
    };
    if items.is_empty() {
        return Err(UsageError(format!(
            "{}: the array holds no conversations: give at least one, such as {EXAMPLE}",
            at()
        )));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            parse_value(v, i + 1).map_err(|why| {
                UsageError(format!("{}: element {} of the array: {why}", at(), i + 1))
            })
        })
        .collect()
}

/// [`read`] over any reader; `path` only names the source in errors.
pub fn read_from(reader: impl BufRead, path: &Path) -> Result<Vec<FileConversation>, UsageError> {
    let mut out = Vec::new();
    for (i, line) in reader.split(b'\n').enumerate() {
        let n = i + 1;
        let at = || format!("--input-file {}: line {n}", path.display());
        let line = line.map_err(|e| UsageError(format!("{}: cannot read: {e}", at())))?;
        let Ok(text) = std::str::from_utf8(&line) else {
            return Err(UsageError(format!("{}: not valid UTF-8", at())));
        };
        let text = text.trim().trim_start_matches('\u{feff}');
        if text.is_empty() {
            continue;
        }
        let conversation =
            parse_line(text, n).map_err(|why| UsageError(format!("{}: {why}", at())))?;
        out.push(conversation);
    }
    if out.is_empty() {
        return Err(UsageError(format!(
            "--input-file {}: no conversations (the file is empty or blank): give one per line, such as {EXAMPLE}",
            path.display()
        )));
    }
    Ok(out)
}

/// What is wrong with one conversation of a file (a line, or an element of an array): the
/// field, and what to write instead. The readers put `--input-file`, the file and the line in
/// front, as a usage error (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    /// Not JSON.
    #[error("invalid JSON ({0}): each line must be one conversation such as {EXAMPLE}")]
    Json(#[source] serde_json::Error),
    /// Not a JSON object.
    #[error("expected a JSON object such as {EXAMPLE}")]
    NotObject,
    /// Neither `conversations` nor `messages`.
    #[error(
        "missing field \"conversations\" (ShareGPT) or \"messages\" (OpenAI): every line of a conversation file is one conversation, such as {EXAMPLE}"
    )]
    NoMessages,
    /// The messages are not an array.
    #[error("field \"{0}\" must be an array of messages")]
    NotArray(&'static str),
    /// A message that is not an object.
    #[error("field \"{key}[{i}]\" must be an object")]
    NotMessage {
        /// `conversations` or `messages`.
        key: &'static str,
        /// The message's index.
        i: usize,
    },
    /// A message field missing or of the wrong form; `fix` says what it must be.
    #[error("field \"{key}[{i}].{field}\" {fix}")]
    Field {
        /// `conversations` or `messages`.
        key: &'static str,
        /// The message's index.
        i: usize,
        /// `from`, `value`, `role`, `content`.
        field: &'static str,
        /// What is wrong and what to give.
        fix: &'static str,
    },
    /// An author this reader does not know.
    #[error("field \"{key}[{i}].{field}\" is \"{got}\": {fix}")]
    Author {
        /// `conversations` or `messages`.
        key: &'static str,
        /// The message's index.
        i: usize,
        /// `from` or `role`.
        field: &'static str,
        /// What it said.
        got: String,
        /// The authors it may name.
        fix: &'static str,
    },
    /// No user message: nothing to send.
    #[error(
        "field \"{key}\" has no user message ({}): a conversation needs at least one turn to send; remove the line or add the user's message",
        if *.sharegpt { "\"from\": \"human\"" } else { "\"role\": \"user\"" }
    )]
    NoUser {
        /// `conversations` or `messages`.
        key: &'static str,
        /// The ShareGPT form (`from`), else OpenAI's (`role`).
        sharegpt: bool,
    },
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Author {
    System,
    User,
    Assistant,
}

/// One line, checked; `Err` names the field and says what to change.
fn parse_line(text: &str, line: usize) -> Result<FileConversation, ConversationError> {
    let value: Value = serde_json::from_str(text).map_err(ConversationError::Json)?;
    parse_value(value, line)
}

/// One conversation, checked; `Err` names the field and says what to change.
fn parse_value(value: Value, line: usize) -> Result<FileConversation, ConversationError> {
    let Value::Object(row) = value else {
        return Err(ConversationError::NotObject);
    };
    let (key, sharegpt) = match (row.get(KEYS[0]), row.get(KEYS[1])) {
        (Some(_), _) => (KEYS[0], true),
        (None, Some(_)) => (KEYS[1], false),
        (None, None) => return Err(ConversationError::NoMessages),
    };
    let Some(items) = row.get(key).and_then(Value::as_array) else {
        return Err(ConversationError::NotArray(key));
    };
    let mut conversation = FileConversation {
        line,
        ..FileConversation::default()
    };
    for (i, item) in items.iter().enumerate() {
        let Some(m) = item.as_object() else {
            return Err(ConversationError::NotMessage { key, i });
        };
        let (author, text) = if sharegpt {
            sharegpt_message(m, key, i)?
        } else {
            openai_message(m, key, i)?
        };
        match author {
            Author::System => conversation.system.push(text),
            Author::User => {
                conversation.users.push(text);
                conversation.replies.push(None);
            }
            Author::Assistant => {
                // The first answer after a user message; one before any is not a reply.
                if let Some(r @ None) = conversation.replies.last_mut()
                    && !text.is_empty()
                {
                    *r = Some(text);
                }
            }
        }
    }
    if conversation.users.is_empty() {
        return Err(ConversationError::NoUser { key, sharegpt });
    }
    Ok(conversation)
}

fn sharegpt_message(
    m: &Map<String, Value>,
    key: &'static str,
    i: usize,
) -> Result<(Author, String), ConversationError> {
    let field = |field, fix| ConversationError::Field { key, i, field, fix };
    let from = m
        .get("from")
        .and_then(Value::as_str)
        .ok_or_else(|| field("from", "is missing or not a string (human, gpt or system)"))?;
    let author = match from.to_ascii_lowercase().as_str() {
        "human" | "user" => Author::User,
        "gpt" | "assistant" | "chatgpt" | "bard" | "bing" | "model" => Author::Assistant,
        "system" => Author::System,
        other => {
            return Err(ConversationError::Author {
                key,
                i,
                field: "from",
                got: other.into(),
                fix: "give human (or user), gpt (or assistant) or system",
            });
        }
    };
    let text = m.get("value").and_then(Value::as_str).ok_or_else(|| {
        field(
            "value",
            "is missing or not a string: give the message's text",
        )
    })?;
    Ok((author, text.to_string()))
}

fn openai_message(
    m: &Map<String, Value>,
    key: &'static str,
    i: usize,
) -> Result<(Author, String), ConversationError> {
    let field = |field, fix| ConversationError::Field { key, i, field, fix };
    let role = m.get("role").and_then(Value::as_str).ok_or_else(|| {
        field(
            "role",
            "is missing or not a string (user, assistant or system)",
        )
    })?;
    let author = match role {
        "user" => Author::User,
        "assistant" => Author::Assistant,
        "system" | "developer" => Author::System,
        other => {
            return Err(ConversationError::Author {
                key,
                i,
                field: "role",
                got: other.into(),
                fix: "give user, assistant or system (tool calls are not replayed)",
            });
        }
    };
    let text = match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        // An assistant message may carry no text (tool calls); it is not sent anyway.
        Some(Value::Null) | None if author == Author::Assistant => String::new(),
        Some(Value::Array(parts)) => text_parts(parts).ok_or_else(|| {
            field(
                "content",
                "must be a string or an array of {\"type\": \"text\", \"text\": ...} parts",
            )
        })?,
        _ => {
            return Err(field(
                "content",
                "is missing or not text: give the message's text as a string",
            ));
        }
    };
    Ok((author, text))
}

/// The text of an OpenAI content array (its text parts, joined); `None` when a part is not text.
fn text_parts(parts: &[Value]) -> Option<String> {
    parts
        .iter()
        .map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str) -> Result<Vec<FileConversation>, UsageError> {
        read_from(text.as_bytes(), Path::new("c.jsonl"))
    }

    #[test]
    fn reads_both_forms() {
        let c = read_str(concat!(
            r#"{"conversations": [{"from": "system", "value": "Be brief."}, {"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}, {"from": "human", "value": "Again"}]}"#,
            "\n\n",
            r#"{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, {"role": "assistant", "content": null}, {"role": "developer", "content": "x"}]}"#,
            "\n"
        ))
        .unwrap();
        assert_eq!(
            c,
            [
                FileConversation {
                    line: 1,
                    system: vec!["Be brief.".into()],
                    users: vec!["Hi".into(), "Again".into()],
                    replies: vec![Some("Hello".into()), None],
                },
                FileConversation {
                    line: 3,
                    system: vec!["x".into()],
                    users: vec!["ab".into()],
                    replies: vec![None],
                },
            ]
        );
    }

    #[test]
    fn bad_lines_name_line_and_field() {
        let ok = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
        let cases = [
            ("{\"messages\": [", "line 2: invalid JSON"),
            ("[1]", "line 2: expected a JSON object"),
            (
                "{\"text\": \"hi\"}",
                "line 2: missing field \"conversations\"",
            ),
            (
                r#"{"messages": [{"role": "assistant", "content": "x"}]}"#,
                "line 2: field \"messages\" has no user message (\"role\": \"user\")",
            ),
            (
                r#"{"conversations": [{"from": "gpt", "value": "x"}]}"#,
                "has no user message (\"from\": \"human\")",
            ),
            (
                r#"{"conversations": [{"from": "robot", "value": "x"}]}"#,
                "field \"conversations[0].from\" is \"robot\"",
            ),
            (
                r#"{"conversations": [{"from": "human"}]}"#,
                "field \"conversations[0].value\" is missing",
            ),
            (
                r#"{"messages": [{"content": "x"}]}"#,
                "field \"messages[0].role\" is missing",
            ),
            (
                r#"{"messages": [{"role": "user", "content": 5}]}"#,
                "field \"messages[0].content\"",
            ),
            (r#"{"messages": {}}"#, "field \"messages\" must be an array"),
        ];
        for (second, want) in cases {
            let e = read_str(&format!("{ok}\n{second}\n")).unwrap_err();
            assert!(e.0.contains(want), "{e} lacks {want:?}");
            assert!(e.0.contains("c.jsonl"), "{e}");
        }
        assert!(read_str("\n").unwrap_err().0.contains("no conversations"));
    }

    #[test]
    fn a_json_array_file_is_read_whole() {
        let read = |text: &str| read_array(text.as_bytes(), Path::new("s.json"));
        let c = read(
            "[\n  {\"conversations\": [{\"from\": \"human\", \"value\": \"a\"}]},\n  {\"messages\": [{\"role\": \"user\", \"content\": \"b\"}]}\n]\n",
        )
        .unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[1].line, c[1].users.clone()), (2, vec!["b".to_string()]));
        let e = read(
            "[{\"messages\": []}, {\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]",
        )
        .unwrap_err();
        assert!(
            e.0.contains("element 1 of the array: field \"messages\" has no user message"),
            "{e}"
        );
        let e = read("[{\"messages\": [").unwrap_err();
        assert!(e.0.contains("invalid JSON"), "{e}");
        assert!(read("[]").unwrap_err().0.contains("no conversations"));
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.json");
        std::fs::write(
            &path,
            " \n[{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}]",
        )
        .unwrap();
        assert!(is_array(&path));
        assert_eq!(super::read(&path).unwrap()[0].users, ["x"]);
    }
}
