//! The sessions of a run as the plan resolved them: where their user messages come from, how
//! many sessions and turns, the think times, and the header carrying a session's id.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::FileConversation;

/// Where the sessions' user messages come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConversationSource {
    /// Synthetic user messages (the prompt length flags), `--session-turns-mean/-stddev` turns.
    Synthetic {
        /// `--session-turns-mean`.
        turns_mean: u32,
        /// `--session-turns-stddev`.
        turns_stddev: u32,
    },
    /// A conversation file's user messages, in order.
    File {
        /// The file.
        path: PathBuf,
    },
}

/// The sessions of a run, as resolved from the flags (and, for a file, read and checked).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionPlan {
    /// Where the user messages come from.
    pub source: ConversationSource,
    /// Distinct sessions (`--num-sessions`; a file's conversations, or its first this many).
    pub sessions: u32,
    /// User turns of each session, in session order (sampled from `--random-seed`).
    #[serde(skip)]
    pub turns: Vec<u32>,
    /// Every session's turns: a level without `--request-count` or a time window sends each
    /// session once, this many requests.
    pub total_turns: u64,
    /// Mean think time between a turn's answer and the next turn (ms).
    pub delay_mean_ms: u64,
    /// Its standard deviation (ms); delays are clamped at 0.
    pub delay_stddev_ms: u64,
    /// The file's conversations (empty for synthetic sessions).
    #[serde(skip)]
    pub file: Arc<Vec<FileConversation>>,
    /// An agentic session file's sessions (`None`: conversations or synthetic sessions); then
    /// `sessions` counts its roots and `turns` its sessions' turns in file order.
    #[serde(skip)]
    pub agents: Option<Arc<super::dag::Dag>>,
    /// The header each request carries its session's id in (`--session-header`; `None`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Which answer a turn's history carries (`--session-replies`; written only when recorded).
    #[serde(skip_serializing_if = "Replies::is_live")]
    pub replies: Replies,
}

/// Which answer goes into a session's history before its next turn (`--session-replies`,
/// parsed by clap into this type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Replies {
    /// The server's own answer, as a chat client or an agent sends it.
    #[default]
    #[value(help = "The server's own answers")]
    Live,
    /// The conversation file's recorded assistant message: the same history on every run and
    /// every server (the server's answer still measured, not carried on).
    #[value(help = "The conversation file's recorded answers")]
    Recorded,
}

impl Replies {
    /// Whether the history carries the server's answers (the default).
    pub fn is_live(&self) -> bool {
        *self == Replies::Live
    }
}
