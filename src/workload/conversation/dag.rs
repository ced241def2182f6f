//! Agentic session files: an agent's task as a tree of sessions (`--input-file`), read before
//! anything is sent.
//!
//! JSONL, one session per line, in either of two forms told apart by their keys:
//!
//! | form | line |
//! |---|---|
//! | ttftbench | `{"agent": "planner", "system": "You plan.", "turns": [{"user": "Fix the test", "max_tokens": 64}, {"tool": "grep", "result": "a.rs:12", "tool_ms": 40, "spawn": ["reader"]}, {"user": "Summarize", "think_ms": 300}]}` |
//! | AIPerf `dag_jsonl` | `{"session_id": "root", "turns": [{"messages": [{"role": "user", "content": "Plan"}], "max_tokens": 64, "spawns": ["reader"], "forks": ["b"], "delay": 0}]}` |
//!
//! A turn adds its messages to the session (a user message, a tool's result, or both) and
//! asks the server for its answer; the server's live answer goes into the session's history
//! before the next turn. `think_ms` (the user's or agent's thinking) and `tool_ms` (the tool
//! running) are waited before the turn is sent; AIPerf's `delay` is both in one.
//!
//! A tool round trip is replayed as an agent makes it: the turn before a tool's result offers
//! the model that tool (`tools` with a definition of its name and no required arguments,
//! `tool_choice` naming it, in the API's form), its answer goes into the history as the
//! assistant's call (the server's arguments when they parse as JSON, else `{}`), and the
//! result is sent as the tool's message answering that call's id (chat `role: tool`,
//! Responses `function_call_output`, Messages `tool_result`).
//!
//! Branches start when their turn's answer has arrived and run in parallel:
//!
//! * **spawn** (`spawn` / AIPerf `spawns`): a sub-agent with a fresh history. The parent goes
//!   on and waits for it before turn `join_at` (default: its next turn; AIPerf's object form
//!   `{"children": [...], "join_at": K}` sets it); spawned from the last turn, the parent's task
//!   ends when the sub-agent's does.
//! * **fork** (`fork` / AIPerf `forks`): a continuation that starts from the parent's history,
//!   its live answer included (the prefix a KV cache can reuse). It is not joined: the task
//!   ends when every branch has ended.
//!
//! Sessions that no other session names are the tasks' roots. The file is refused (exit 2,
//! naming the session and turn) when a branch names an undeclared session, when sessions
//! form a cycle, when a session is declared twice or forked from two parents, or when a
//! `join_at` is not a later turn of its session. AIPerf's orchestrator sessions
//! (`orchestrator`, `rounds`, `pre_session_spawns`) and `context_mode` are refused by name;
//! its `model`, `tools` and `extra` are ignored (the run's flags choose model and sampling).

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use serde_json::{Map, Value};

use super::history::Role;
use crate::error::UsageError;

/// The key that makes a row a session of ttftbench's form, and AIPerf's.
pub const KEYS: [&str; 2] = ["agent", "session_id"];

/// Whether a first row (a JSON object) is a session of an agentic session file.
pub fn is_dag(row: &Value) -> bool {
    KEYS.iter().any(|k| row.get(k).is_some()) && row.get("turns").is_some()
}

/// One message a turn adds before it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// System, user, or tool (a tool's result, see [`AgentTurn::tool`]).
    pub role: Role,
    /// Its text.
    pub text: String,
}

/// One request of a session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentTurn {
    /// Messages added to the history before this turn is sent, in order.
    pub said: Vec<Said>,
    /// The tool whose result this turn carries (a tool round trip), if any: its result is the
    /// turn's `said` of role tool, and the turn before offers the model this tool to call.
    pub tool: Option<String>,
    /// Output tokens asked for (`None`: left to the server).
    pub max_tokens: Option<u32>,
    /// The answer the file records for this turn (`reply`; AIPerf: the assistant message that
    /// opens the next turn), sent in the history instead of the server's with
    /// `--session-replies recorded`.
    pub recorded: Option<String>,
    /// Wait before sending (ms): think time plus tool time.
    pub delay_ms: u64,
    /// Branches started when this turn's answer has arrived.
    pub branches: Vec<Branch>,
}

/// How a branch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchMode {
    /// A sub-agent with a fresh history, joined by its parent.
    Spawn,
    /// A continuation of the parent's history, not joined.
    Fork,
}

/// Sessions started together after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    /// Spawn or fork.
    pub mode: BranchMode,
    /// The sessions started (indices into [`Dag::sessions`]).
    pub children: Vec<usize>,
    /// The parent's turn that waits for them (spawns only; `None`: the end of the parent).
    pub join_at: Option<usize>,
}

/// One session of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSession {
    /// Its name in the file.
    pub id: String,
    /// Its line (1-based), for messages.
    pub line: usize,
    /// Its turns, in order (at least one).
    pub turns: Vec<AgentTurn>,
}

/// A checked agentic session file: every branch names a declared session, no cycles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dag {
    /// Every session, in file order.
    pub sessions: Vec<AgentSession>,
    /// The roots (sessions no branch names), in file order: one task each.
    pub roots: Vec<usize>,
    /// Per session, the requests of a task started there ([`Dag::task_turns`]).
    task_turns: Vec<u64>,
}

impl Dag {
    /// The requests of the task started at session `root`: its turns and every branch's, a
    /// sub-agent spawned twice counted twice (saturating: a file may fan out exponentially).
    pub fn task_turns(&self, root: usize) -> u64 {
        self.task_turns[root]
    }
}

/// A session as read, before branch names are resolved.
struct Raw {
    id: String,
    line: usize,
    turns: Vec<RawTurn>,
}

/// A turn as read: branches by name.
struct RawTurn {
    turn: AgentTurn,
    branches: Vec<RawBranch>,
}

/// A branch as read: its mode, the sessions it names, and its `join_at`.
type RawBranch = (BranchMode, Vec<String>, Option<usize>);

/// What is wrong with one line of an agentic session file: the field, and what to write
/// instead ([`DagError::Line`] puts the line in front).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LineError(String);

impl From<&str> for LineError {
    fn from(why: &str) -> LineError {
        LineError(why.to_string())
    }
}

impl From<String> for LineError {
    fn from(why: String) -> LineError {
        LineError(why)
    }
}

/// What is wrong with an agentic session file; the reader puts `--input-file` and the file in
/// front, as a usage error (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DagError {
    /// A line that is not a session.
    #[error("line {line}: {why}")]
    Line {
        /// 1-based.
        line: usize,
        /// What is wrong and what to write.
        why: String,
    },
    /// A session name given twice.
    #[error(
        "line {line}: session '{id}' is declared again (first at line {first}): give each session its own name"
    )]
    Duplicate {
        /// The name.
        id: String,
        /// The second declaration.
        line: usize,
        /// The first.
        first: usize,
    },
    /// A branch to a session the file does not declare.
    #[error(
        "session '{session}' turn {turn}: branch target '{target}' is not declared in the file (declared: {known}): add a line for it or fix the name"
    )]
    Dangling {
        /// The session branching.
        session: String,
        /// Its turn (0-based).
        turn: usize,
        /// The missing name.
        target: String,
        /// The names declared.
        known: String,
    },
    /// Sessions that start each other in a circle.
    #[error(
        "sessions form a cycle ({0}): a task must end, so no session may start itself through its branches"
    )]
    Cycle(String),
    /// A fork target named by two parents: which history would it continue?
    #[error(
        "session '{child}' is forked by both '{a}' and '{b}': a fork continues one parent's history; fork it from one, or spawn it"
    )]
    TwoParents {
        /// The forked session.
        child: String,
        /// One parent.
        a: String,
        /// The other.
        b: String,
    },
    /// A `join_at` that is not a later turn of the session.
    #[error("session '{session}' turn {turn}: join_at {join_at} is not a later turn of the session (it has {turns}): give a turn between {} and {}", turn + 1, turns - 1)]
    JoinAt {
        /// The session.
        session: String,
        /// The spawning turn (0-based).
        turn: usize,
        /// The join asked for.
        join_at: usize,
        /// Its turn count.
        turns: usize,
    },
    /// Nothing in the file.
    #[error("no sessions (the file is empty or blank)")]
    Empty,
}

/// Reads and checks an agentic session file.
pub fn read(path: &Path) -> Result<Dag, UsageError> {
    let file = std::fs::File::open(path)
        .map_err(|e| UsageError(format!("--input-file {}: cannot open: {e}", path.display())))?;
    read_from(std::io::BufReader::new(file))
        .map_err(|e| UsageError(format!("--input-file {}: {e}", path.display())))
}

/// [`read`] over any reader.
pub fn read_from(reader: impl BufRead) -> Result<Dag, DagError> {
    let mut raws = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line_no = i + 1;
        let bad = |why: String| DagError::Line { line: line_no, why };
        let text = line.map_err(|e| bad(format!("cannot read: {e}")))?;
        let text = text.trim().trim_start_matches('\u{feff}');
        if text.is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| bad(format!("invalid JSON ({e})")))?;
        raws.push(parse_session(&value, line_no).map_err(|e| bad(e.0))?);
    }
    resolve(raws)
}

/// One line: a session in either form; `Err` says which field and what to write.
fn parse_session(value: &Value, line: usize) -> Result<Raw, LineError> {
    let Value::Object(row) = value else {
        return Err("expected a JSON object, one session per line".into());
    };
    for key in [
        "orchestrator",
        "rounds",
        "pre_session_spawns",
        "context_mode",
    ] {
        if row.contains_key(key) {
            return Err(LineError(format!(
                "field \"{key}\" (AIPerf's orchestrator sessions and context modes) is not read by ttftbench: give sessions with turns, and branches with spawns or forks"
            )));
        }
    }
    let (id, own) = match (row.get(KEYS[0]), row.get(KEYS[1])) {
        (Some(v), _) => (v, true),
        (None, Some(v)) => (v, false),
        (None, None) => {
            return Err(
                "missing field \"agent\" (ttftbench) or \"session_id\" (AIPerf): name the session"
                    .into(),
            );
        }
    };
    let id = id
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or("the session's name must be a non-empty string")?
        .to_string();
    let items = row
        .get("turns")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty())
        .ok_or("field \"turns\" must be a non-empty array of turns")?;
    let mut turns = Vec::with_capacity(items.len());
    for (t, item) in items.iter().enumerate() {
        let Value::Object(m) = item else {
            return Err(LineError(format!("field \"turns[{t}]\" must be an object")));
        };
        let turn = if own { own_turn(m) } else { aiperf_turn(m) };
        turns.push(turn.map_err(|why| format!("field \"turns[{t}]\": {why}"))?);
    }
    if !own {
        // AIPerf records the answer to a turn as the assistant message opening the next.
        for t in 0..turns.len() {
            let next = turns.get_mut(t + 1).and_then(|n| n.turn.recorded.take());
            turns[t].turn.recorded = next;
        }
    }
    if own && let Some(system) = row.get("system") {
        let text = system.as_str().ok_or("field \"system\" must be a string")?;
        let first = &mut turns[0].turn.said;
        first.insert(0, said(Role::System, text));
    }
    Ok(Raw { id, line, turns })
}

fn said(role: Role, text: &str) -> Said {
    Said {
        role,
        text: text.to_string(),
    }
}

/// A turn of ttftbench's form: `user` and/or a tool's `result` (with `tool`, its name),
/// `reply`, `max_tokens`, `think_ms`, `tool_ms`, `spawn`, `join_at`, `fork`.
fn own_turn(m: &Map<String, Value>) -> Result<RawTurn, LineError> {
    let mut turn = AgentTurn {
        max_tokens: opt_u32(m, "max_tokens")?,
        delay_ms: opt_u64(m, "think_ms")?.unwrap_or(0) + opt_u64(m, "tool_ms")?.unwrap_or(0),
        ..AgentTurn::default()
    };
    if let Some(result) = m.get("result") {
        let text = result.as_str().ok_or("\"result\" must be a string")?;
        let name = m
            .get("tool")
            .ok_or("\"result\" needs \"tool\", the name of the tool that gave it")?;
        let name = name.as_str().ok_or("\"tool\" must be a string")?;
        turn.said.push(said(Role::Tool, text));
        turn.tool = Some(name.to_string());
    }
    if let Some(user) = m.get("user") {
        let text = user.as_str().ok_or("\"user\" must be a string")?;
        turn.said.push(said(Role::User, text));
    }
    if let Some(reply) = m.get("reply") {
        let text = reply.as_str().ok_or("\"reply\" must be a string")?;
        turn.recorded = Some(text.to_string());
    }
    if turn.said.is_empty() {
        return Err("a turn needs \"user\" (a message) or \"tool\" with \"result\"".into());
    }
    let mut branches = Vec::new();
    let join_at = opt_u64(m, "join_at")?.map(|k| k as usize);
    if let Some(v) = m.get("spawn") {
        branches.push((BranchMode::Spawn, names(v, "spawn")?, join_at));
    } else if join_at.is_some() {
        return Err(
            "\"join_at\" needs \"spawn\": it is the turn that waits for the sub-agents".into(),
        );
    }
    if let Some(v) = m.get("fork") {
        branches.push((BranchMode::Fork, names(v, "fork")?, None));
    }
    Ok(RawTurn { turn, branches })
}

/// A turn of AIPerf's `dag_jsonl`: `messages`, `max_tokens`, `delay`, `spawns`, `forks`.
fn aiperf_turn(m: &Map<String, Value>) -> Result<RawTurn, LineError> {
    let mut turn = AgentTurn {
        max_tokens: opt_u32(m, "max_tokens")?,
        delay_ms: m
            .get("delay")
            .map(|v| {
                v.as_f64()
                    .filter(|d| *d >= 0.0)
                    .ok_or("\"delay\" must be milliseconds, 0 or more")
            })
            .transpose()?
            .map_or(0, |d| d.round() as u64),
        ..AgentTurn::default()
    };
    let messages = m
        .get("messages")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or("\"messages\" must be a non-empty array")?;
    for (i, msg) in messages.iter().enumerate() {
        aiperf_message(msg, &mut turn).map_err(|why| format!("\"messages[{i}]\" {why}"))?;
    }
    if turn.said.is_empty() {
        return Err("\"messages\" has no system, user or tool message to send".into());
    }
    let mut branches = Vec::new();
    if let Some(v) = m.get("spawns") {
        branches.extend(aiperf_spawns(v)?);
    }
    if let Some(v) = m.get("forks") {
        let list = v.as_array().ok_or("\"forks\" must be an array")?;
        let mut children = Vec::new();
        for f in list {
            match f {
                Value::String(s) => children.push(s.clone()),
                Value::Object(o) => children.push(
                    o.get("child")
                        .and_then(Value::as_str)
                        .ok_or("a \"forks\" object needs \"child\", a session name")?
                        .to_string(),
                ),
                _ => return Err("\"forks\" entries are session names or {\"child\": ...}".into()),
            }
        }
        branches.push((BranchMode::Fork, children, None));
    }
    Ok(RawTurn { turn, branches })
}

/// One AIPerf message: system, user and a tool's result are sent; the assistant's recorded
/// answer is kept for `--session-replies recorded` (by default the server's live answers are
/// sent).
fn aiperf_message(msg: &Value, turn: &mut AgentTurn) -> Result<(), LineError> {
    let role = msg
        .get("role")
        .and_then(Value::as_str)
        .ok_or("needs \"role\"")?;
    let text = content_text(msg.get("content"));
    match role {
        "system" | "developer" => turn
            .said
            .push(said(Role::System, &text.ok_or("needs text \"content\"")?)),
        "user" => turn
            .said
            .push(said(Role::User, &text.ok_or("needs text \"content\"")?)),
        "tool" | "function" => {
            turn.said.push(said(Role::Tool, &text.unwrap_or_default()));
            let name = msg.get("name").or_else(|| msg.get("tool_call_id"));
            turn.tool = Some(name.and_then(Value::as_str).unwrap_or("tool").to_string());
        }
        "assistant" => turn.recorded = text,
        other => {
            return Err(LineError(format!(
                "has role \"{other}\": give system, user, assistant or tool"
            )));
        }
    }
    Ok(())
}

/// A message's text: a string, or the text parts of an array.
fn content_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// AIPerf's `spawns`: bare names join at the next turn; `{"children": [...], "join_at": K}`.
fn aiperf_spawns(v: &Value) -> Result<Vec<RawBranch>, LineError> {
    let list = v.as_array().ok_or("\"spawns\" must be an array")?;
    let mut bare = Vec::new();
    let mut out = Vec::new();
    for s in list {
        match s {
            Value::String(name) => bare.push(name.clone()),
            Value::Object(o) => {
                let children = names(
                    o.get("children").unwrap_or(&Value::Null),
                    "spawns[].children",
                )?;
                let join_at = opt_u64(o, "join_at")?.map(|k| k as usize);
                out.push((BranchMode::Spawn, children, join_at));
            }
            _ => {
                return Err(
                    "\"spawns\" entries are session names or {\"children\": [...], \"join_at\": K}"
                        .into(),
                );
            }
        }
    }
    if !bare.is_empty() {
        out.insert(0, (BranchMode::Spawn, bare, None));
    }
    Ok(out)
}

/// A non-empty list of session names (or one name).
fn names(v: &Value, field: &str) -> Result<Vec<String>, LineError> {
    let list: Vec<String> = match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or(format!("\"{field}\" must list session names"))?,
        _ => {
            return Err(LineError(format!(
                "\"{field}\" must be a session name or a list of them"
            )));
        }
    };
    if list.is_empty() {
        return Err(LineError(format!("\"{field}\" lists no session")));
    }
    Ok(list)
}

fn opt_u64(m: &Map<String, Value>, key: &str) -> Result<Option<u64>, LineError> {
    m.get(key)
        .map(|v| {
            v.as_u64()
                .ok_or_else(|| LineError(format!("\"{key}\" must be a whole number, 0 or more")))
        })
        .transpose()
}

fn opt_u32(m: &Map<String, Value>, key: &str) -> Result<Option<u32>, LineError> {
    opt_u64(m, key)?
        .map(|n| u32::try_from(n).map_err(|_| LineError(format!("\"{key}\" is too large"))))
        .transpose()
}

/// Names resolved to indices, joins checked, cycles and twice-forked sessions refused.
fn resolve(raws: Vec<Raw>) -> Result<Dag, DagError> {
    if raws.is_empty() {
        return Err(DagError::Empty);
    }
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, r) in raws.iter().enumerate() {
        if let Some(first) = index.insert(&r.id, i) {
            return Err(DagError::Duplicate {
                id: r.id.clone(),
                line: r.line,
                first: raws[first].line,
            });
        }
    }
    let sessions: Vec<AgentSession> = raws
        .iter()
        .map(|r| resolve_session(r, &raws, &index))
        .collect::<Result<_, _>>()?;
    check_forks(&sessions)?;
    let order = check_cycles(&sessions)?;
    let mut task_turns = vec![0u64; sessions.len()];
    // Children before parents: each session's total is ready when its parents need it.
    for i in order {
        let s: &AgentSession = &sessions[i];
        let kids = s
            .turns
            .iter()
            .flat_map(|t| &t.branches)
            .flat_map(|b| &b.children);
        task_turns[i] = kids.fold(s.turns.len() as u64, |n, &c| {
            n.saturating_add(task_turns[c])
        });
    }
    let turns = sessions.iter().flat_map(|s| &s.turns);
    let roots = roots(sessions.len(), turns.flat_map(|t| &t.branches));
    Ok(Dag {
        sessions,
        roots,
        task_turns,
    })
}

/// The sessions (of `n`) that none of `branches` starts: the tasks' roots, in order.
pub fn roots<'a>(n: usize, branches: impl IntoIterator<Item = &'a Branch>) -> Vec<usize> {
    let mut named = vec![false; n];
    for &c in branches.into_iter().flat_map(|b| &b.children) {
        if let Some(x) = named.get_mut(c) {
            *x = true;
        }
    }
    (0..n).filter(|&i| !named[i]).collect()
}

fn resolve_session(
    r: &Raw,
    raws: &[Raw],
    index: &HashMap<&str, usize>,
) -> Result<AgentSession, DagError> {
    let n = r.turns.len();
    let mut turns = Vec::with_capacity(n);
    for (t, raw) in r.turns.iter().enumerate() {
        let mut turn = raw.turn.clone();
        for (mode, names, join_at) in &raw.branches {
            let mut children = Vec::with_capacity(names.len());
            for name in names {
                let Some(&c) = index.get(name.as_str()) else {
                    let known: Vec<&str> = raws.iter().map(|r| r.id.as_str()).collect();
                    return Err(DagError::Dangling {
                        session: r.id.clone(),
                        turn: t,
                        target: name.clone(),
                        known: known.join(", "),
                    });
                };
                children.push(c);
            }
            let join_at = match (*mode, *join_at) {
                (BranchMode::Spawn, None) if t + 1 < n => Some(t + 1),
                (BranchMode::Spawn, Some(k)) if k <= t || k >= n => {
                    return Err(DagError::JoinAt {
                        session: r.id.clone(),
                        turn: t,
                        join_at: k,
                        turns: n,
                    });
                }
                (BranchMode::Spawn, k) => k,
                (BranchMode::Fork, _) => None,
            };
            turn.branches.push(Branch {
                mode: *mode,
                children,
                join_at,
            });
        }
        turns.push(turn);
    }
    Ok(AgentSession {
        id: r.id.clone(),
        line: r.line,
        turns,
    })
}

/// A session forked from two parents has no one history to continue.
fn check_forks(sessions: &[AgentSession]) -> Result<(), DagError> {
    let mut parent: Vec<Option<usize>> = vec![None; sessions.len()];
    for (p, s) in sessions.iter().enumerate() {
        let forks = s.turns.iter().flat_map(|t| &t.branches);
        for b in forks.filter(|b| b.mode == BranchMode::Fork) {
            for &c in &b.children {
                match parent[c] {
                    Some(q) => {
                        return Err(DagError::TwoParents {
                            child: sessions[c].id.clone(),
                            a: sessions[q].id.clone(),
                            b: s.id.clone(),
                        });
                    }
                    None => parent[c] = Some(p),
                }
            }
        }
    }
    Ok(())
}

/// Depth-first search over branches; a session met again on the current path closes a cycle,
/// named from that session round to itself. Without one, the sessions in the order they were
/// finished (every session after the sessions it starts).
fn check_cycles(sessions: &[AgentSession]) -> Result<Vec<usize>, DagError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let children = |i: usize| -> Vec<usize> {
        sessions[i]
            .turns
            .iter()
            .flat_map(|t| &t.branches)
            .flat_map(|b| b.children.iter().copied())
            .collect()
    };
    let mut mark = vec![Mark::New; sessions.len()];
    let mut order = Vec::with_capacity(sessions.len());
    for start in 0..sessions.len() {
        if mark[start] != Mark::New {
            continue;
        }
        // (session, its children, next child to visit)
        let mut path: Vec<(usize, Vec<usize>, usize)> = vec![(start, children(start), 0)];
        mark[start] = Mark::OnPath;
        while let Some((node, kids, next)) = path.last_mut() {
            let Some(&c) = kids.get(*next) else {
                mark[*node] = Mark::Done;
                order.push(*node);
                path.pop();
                continue;
            };
            *next += 1;
            match mark[c] {
                Mark::OnPath => {
                    let from = path.iter().position(|(n, _, _)| *n == c).unwrap_or(0);
                    let mut names: Vec<&str> = path[from..]
                        .iter()
                        .map(|(n, _, _)| sessions[*n].id.as_str())
                        .collect();
                    names.push(&sessions[c].id);
                    return Err(DagError::Cycle(names.join(" -> ")));
                }
                Mark::New => {
                    mark[c] = Mark::OnPath;
                    path.push((c, children(c), 0));
                }
                Mark::Done => {}
            }
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dag(text: &str) -> Result<Dag, DagError> {
        read_from(text.as_bytes())
    }

    fn branch(mode: BranchMode, children: &[usize], join_at: Option<usize>) -> Branch {
        let children = children.to_vec();
        Branch {
            mode,
            children,
            join_at,
        }
    }

    const OWN: &str = r#"{"agent": "planner", "system": "You plan.", "turns": [{"user": "Fix the test", "max_tokens": 64}, {"tool": "grep", "result": "a.rs:12", "tool_ms": 40, "think_ms": 10, "spawn": ["reader", "tester"]}, {"user": "Summarize"}, {"user": "Done?", "fork": "followup"}]}
{"agent": "reader", "turns": [{"user": "Read a.rs"}]}

{"agent": "tester", "turns": [{"user": "Run it", "reply": "Running."}, {"tool": "cargo", "result": "1 failed"}]}
{"agent": "followup", "turns": [{"user": "And the docs?"}]}
"#;

    #[test]
    fn own_form_reads_turns_tools_delays_and_branches() {
        let d = dag(OWN).unwrap();
        assert_eq!(d.roots, vec![0]);
        assert_eq!(d.task_turns(0), 4 + 1 + 2 + 1);
        let p = &d.sessions[0];
        assert_eq!((p.id.as_str(), p.line, p.turns.len()), ("planner", 1, 4));
        assert_eq!(
            p.turns[0].said,
            vec![
                said(Role::System, "You plan."),
                said(Role::User, "Fix the test")
            ]
        );
        assert_eq!(p.turns[0].max_tokens, Some(64));
        let t1 = &p.turns[1];
        assert_eq!((t1.tool.as_deref(), t1.delay_ms), (Some("grep"), 50));
        assert_eq!(t1.said, vec![said(Role::Tool, "a.rs:12")]);
        assert_eq!(t1.branches, [branch(BranchMode::Spawn, &[1, 2], Some(2))]);
        assert_eq!(p.turns[3].branches, [branch(BranchMode::Fork, &[3], None)]);
        assert_eq!(d.sessions[2].line, 4, "blank lines keep the numbering");
        let recorded: Vec<_> = d.sessions[2]
            .turns
            .iter()
            .map(|t| t.recorded.as_deref())
            .collect();
        assert_eq!(recorded, vec![Some("Running."), None]);
    }

    /// The shape of AIPerf's documented `dag_jsonl` example, plus spawns in both forms, a
    /// background fork, a tool message and the recorded assistant answer (kept as the answer
    /// to the turn before it).
    #[test]
    fn aiperf_dag_jsonl_reads() {
        let text = r#"{"session_id":"root","turns":[{"model":"m","messages":[{"role":"system","content":"Careful."},{"role":"user","content":"Summarize."}],"max_tokens":128,"delay":2.5,"spawns":["a",{"children":["b"],"join_at":2}]},{"messages":[{"role":"assistant","content":"old"},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"42"}]}],"forks":[{"child":"c","background":true}]},{"messages":[{"role":"user","content":"Go on."}],"extra":{"min_tokens":4}}]}
{"session_id":"a","turns":[{"messages":[{"role":"user","content":"A"}]}]}
{"session_id":"b","turns":[{"messages":[{"role":"user","content":"B"}]}]}
{"session_id":"c","turns":[{"messages":[{"role":"user","content":"C"}]}]}"#;
        let d = dag(text).unwrap();
        assert_eq!(d.roots, vec![0]);
        let t = &d.sessions[0].turns;
        assert_eq!((t[0].delay_ms, t[0].max_tokens), (3, Some(128)));
        let spawn = |child, join_at| branch(BranchMode::Spawn, &[child], Some(join_at));
        assert_eq!(t[0].branches, [spawn(1, 1), spawn(2, 2)]);
        assert_eq!(t[1].said, vec![said(Role::Tool, "42")]);
        assert_eq!(t[1].tool.as_deref(), Some("c1"));
        assert_eq!(t[1].branches[0].mode, BranchMode::Fork);
        let recorded: Vec<_> = t.iter().map(|t| t.recorded.as_deref()).collect();
        assert_eq!(recorded, vec![Some("old"), None, None]);
    }

    #[test]
    fn a_dangling_branch_names_the_session_turn_and_target() {
        let e = dag(r#"{"agent": "p", "turns": [{"user": "x", "spawn": "ghost"}]}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "session 'p' turn 0: branch target 'ghost' is not declared in the file (declared: p): add a line for it or fix the name"
        );
    }

    #[test]
    fn a_cycle_is_named_round_to_its_start() {
        let text = r#"{"agent": "root", "turns": [{"user": "x", "spawn": "a"}]}
{"agent": "a", "turns": [{"user": "x", "spawn": "b"}]}
{"agent": "b", "turns": [{"user": "x", "fork": "a"}]}"#;
        assert_eq!(
            dag(text).unwrap_err(),
            DagError::Cycle("a -> b -> a".into())
        );
        let own = r#"{"agent": "s", "turns": [{"user": "x", "spawn": "s"}]}"#;
        assert_eq!(dag(own).unwrap_err(), DagError::Cycle("s -> s".into()));
    }

    #[test]
    fn task_turns_saturate_on_exponential_fan_out() {
        let mut text = String::new();
        for i in 0..80 {
            let next = format!("s{}", i + 1);
            text.push_str(&format!(
                "{{\"agent\": \"s{i}\", \"turns\": [{{\"user\": \"x\", \"spawn\": [\"{next}\", \"{next}\"]}}]}}\n"
            ));
        }
        text.push_str("{\"agent\": \"s80\", \"turns\": [{\"user\": \"x\"}]}\n");
        let d = dag(&text).unwrap();
        assert_eq!(d.roots, vec![0]);
        assert_eq!(d.task_turns(0), u64::MAX);
        assert_eq!(d.task_turns(79), 3, "its turn and s80 twice");
    }

    #[test]
    fn a_diamond_of_spawns_is_not_a_cycle() {
        let text = r#"{"agent": "r", "turns": [{"user": "x", "spawn": ["a", "b"]}]}
{"agent": "a", "turns": [{"user": "x", "spawn": "c"}]}
{"agent": "b", "turns": [{"user": "x", "spawn": "c"}]}
{"agent": "c", "turns": [{"user": "x"}]}"#;
        assert_eq!(dag(text).unwrap().roots, vec![0]);
    }

    #[test]
    fn bad_files_are_refused_with_line_or_session() {
        let cases = [
            (
                "{\"agent\": \"a\", \"turns\": [{\"user\": \"x\"}]}\n{\"agent\": \"a\", \"turns\": [{\"user\": \"y\"}]}",
                "line 2: session 'a' is declared again (first at line 1)",
            ),
            (
                r#"{"agent": "a", "turns": [{"user": "x", "spawn": "b", "join_at": 0}, {"user": "y"}]}
{"agent": "b", "turns": [{"user": "x"}]}"#,
                "session 'a' turn 0: join_at 0 is not a later turn of the session (it has 2): give a turn between 1 and 1",
            ),
            (
                r#"{"agent": "r", "turns": [{"user": "x", "fork": "c"}]}
{"agent": "s", "turns": [{"user": "x", "fork": "c"}]}
{"agent": "c", "turns": [{"user": "x"}]}"#,
                "session 'c' is forked by both 'r' and 's'",
            ),
            (
                r#"{"agent": "a", "turns": []}"#,
                "line 1: field \"turns\" must be a non-empty array",
            ),
            (
                r#"{"agent": "a", "turns": [{"think_ms": 5}]}"#,
                "line 1: field \"turns[0]\": a turn needs \"user\"",
            ),
            (
                r#"{"agent": "a", "turns": [{"tool": "t"}]}"#,
                "a turn needs \"user\"",
            ),
            (
                r#"{"agent": "a", "turns": [{"result": "r"}]}"#,
                "\"result\" needs \"tool\"",
            ),
            (
                r#"{"session_id": "o", "orchestrator": true, "spawns": ["a"]}"#,
                "line 1: field \"orchestrator\"",
            ),
            (
                r#"{"session_id": "a", "turns": [{"messages": [{"role": "robot", "content": "x"}]}]}"#,
                "line 1: field \"turns[0]\": \"messages[0]\" has role \"robot\"",
            ),
            ("{\"agent\": ", "line 1: invalid JSON"),
            ("\n\n", "no sessions"),
        ];
        for (text, want) in cases {
            let got = dag(text).unwrap_err().to_string();
            assert!(got.contains(want), "{got:?} does not say {want:?}");
        }
    }

    #[test]
    fn the_file_reader_names_the_file_and_exits_2() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.jsonl");
        std::fs::write(
            &path,
            r#"{"agent": "p", "turns": [{"user": "x", "fork": "q"}]}"#,
        )
        .unwrap();
        let e = read(&path).unwrap_err();
        assert!(
            e.0.starts_with(&format!(
                "--input-file {}: session 'p' turn 0: branch target 'q'",
                path.display()
            )),
            "{e}"
        );
        assert_eq!(crate::error::Error::from(e).exit_code(), 2);
        let row: Value = serde_json::from_str(r#"{"agent": "p", "turns": []}"#).unwrap();
        assert!(is_dag(&row));
        assert!(!is_dag(&serde_json::json!({"messages": []})));
    }
}
