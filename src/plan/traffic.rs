//! The parts of the workload and load sections that make traffic look like production, each
//! resolved and checked alone: a request trace (`--input-file` in the Mooncake form) and its
//! fixed schedule, multi-turn sessions (synthetic, or a conversation file), the prefix prompt
//! pool, and the prompt salt.

use std::path::Path;

use crate::error::{UsageError, usage};
use crate::load::{LevelLength, LevelLengthRule, Stimulus};
use crate::workload::conversation::{self, FileConversation};
use crate::workload::conversation::{ConversationSource, Replies, SessionPlan};
use crate::workload::trace::{self, ReadOptions};
use crate::workload::{PrefixPool, PromptSalt, TraceSource, WorkloadPlan};

/// `--block-size`'s default: Mooncake's 512 tokens per hash id.
pub const DEFAULT_BLOCK_SIZE: u32 = 512;

/// `--prefix-prompt-length`'s default, as GenAI-Perf's.
pub const DEFAULT_PREFIX_LENGTH: u32 = 100;

/// `--prompt-salt`: `auto` (the default), `none`, or any other text as a fixed salt.
pub fn prompt_salt(raw: Option<&str>) -> Result<PromptSalt, UsageError> {
    match raw.map(str::trim) {
        None | Some("auto") => Ok(PromptSalt::Auto),
        Some("none") => Ok(PromptSalt::None),
        Some("") => usage(
            "--prompt-salt must not be empty: give auto (a fresh salt per run), none (no salt), or a text to salt with",
        ),
        Some(text) => Ok(PromptSalt::Text(text.to_string())),
    }
}

/// `--num-prefix-prompts K --prefix-prompt-length L`: a pool of K prefixes in front of synthetic
/// prompts (`None` without K, or with K = 0).
pub fn prefix_pool(
    count: Option<u32>,
    length: Option<u32>,
    synthetic: bool,
) -> Result<Option<PrefixPool>, UsageError> {
    match (count, length) {
        (None | Some(0), None) => Ok(None),
        (None | Some(0), Some(_)) => usage(
            "--prefix-prompt-length sets the length of the prefix prompts: give --num-prefix-prompts K too",
        ),
        (Some(_), _) if !synthetic => usage(
            "--num-prefix-prompts prepends shared prefixes to synthetic prompts; an --input-file brings its own text (a trace says what its requests share in hash_ids): drop one of them",
        ),
        (Some(_), Some(0)) => usage("--prefix-prompt-length must be at least 1 token"),
        (Some(count), length) => Ok(Some(PrefixPool {
            count,
            length: length.unwrap_or(DEFAULT_PREFIX_LENGTH),
        })),
    }
}

/// How a trace file is to be read, as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceSpec {
    /// `--block-size` (default [`DEFAULT_BLOCK_SIZE`]).
    pub block_size: Option<u32>,
    /// `--fixed-schedule`.
    pub fixed_schedule: bool,
    /// `--fixed-schedule-start` (ms).
    pub start_ms: Option<u64>,
    /// `--fixed-schedule-end` (ms).
    pub end_ms: Option<u64>,
    /// `--num-prompts`: the first rows only.
    pub num_prompts: Option<u32>,
    /// `--output-tokens-mean-deterministic`.
    pub exact_output: bool,
}

/// Reads and checks the trace at `path` (every row, before anything connects) and keeps the
/// rows the run uses: those in the schedule's window, then the first `--num-prompts`.
pub fn trace_source(path: &Path, s: &TraceSpec) -> Result<TraceSource, UsageError> {
    let block_size = match s.block_size {
        Some(0) => return usage("--block-size must be at least 1 token"),
        b => b.unwrap_or(DEFAULT_BLOCK_SIZE),
    };
    if let (Some(a), Some(b)) = (s.start_ms, s.end_ms)
        && a > b
    {
        return usage(format!(
            "--fixed-schedule-start {a} is after --fixed-schedule-end {b}: the window would be empty"
        ));
    }
    let opts = ReadOptions {
        block_size,
        fixed_schedule: s.fixed_schedule,
        start_ms: s.start_ms,
        end_ms: s.end_ms,
    };
    let mut rows = trace::read(path, &opts)?;
    if let Some(n) = s.num_prompts {
        rows.truncate(n as usize);
    }
    Ok(TraceSource {
        path: path.to_path_buf(),
        block_size,
        start_ms: s.start_ms,
        end_ms: s.end_ms,
        requests: rows.requests.len(),
        exact_output: s.exact_output,
        trace: std::sync::Arc::new(rows),
    })
}

/// The session flags, as given.
#[derive(Debug, Clone, Default)]
pub struct SessionSpec {
    /// `--num-sessions`.
    pub num_sessions: Option<u32>,
    /// `--session-turns-mean`.
    pub turns_mean: Option<u32>,
    /// `--session-turns-stddev`.
    pub turns_stddev: Option<u32>,
    /// `--session-turn-delay-mean` (ms).
    pub delay_mean_ms: Option<u64>,
    /// `--session-turn-delay-stddev` (ms).
    pub delay_stddev_ms: Option<u64>,
    /// `--session-header`, as given (`none`: no header; `None`: X-Session-ID).
    pub header: Option<String>,
    /// `--session-replies`.
    pub replies: Replies,
}

impl SessionSpec {
    /// Whether a flag that switches sessions on was given.
    fn asked(&self) -> bool {
        self.num_sessions.is_some() || self.turns_mean.is_some()
    }

    /// Whether any session flag was given.
    pub fn any(&self) -> bool {
        self.asked()
            || self.turns_stddev.is_some()
            || self.delay_mean_ms.is_some()
            || self.delay_stddev_ms.is_some()
    }
}

/// The header a session's requests carry its id in unless `--session-header` says otherwise.
pub const DEFAULT_SESSION_HEADER: &str = "X-Session-ID";

/// `--num-sessions` when not given, as AIPerf's conversation count.
pub const DEFAULT_SESSIONS: u32 = 100;

/// What the rest of the workload says about sessions.
#[derive(Debug, Clone, Copy)]
pub struct SessionContext<'a> {
    /// The `--input-file` when it holds conversations (read and checked here).
    pub conversation_file: Option<&'a Path>,
    /// Prompts are synthetic (else a prompt file or a trace).
    pub synthetic: bool,
    /// `--num-prompts` was given.
    pub num_prompts: bool,
    /// `--num-prefix-prompts` was given.
    pub prefix_prompts: bool,
    /// `--random-seed`.
    pub seed: u64,
}

/// Multi-turn sessions: on with `--num-sessions` or `--session-turns-mean` (synthetic user
/// turns) or a conversation file; `None` otherwise. Turn counts are sampled here, so the plan
/// knows how many requests sending every session once takes.
pub fn sessions(s: &SessionSpec, c: &SessionContext) -> Result<Option<SessionPlan>, UsageError> {
    if c.conversation_file.is_none() && !s.asked() {
        replies(s, &[], None)?;
        if s.any() {
            return usage(
                "--session-turns-stddev and --session-turn-delay-* shape multi-turn sessions: give --num-sessions N (and --session-turns-mean) too",
            );
        }
        return Ok(None);
    }
    if c.num_prompts {
        return usage(
            "--num-prompts counts single prompts; sessions are counted by --num-sessions: drop --num-prompts",
        );
    }
    if c.prefix_prompts {
        return usage(
            "--num-prefix-prompts is for single prompts; a session's later turns already share its history as a prefix: drop --num-prefix-prompts",
        );
    }
    let (source, turns, file) = match c.conversation_file {
        Some(path) if conversation::dag::is_dag(&crate::workload::trace::first_row(path)?) => {
            return agent_file(path, s).map(Some);
        }
        Some(path) => conversation_file(path, s)?,
        None if !c.synthetic => {
            return usage(
                "multi-turn sessions send synthetic user turns or a conversation file: an --input-file of {\"text\": ...} prompts or trace rows has no turns; give a file of conversations ({\"conversations\": [...]} or {\"messages\": [...]} per line), or drop --input-file",
            );
        }
        None => {
            let sessions = s.num_sessions.unwrap_or(DEFAULT_SESSIONS);
            let (mean, stddev) = (s.turns_mean.unwrap_or(1), s.turns_stddev.unwrap_or(0));
            if sessions == 0 || mean == 0 {
                return usage("--num-sessions and --session-turns-mean must be at least 1");
            }
            let turns = conversation::sample_turns(mean, stddev, c.seed, sessions as usize);
            let source = ConversationSource::Synthetic {
                turns_mean: mean,
                turns_stddev: stddev,
            };
            (source, turns, Vec::new())
        }
    };
    let replies = replies(s, &file, c.conversation_file)?;
    Ok(Some(SessionPlan {
        source,
        sessions: turns.len() as u32,
        total_turns: turns.iter().map(|&t| u64::from(t)).sum(),
        turns,
        delay_mean_ms: s.delay_mean_ms.unwrap_or(0),
        delay_stddev_ms: s.delay_stddev_ms.unwrap_or(0),
        file: std::sync::Arc::new(file),
        agents: None,
        header: session_header(s)?,
        replies,
    }))
}

/// `--session-replies`, checked: recorded answers need a conversation file that has some.
fn replies(
    s: &SessionSpec,
    file: &[FileConversation],
    path: Option<&Path>,
) -> Result<Replies, UsageError> {
    if s.replies == Replies::Live {
        return Ok(Replies::Live);
    }
    let Some(path) = path else {
        return usage(
            "--session-replies recorded replays a conversation file's assistant messages; synthetic sessions have none: give --input-file with conversations, or drop --session-replies",
        );
    };
    if !file.iter().any(|c| c.replies.iter().any(Option::is_some)) {
        return usage(format!(
            "--session-replies recorded: --input-file {} has no assistant message after a user message to replay: drop --session-replies, or add the recorded answers",
            path.display()
        ));
    }
    Ok(Replies::Recorded)
}

/// `--session-header`, checked (`None`: `none`).
fn session_header(s: &SessionSpec) -> Result<Option<String>, UsageError> {
    let raw = s.header.as_deref().unwrap_or(DEFAULT_SESSION_HEADER);
    crate::plan::outputs::header_name("--session-header", raw, DEFAULT_SESSION_HEADER)
}

/// An agentic session file read and checked: one session per root, each sent whole with its
/// branches (its turns and think times are the file's).
fn agent_file(path: &Path, s: &SessionSpec) -> Result<SessionPlan, UsageError> {
    let given = [
        (s.num_sessions.is_some(), "--num-sessions"),
        (
            s.turns_mean.is_some() || s.turns_stddev.is_some(),
            "--session-turns-mean/-stddev",
        ),
        (
            s.delay_mean_ms.is_some() || s.delay_stddev_ms.is_some(),
            "--session-turn-delay-mean/-stddev",
        ),
    ];
    if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
        return usage(format!(
            "--input-file {} is an agentic session file, whose sessions, turns and delays are its own: drop {flag}",
            path.display()
        ));
    }
    let dag = conversation::dag::read(path)?;
    let mut turns = dag.sessions.iter().flat_map(|a| &a.turns);
    if s.replies == Replies::Recorded && !turns.any(|t| t.recorded.is_some()) {
        return usage(format!(
            "--session-replies recorded: --input-file {} records no answer to replay (a turn's \"reply\", or AIPerf's assistant message opening the next turn): drop --session-replies, or add the recorded answers",
            path.display()
        ));
    }
    let turns: Vec<u32> = dag.sessions.iter().map(|a| a.turns.len() as u32).collect();
    let total_turns = dag.roots.iter().map(|&r| dag.task_turns(r)).sum();
    Ok(SessionPlan {
        source: ConversationSource::File {
            path: path.to_path_buf(),
        },
        sessions: dag.roots.len() as u32,
        turns,
        total_turns,
        delay_mean_ms: 0,
        delay_stddev_ms: 0,
        file: std::sync::Arc::new(Vec::new()),
        agents: Some(std::sync::Arc::new(dag)),
        header: session_header(s)?,
        replies: s.replies,
    })
}

/// A conversation file read and checked, its first `--num-sessions` conversations kept.
fn conversation_file(
    path: &Path,
    s: &SessionSpec,
) -> Result<(ConversationSource, Vec<u32>, Vec<FileConversation>), UsageError> {
    if s.turns_mean.is_some() || s.turns_stddev.is_some() {
        return usage(format!(
            "--input-file {} holds conversations, whose user messages are the turns: drop --session-turns-mean/--session-turns-stddev",
            path.display()
        ));
    }
    let mut file = conversation::file::read(path)?;
    if let Some(n) = s.num_sessions {
        if n == 0 || n as usize > file.len() {
            return usage(format!(
                "--num-sessions {n}: --input-file {} holds {} conversations; give 1 to {}, or leave it out to replay them all",
                path.display(),
                file.len(),
                file.len()
            ));
        }
        file.truncate(n as usize);
    }
    let turns = file.iter().map(|c| c.users.len() as u32).collect();
    let source = ConversationSource::File {
        path: path.to_path_buf(),
    };
    Ok((source, turns, file))
}

/// The levels and stop rule of a run of sessions: closed loop only (a session's next turn
/// waits for the answer to the last, so there is no schedule of requests to keep), and by
/// default every session once (AIPerf's conversation count).
pub fn session_load(
    sessions: &SessionPlan,
    concurrency: Option<&super::values::Levels<u32>>,
    request_rate: bool,
    stop: LevelLengthRule,
) -> Result<(Vec<Stimulus>, LevelLengthRule), UsageError> {
    if request_rate {
        return usage(
            "--request-rate paces single requests; a session's turns wait for each other's answers, so sessions are driven closed loop: give --concurrency N to keep N sessions in flight",
        );
    }
    let levels = super::values::concurrency_levels(concurrency);
    let stop = match stop {
        LevelLengthRule::Auto => {
            LevelLengthRule::Fixed(LevelLength::Requests(sessions.total_turns))
        }
        other => other,
    };
    Ok((levels, stop))
}

/// Sessions need an API whose request carries text (chat, responses, messages, completions,
/// generate over HTTP), and run in one process: a session's history lives on the worker that
/// holds it.
pub fn check_session_target(api: crate::target::Api, sharded: bool) -> Result<(), UsageError> {
    use crate::target::Api;
    if !matches!(
        api,
        Api::Chat | Api::Completions | Api::Generate | Api::Responses | Api::Messages
    ) {
        return usage(
            "multi-turn sessions are sent over the chat, responses, messages, completions or generate HTTP APIs: give --endpoint-type chat (or responses, messages, completions, generate)",
        );
    }
    if sharded {
        return usage(
            "multi-turn sessions are not split over shards yet: run them from one process (drop --shard)",
        );
    }
    Ok(())
}

/// The load of `--fixed-schedule`, as given.
#[derive(Debug, Clone, Copy)]
pub struct FixedScheduleSpec {
    /// `--fixed-schedule-speedup`.
    pub speedup: f64,
    /// `--max-inflight`.
    pub max_inflight: u32,
    /// `--concurrency` or `--request-rate` was given too.
    pub other_load: bool,
    /// A warm-up was asked for.
    pub warmup: bool,
    /// `--request-count`, when given.
    pub request_count: Option<u64>,
}

/// The one level of a fixed schedule and its stop: the whole trace (or `--request-count` of its
/// first rows, or a `--measurement-interval` of it).
pub fn fixed_schedule(
    w: &WorkloadPlan,
    s: &FixedScheduleSpec,
    stop: LevelLengthRule,
) -> Result<(Vec<Stimulus>, LevelLengthRule), UsageError> {
    let crate::workload::PromptSource::Trace(t) = &w.prompts else {
        return usage(format!(
            "--fixed-schedule sends a trace's requests at their timestamps: give --input-file with trace rows such as {}",
            r#"{"timestamp": 0, "input_length": 600, "output_length": 20, "hash_ids": [0, 1]}"#
        ));
    };
    if s.other_load {
        return usage(
            "--fixed-schedule takes its load from the trace's timestamps: drop --concurrency/--request-rate, or drop --fixed-schedule to send the trace's prompts at that load",
        );
    }
    if !(s.speedup.is_finite() && s.speedup > 0.0) {
        return usage(format!(
            "--fixed-schedule-speedup {} must be a number above 0 (2 replays the trace twice as fast)",
            s.speedup
        ));
    }
    if s.max_inflight == 0 {
        return usage("--max-inflight must be at least 1");
    }
    if s.warmup {
        return usage(
            "--fixed-schedule replays the trace from its first row, so there is no warm-up: drop --warmup-request-count/--warmup-duration (warm the server with a separate run)",
        );
    }
    let rows = t.requests as u64;
    let stop = match (stop, s.request_count) {
        (_, Some(n)) if n > rows => {
            return usage(format!(
                "--request-count {n} is more than the {rows} requests of the trace (after its window): give at most {rows}, or leave it out to replay them all"
            ));
        }
        (LevelLengthRule::Fixed(LevelLength::Window(d)), _) => {
            LevelLengthRule::Fixed(LevelLength::Window(d))
        }
        (_, Some(n)) => LevelLengthRule::Fixed(LevelLength::Requests(n)),
        _ => LevelLengthRule::Fixed(LevelLength::Requests(rows)),
    };
    let level = Stimulus::FixedSchedule {
        speedup: s.speedup,
        max_inflight: s.max_inflight,
    };
    Ok((vec![level], stop))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salts_and_pools() {
        assert_eq!(prompt_salt(None).unwrap(), PromptSalt::Auto);
        assert_eq!(prompt_salt(Some("none")).unwrap(), PromptSalt::None);
        assert_eq!(
            prompt_salt(Some("exp-7")).unwrap(),
            PromptSalt::Text("exp-7".into())
        );
        assert!(prompt_salt(Some(" ")).is_err());
        assert_eq!(prefix_pool(None, None, true).unwrap(), None);
        assert_eq!(
            prefix_pool(Some(4), None, true).unwrap(),
            Some(PrefixPool {
                count: 4,
                length: 100
            })
        );
        for (k, l, synthetic, says) in [
            (None, Some(10), true, "give --num-prefix-prompts"),
            (Some(2), Some(0), true, "at least 1"),
            (Some(2), Some(10), false, "synthetic prompts"),
        ] {
            let e = prefix_pool(k, l, synthetic).unwrap_err();
            assert!(e.0.contains(says), "{e}");
        }
    }

    #[test]
    fn session_headers() {
        let spec = |h: Option<&str>| SessionSpec {
            header: h.map(str::to_string),
            ..Default::default()
        };
        assert_eq!(
            session_header(&spec(None)).unwrap().as_deref(),
            Some("X-Session-ID")
        );
        assert_eq!(session_header(&spec(Some("none"))).unwrap(), None);
        let e = session_header(&spec(Some("x y"))).unwrap_err();
        assert_eq!(
            e.0,
            "--session-header 'x y': not an HTTP header name; give one like X-Session-ID, or none"
        );
        assert!(session_header(&spec(Some("Host"))).is_err());
        let shard = |index, count| crate::load::Shard { index, count };
        let line = crate::load::session_header(Some("X-S"), Some("R"), shard(0, 1));
        assert_eq!(line.as_deref(), Some("X-S: R-s"));
        let line = crate::load::session_header(Some("X-S"), Some("R"), shard(2, 4));
        assert_eq!(
            line.as_deref(),
            Some("X-S: R-2-s"),
            "shards number sessions apart"
        );
        assert_eq!(
            crate::load::session_header(None, Some("R"), shard(0, 1)),
            None
        );
    }
}
