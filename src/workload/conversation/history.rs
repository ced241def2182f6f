//! What a session in flight has said so far (`dataset::turn_body` makes its next turn's body).
//!
//! A worker owns one [`History`] and reuses it from session to session. It holds the session's
//! messages only while the session is in flight (cleared when the next one begins), so memory
//! grows with the sessions in flight and their length, never with the request count. The
//! answer kept is the server's answer text (reasoning left out, as chat clients do), appended
//! once per response.
//!
//! A tool round trip of an agentic session is kept in the chat API's form: the answer to the
//! turn before it is an assistant message with `tool_calls` (the server's call when it made
//! one), and the tool's result a `tool` message answering that call by its id. The Responses
//! and Messages bodies are rendered from this form (`workload::bodies`).

use serde::Serialize;

use super::{Script, UserTurn};

/// Who wrote a message, as the chat API names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A system prompt.
    System,
    /// The user.
    User,
    /// The server's answer.
    Assistant,
    /// A tool's result, answering a call of the assistant message before it.
    Tool,
}

/// One message of a chat request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// Its author.
    pub role: Role,
    /// Its text.
    pub content: String,
    /// The tool an assistant message calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<[ToolCall; 1]>,
    /// The call a tool message answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A message of text alone.
    pub fn new(role: Role, content: String) -> Message {
        Message {
            role,
            content,
            tool_calls: None,
            tool_call_id: None,
        }
    }
}

/// A tool call of an assistant message, in the chat API's form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCall {
    /// The call's id, which the tool message answering it repeats.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function called.
    pub function: FunctionCall,
}

/// The function of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FunctionCall {
    /// Its name.
    pub name: String,
    /// Its arguments, a JSON text.
    pub arguments: String,
}

impl ToolCall {
    /// A call of `name` with `arguments` (JSON text).
    pub fn new(id: String, name: &str, arguments: String) -> ToolCall {
        ToolCall {
            id,
            kind: "function",
            function: FunctionCall {
                name: name.to_string(),
                arguments,
            },
        }
    }
}

/// The messages of the session in flight and their tokens.
#[derive(Debug, Default, Clone)]
pub struct History {
    messages: Vec<Message>,
    /// Tokens of every message's text (no chat template, no separators).
    tokens: u32,
}

impl History {
    /// Starts a session: forgets the previous one and puts the script's system messages first.
    pub fn begin(&mut self, script: &Script) {
        self.messages.clear();
        self.tokens = 0;
        for (text, tokens) in &script.system {
            self.push(Role::System, text, *tokens);
        }
    }

    /// Adds the next turn's messages: the tool's result it carries, answering the call of the
    /// last answer (a user message when that answer called no tool: a session that opens with
    /// a result), then its user message, if it has one.
    pub fn ask(&mut self, turn: &UserTurn) {
        if let Some(result) = &turn.tool {
            let call = self.messages.last().and_then(|m| m.tool_calls.as_ref());
            let id = call.map(|[c]| c.id.clone());
            let role = if id.is_some() { Role::Tool } else { Role::User };
            self.push(role, &result.text, result.tokens);
            if let Some(last) = self.messages.last_mut() {
                last.tool_call_id = id;
            }
        }
        if turn.tool.is_none() || !turn.text.is_empty() {
            self.push(Role::User, &turn.text, turn.tokens);
        }
    }

    /// Adds the server's answer to the last user message (`tokens`: its count), with the tool
    /// call it made or is taken to have made.
    pub fn answer(&mut self, text: &str, tokens: u32, call: Option<ToolCall>) {
        self.push(Role::Assistant, text, tokens);
        if let Some(last) = self.messages.last_mut() {
            last.tool_calls = call.map(|c| [c]);
        }
    }

    fn push(&mut self, role: Role, text: &str, tokens: u32) {
        self.messages.push(Message::new(role, text.to_string()));
        self.tokens = self.tokens.saturating_add(tokens);
    }

    /// The messages so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Input tokens of the next request: every message's text counted apart and added up.
    pub fn tokens(&self) -> u32 {
        self.tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_alternate_after_the_system_messages() {
        let script = Script {
            system: vec![("sys".into(), 1)],
            ..Script::default()
        };
        let turn = |text: &str| UserTurn {
            text: text.into(),
            tokens: 2,
            ..UserTurn::default()
        };
        let mut h = History::default();
        h.begin(&script);
        h.ask(&turn("u1"));
        h.answer("a1", 3, None);
        h.ask(&turn("u2"));
        assert_eq!(h.tokens(), 8);
        assert_eq!(
            serde_json::to_string(h.messages()).unwrap(),
            r#"[{"role":"system","content":"sys"},{"role":"user","content":"u1"},{"role":"assistant","content":"a1"},{"role":"user","content":"u2"}]"#
        );
        h.begin(&script);
        assert_eq!((h.messages().len(), h.tokens()), (1, 1), "a new session");
    }
}
