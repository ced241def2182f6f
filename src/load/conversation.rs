//! How a worker drives multi-turn sessions: it takes a session and keeps it to its last turn
//! (the same worker, so the same connection where the client keeps one per worker), waits the
//! think time between turns, and holds its slot meanwhile, so N workers keep N sessions in
//! flight. Each turn's body is built when it is due, from the session's history and the
//! server's answer to the previous turn, which is appended once per response; requests that
//! stand alone never come here.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{Ask, WorkerCtx, execute};
use crate::client::Exchange;
use crate::record::Turn;
use crate::workload::Payload;
use crate::workload::conversation::history::History;

/// A closed-loop worker of sessions. `tickets` counts turns (requests): a session reserves its
/// turns when it starts, so a request budget of every session's turns sends each session
/// whole, and a smaller one cuts only the last session short. A turn that fails ends its
/// session (the next turn would need its answer).
pub(crate) async fn worker(ctx: WorkerCtx, tickets: Arc<AtomicU64>, worker: u64) {
    let shared = ctx.shared.clone();
    let Some(conversations) = shared.dataset.conversations() else {
        return;
    };
    let mut ex = Exchange::new();
    let mut backoff = ctx.backoff(worker);
    let mut history = History::default();
    loop {
        if ctx.done() || past(&ctx) {
            return;
        }
        let (session, index, script) = conversations.take();
        let turns = script.turns.len() as u64;
        let base = tickets.fetch_add(turns, Ordering::Relaxed);
        let budget = match ctx.spec.stop.requests() {
            Some(n) => n.saturating_sub(base).min(turns),
            None => turns,
        };
        if budget == 0 {
            return;
        }
        history.begin(script);
        for (t, turn) in script.turns.iter().enumerate().take(budget as usize) {
            let delay = t.checked_sub(1).and_then(|i| script.delays_ms.get(i));
            if let Some(&ms) = delay
                && !think(&ctx, ms).await
            {
                return;
            }
            if ctx.done() || past(&ctx) {
                return;
            }
            history.ask(turn);
            let payload = Payload::Http(conversations.body(history.messages(), turn.max_tokens));
            let ask = Ask {
                payload: &payload,
                isl: history.tokens(),
                max_tokens: turn.max_tokens.unwrap_or(0),
                prompt_index: index as u32,
                conversation: Some(Turn {
                    session,
                    turn: t as u32,
                }),
                sent: crate::record::Sent {
                    tools: shared.dataset.entry(0).sent.tools,
                    ..Default::default()
                },
            };
            let seq = ctx.spec.seq_base + base + t as u64;
            ctx.sent.fetch_add(1, Ordering::Relaxed);
            let intended = shared.clock.now_ns();
            let mut completed = execute(&shared, &ctx.spec, (seq, intended), &ask, &mut ex).await;
            let ok = completed.0.record.error.is_none();
            if ok {
                remember_answer(&ctx, &ex, &mut history, &mut completed);
            }
            if !ctx.finish(completed, &mut ex, &mut backoff).await {
                return;
            }
            if !ok {
                break;
            }
        }
    }
}

/// Appends the server's answer (its text after any reasoning) to the history, with its token
/// count: the server's with `--use-server-token-count` when it reported one, else the
/// tokenizer's, counted here once per response (the next turn's input length needs it now).
/// Without reasoning the answer is the whole output, so that count is also the record's and
/// the collector is not handed the same text to count again.
fn remember_answer(
    ctx: &WorkerCtx,
    ex: &Exchange,
    history: &mut History,
    (done, to_count): &mut (super::Completed, bool),
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
    history.answer(answer, tokens);
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
        _ = ctx.shared.cancel.wait_stop() => false,
        _ = ctx.halt.wait() => false,
    }
}
