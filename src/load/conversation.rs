//! How a worker drives multi-turn sessions: it takes a session and keeps it to its last turn
//! (the same worker, so the same connection where the client keeps one per worker), waits the
//! think time between turns, and holds its slot meanwhile, so N workers keep N sessions in
//! flight. Each turn's body is built when it is due, from the session's history and the
//! server's answer to the previous turn, which is appended once per response; requests that
//! stand alone never come here.
//!
//! A session of an agentic session file can branch: after a turn's answer, its sub-agents (and
//! forks) run side by side with the rest of the session on lanes of their own (their own
//! connection and history), all in the worker's task, and a later turn waits for the ones that
//! join there. The worker's slot is held until every branch has ended, so `--concurrency`
//! counts tasks in flight while requests in flight may exceed it by the branches' width.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::{BoxFuture, join_all};
use tokio::sync::oneshot;

use super::backoff::Backoff;
use super::{Ask, WorkerCtx, execute};
use crate::client::Exchange;
use crate::record::{SessionEnd, SessionOutcome, Turn};
use crate::workload::Payload;
use crate::workload::conversation::dag::BranchMode;
use crate::workload::conversation::history::{History, ToolCall};
use crate::workload::conversation::{Conversations, UserTurn};

/// A closed-loop worker of sessions. `tickets` counts turns (requests): a session reserves its
/// turns (with its branches') when it starts, so a request budget of every session's turns
/// sends each session whole, and a smaller one cuts only the last session short. A turn that
/// fails ends its session (the next turn would need its answer).
pub(crate) async fn worker(ctx: WorkerCtx, tickets: Arc<AtomicU64>, worker: u64) {
    let shared = ctx.shared.clone();
    let Some(conversations) = shared.dataset.conversations() else {
        return;
    };
    let mut lane = Lane {
        ex: Exchange::new(),
        backoff: ctx.backoff(worker),
        history: History::default(),
    };
    loop {
        if ctx.done() || past(&ctx) {
            return;
        }
        let (session, index, script) = conversations.take();
        let turns = conversations.task_turns(index);
        let base = tickets.fetch_add(turns, Ordering::Relaxed);
        let budget = match ctx.spec.stop.requests() {
            Some(n) => n.saturating_sub(base).min(turns),
            None => turns,
        };
        if budget == 0 {
            return;
        }
        lane.history.begin(script);
        lane.ex.session_header = shared
            .session_header
            .as_ref()
            .map(|h| format!("{h}{session}\r\n").into_bytes().into_boxed_slice());
        let task = Task {
            header: lane.ex.session_header.clone(),
            ctx: &ctx,
            conversations,
            session,
            base,
            budget,
            sent: AtomicU64::new(0),
            tools: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            worker,
        };
        let started = shared.clock.now_ns();
        let going = run(&task, index, &mut lane, 0, Vec::new()).await;
        ctx.session_ended(task.outcome(going, turns, started));
        if !going {
            return;
        }
    }
}

/// One session taken by a worker, with every branch it starts: its requests are numbered
/// from `base` in the order they are sent, at most `budget` of them.
struct Task<'a> {
    ctx: &'a WorkerCtx,
    conversations: &'a Conversations,
    session: u64,
    base: u64,
    budget: u64,
    sent: AtomicU64,
    /// Requests sent that carried a tool's result (tool round trips).
    tools: AtomicU64,
    /// A turn failed (which ended its line of turns).
    failed: AtomicBool,
    worker: u64,
    /// The session's affinity header line, sent by its branches too.
    header: Option<Box<[u8]>>,
}

impl Task<'_> {
    /// How the session went, now that it has ended: `going` is `false` when the phase ended
    /// under it; `turns` is every request its script holds; `started` when it was taken (ns).
    fn outcome(&self, going: bool, turns: u64, started: u64) -> SessionOutcome {
        let sent = self.sent.load(Ordering::Relaxed).min(self.budget);
        let end = if self.failed.load(Ordering::Relaxed) {
            SessionEnd::Failed
        } else if !going || sent < turns {
            SessionEnd::Cut
        } else {
            SessionEnd::Completed(self.ctx.shared.clock.now_ns().saturating_sub(started))
        };
        SessionOutcome {
            end,
            turns: u32::try_from(sent).unwrap_or(u32::MAX),
            tool_round_trips: u32::try_from(self.tools.load(Ordering::Relaxed)).unwrap_or(u32::MAX),
        }
    }
}

/// What one line of turns in flight owns: its connection state, its backoff and its history
/// (a branch gets its own, so branches run side by side).
struct Lane {
    ex: Exchange,
    backoff: Backoff,
    history: History,
}

/// A join a later turn waits for: the turn, and the signal that the branch's sessions ended.
type Gate = (usize, oneshot::Receiver<()>);

/// Sends the turns of script `index` from turn `from` on `lane`, waiting before a turn for the
/// branches that join there. After a turn with branches, the branches and the rest of the
/// session run side by side, and this returns when all of them have ended. `false`: the
/// phase ended (stop sending).
fn run<'a>(
    task: &'a Task<'a>,
    index: usize,
    lane: &'a mut Lane,
    from: usize,
    mut gates: Vec<Gate>,
) -> BoxFuture<'a, bool> {
    Box::pin(async move {
        let ctx = task.ctx;
        let script = task.conversations.script(index);
        for t in from..script.turns.len() {
            // The sub-agents' results first; the think or tool time recorded before this turn
            // is spent on them.
            for (_, rx) in extract_gates(&mut gates, t) {
                let _ = rx.await;
            }
            let delay = match t.checked_sub(1) {
                Some(i) => script.delays_ms.get(i).copied(),
                None => script.agent.as_ref().map(|a| a.start_delay_ms),
            };
            if let Some(ms) = delay
                && !think(ctx, ms).await
            {
                return false;
            }
            match send_turn(task, index, t, lane).await {
                Step::Stop => return false,
                Step::Failed => return true,
                Step::Answered => {}
            }
            let branches = script.branches(t);
            if branches.is_empty() {
                continue;
            }
            let mut kids = Vec::with_capacity(branches.len());
            for b in branches {
                let (tx, rx) = oneshot::channel();
                if let Some(k) = b.join_at {
                    gates.push((k, rx));
                }
                let seed = (b.mode == BranchMode::Fork).then(|| lane.history.clone());
                kids.push(branch(task, b.children.clone(), seed, tx));
            }
            let rest = run(task, index, lane, t + 1, gates);
            let (kids, rest) = futures_util::future::join(join_all(kids), rest).await;
            return rest && kids.into_iter().all(|k| k);
        }
        // Joins at the end of the session: the task ends when they do.
        for (_, rx) in gates {
            let _ = rx.await;
        }
        true
    })
}

/// The gates of turn `t`, taken out of `gates`.
fn extract_gates(gates: &mut Vec<Gate>, t: usize) -> Vec<Gate> {
    let (due, rest) = std::mem::take(gates)
        .into_iter()
        .partition(|(k, _)| *k == t);
    *gates = rest;
    due
}

/// A branch: its sessions side by side, each on a lane of its own (a fork's history continues
/// the parent's, a spawn's starts empty); `done` fires when all have ended.
fn branch<'a>(
    task: &'a Task<'a>,
    children: Vec<usize>,
    seed: Option<History>,
    done: oneshot::Sender<()>,
) -> BoxFuture<'a, bool> {
    Box::pin(async move {
        let runs = children.into_iter().map(|c| {
            let seed = seed.clone();
            async move {
                let script = task.conversations.script(c);
                let mut ex = Exchange::new();
                ex.session_header = task.header.clone();
                let mut lane = Lane {
                    ex,
                    backoff: task.ctx.backoff(task.worker),
                    history: History::default(),
                };
                match seed {
                    Some(h) => lane.history = h,
                    None => lane.history.begin(script),
                }
                run(task, c, &mut lane, 0, Vec::new()).await
            }
        });
        let all = join_all(runs).await.into_iter().all(|k| k);
        let _ = done.send(());
        all
    })
}

/// How a turn went.
enum Step {
    /// Answered: the session goes on.
    Answered,
    /// It failed: its session ends (the next turn would need its answer).
    Failed,
    /// The phase ended, or the task's request budget is spent.
    Stop,
}

/// Sends turn `t` of script `index` with the lane's history and keeps the answer.
async fn send_turn(task: &Task<'_>, index: usize, t: usize, lane: &mut Lane) -> Step {
    let ctx = task.ctx;
    let shared = &ctx.shared;
    if ctx.done() || past(ctx) {
        return Step::Stop;
    }
    let k = task.sent.fetch_add(1, Ordering::Relaxed);
    if k >= task.budget {
        return Step::Stop;
    }
    let conversations = task.conversations;
    let script = conversations.script(index);
    let turn = &script.turns[t];
    if script.carries_tool_result(t) {
        task.tools.fetch_add(1, Ordering::Relaxed);
    }
    lane.history.ask(turn);
    let offer = script.offers_tool(t);
    let messages = lane.history.messages();
    let payload = Payload::Http(conversations.body(messages, turn.max_tokens, offer));
    let ask = Ask {
        payload: &payload,
        isl: lane.history.tokens(),
        max_tokens: turn.max_tokens.unwrap_or(0),
        prompt_index: index as u32,
        conversation: Some(Turn {
            session: task.session,
            turn: k as u32,
        }),
        sent: crate::record::Sent {
            tools: shared.dataset.entry(0).sent.tools || offer.is_some(),
            ..Default::default()
        },
    };
    let seq = ctx.spec.seq_base + task.base + k;
    ctx.sent.fetch_add(1, Ordering::Relaxed);
    let intended = shared.clock.now_ns();
    let mut completed = execute(shared, &ctx.spec, (seq, intended), &ask, &mut lane.ex).await;
    let ok = completed.0.record.error.is_none();
    if ok {
        let call = offer.map(|name| (name, format!("call_{}_{t}", task.session)));
        let history = (&mut lane.history, turn);
        remember_answer(ctx, &lane.ex, history, &mut completed, call);
    }
    if !ctx.finish(completed, &mut lane.ex, &mut lane.backoff).await {
        return Step::Stop;
    }
    if ok {
        Step::Answered
    } else {
        task.failed.store(true, Ordering::Relaxed);
        Step::Failed
    }
}

/// Appends the server's answer (its text after any reasoning) to the history, with its token
/// count: the server's with `--use-server-token-count` when it reported one, else the
/// tokenizer's, counted here once per response (the next turn's input length needs it now).
/// Without reasoning the answer is the whole output, so that count is also the record's and
/// the collector is not handed the same text to count again. With `--session-replies
/// recorded` the turn's recorded answer goes into the history instead (the server's is still
/// counted for its record). A turn that offered a tool (`call`: its name and the id to give
/// the call) is answered by that call: the server's arguments when they parse as JSON, else
/// `{}` (an agent runs the recorded tool either way, and servers refuse a history whose call
/// arguments do not parse), with the answer's other text as its content.
fn remember_answer(
    ctx: &WorkerCtx,
    ex: &Exchange,
    (history, turn): (&mut History, &UserTurn),
    (done, to_count): &mut (super::Completed, bool),
    call: Option<(&str, String)>,
) {
    let answer = ex.text.get(ex.reasoning_end..).unwrap_or("");
    let tokens = match ex.completion_tokens {
        Some(n) if ctx.shared.use_server_token_count => n,
        _ => {
            let n = ctx.shared.tokenizer.count(answer);
            if *to_count && ex.reasoning_end == 0 {
                let keep_server =
                    ctx.shared.use_server_token_count && done.record.server_osl.is_some();
                done.record.set_tokenizer_osl(n, keep_server);
                *to_count = false;
            }
            u32::try_from(n).unwrap_or(u32::MAX)
        }
    };
    let (content, args) = match call {
        Some(_) => ex.events.tools().split(&ex.text, ex.reasoning_end),
        None => (String::new(), None),
    };
    let call = call.map(|(name, id)| {
        let args = args.filter(|a| serde_json::from_str::<serde::de::IgnoredAny>(a).is_ok());
        ToolCall::new(id, name, args.unwrap_or_else(|| "{}".into()))
    });
    match (&turn.recorded, &call) {
        (Some((text, n)), _) => history.answer(text, *n, call),
        (None, Some(_)) => history.answer(&content, tokens, call),
        (None, None) => history.answer(answer, tokens, None),
    }
}

/// Whether the level's time window has closed.
fn past(ctx: &WorkerCtx) -> bool {
    ctx.deadline.is_some_and(|d| ctx.shared.clock.now_ns() >= d)
}

/// Waits a session's think time; `false` when the phase ended meanwhile.
async fn think(ctx: &WorkerCtx, ms: u64) -> bool {
    if ms == 0 {
        return !ctx.done();
    }
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(ms)) => !ctx.done(),
        _ = ctx.shared.interrupt.wait_stop() => false,
        _ = ctx.halt.wait() => false,
    }
}
