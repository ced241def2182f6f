//! What a session in flight has said so far (`dataset::turn_body` makes its next turn's body).
//!
//! A worker owns one [`History`] and reuses it from session to session. It holds the session's
//! messages only while the session is in flight (cleared when the next one begins), so memory
//! grows with the sessions in flight and their length, never with the request count. The
//! answer kept is the server's answer text (reasoning left out, as chat clients do), appended
//! once per response.

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
}

/// One message of a chat request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// Its author.
    pub role: Role,
    /// Its text.
    pub content: String,
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

    /// Adds the next user message.
    pub fn ask(&mut self, turn: &UserTurn) {
        self.push(Role::User, &turn.text, turn.tokens);
    }

    /// Adds the server's answer to the last user message (`tokens`: its count).
    pub fn answer(&mut self, text: &str, tokens: u32) {
        self.push(Role::Assistant, text, tokens);
    }

    fn push(&mut self, role: Role, text: &str, tokens: u32) {
        self.messages.push(Message {
            role,
            content: text.to_string(),
        });
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
            turns: Vec::new(),
            delays_ms: Vec::new(),
            agent: None,
        };
        let turn = |text: &str| UserTurn {
            text: text.into(),
            tokens: 2,
            max_tokens: None,
            recorded: None,
        };
        let mut h = History::default();
        h.begin(&script);
        h.ask(&turn("u1"));
        h.answer("a1", 3);
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
