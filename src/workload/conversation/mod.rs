//! Multi-turn sessions ("conversations" in the code, so as not to be confused with the run's
//! `engine::Session`): what each session sends turn by turn, resolved from `--num-sessions`,
//! `--session-turns-*`, `--session-turn-delay-*` or a conversation file, and the history a
//! session in flight carries ([`history`]).
//!
//! A worker that takes a session keeps it to its last turn: same worker, same connection, and
//! its slot held for the whole session, so `--concurrency` counts sessions in flight. Turn `t`
//! (0-based) sends the system messages, then the `t` earlier user messages each followed by the
//! server's own answer to it, then the new user message.
//!
//! An agentic session file ([`dag`]) adds branches: each of its sessions is a script, and the
//! scripts only branches start are not taken as sessions of their own ([`AgentScript`]).

pub mod dag;
pub mod file;
pub mod history;
pub mod plan;

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use super::lengths::LengthSampler;
use super::prompts::Prompt;
use super::tokenizer::Tokenizer;
pub use file::FileConversation;
use history::Message;
pub use plan::{ConversationSource, Replies, SessionPlan};

/// Mixed into `--random-seed` so turn counts and delays do not reuse other random streams.
const TURNS_SEED: u64 = 0x5e55_1045_7a2b_0001;
const DELAY_SEED: u64 = 0x5e55_1045_7a2b_0002;

/// `count` turn counts from normal(`mean`, `stddev`), rounded, at least 1.
pub fn sample_turns(mean: u32, stddev: u32, seed: u64, count: usize) -> Vec<u32> {
    LengthSampler::new(mean, stddev).seeded(seed ^ TURNS_SEED, count)
}

/// One user turn as prepared before the run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UserTurn {
    /// The user message.
    pub text: String,
    /// Its tokens under the run's tokenizer.
    pub tokens: u32,
    /// Output tokens asked for (`None`: left to the server).
    pub max_tokens: Option<u32>,
    /// The file's recorded answer to it, with its tokens, when the history carries recorded
    /// answers (`--session-replies recorded`) and the file has one.
    pub recorded: Option<(String, u32)>,
    /// The tool's result the turn carries back to the model (agentic sessions), sent before
    /// its user message; `text` may then be empty.
    pub tool: Option<ToolResult>,
}

/// A tool's result, carried back to the model by the turn after the one that called the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The tool's name, which the turn before offers the model to call.
    pub name: String,
    /// The result's text.
    pub text: String,
    /// Its tokens under the run's tokenizer.
    pub tokens: u32,
}

/// What one session sends.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    /// System messages with their tokens, sent first in every turn.
    pub system: Vec<(String, u32)>,
    /// The user turns, in order (at least one).
    pub turns: Vec<UserTurn>,
    /// Think time before each turn after the first (ms): `delays_ms[t - 1]` precedes turn `t`.
    pub delays_ms: Vec<u64>,
    /// The branches of a session of an agentic session file ([`dag`]); `None`: a line of turns.
    pub agent: Option<AgentScript>,
}

/// What a session of an agentic session file adds to a line of turns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentScript {
    /// Wait before the first turn (ms): a sub-agent's own think or tool time.
    pub start_delay_ms: u64,
    /// Branches started after each turn's answer (`branches[t]`: after turn `t`).
    pub branches: Vec<Vec<dag::Branch>>,
    /// The requests of a task started at this session, its branches' included.
    pub task_turns: u64,
}

impl Script {
    /// Whether turn `t` carries a tool's result back to the model (a tool round trip).
    pub fn carries_tool_result(&self, t: usize) -> bool {
        self.turns.get(t).is_some_and(|u| u.tool.is_some())
    }

    /// The tool turn `t` offers the model, named as its choice: the tool whose result the next
    /// turn carries (the recorded agent called it there).
    pub fn offers_tool(&self, t: usize) -> Option<&str> {
        let next = self.turns.get(t + 1)?;
        next.tool.as_ref().map(|r| r.name.as_str())
    }

    /// The branches started after turn `t` (none for a line of turns).
    pub fn branches(&self, t: usize) -> &[dag::Branch] {
        self.agent
            .as_ref()
            .and_then(|a| a.branches.get(t))
            .map_or(&[], Vec::as_slice)
    }
}

/// Builds a turn's request body from the session's messages, the output tokens to ask for and
/// the tool it offers the model, if any.
pub type BodyFn = Box<dyn Fn(&[Message], (Option<u32>, Option<&str>)) -> Bytes + Send + Sync>;

/// Every session's script, how a turn's body is built, and the count of sessions started
/// (shared by the run's workers, across warm-up and measurement, so a measurement continues
/// with the next sessions).
pub struct Conversations {
    scripts: Vec<Script>,
    /// The scripts a session starts from: all of them, except the sessions of an agentic
    /// file that only branches start.
    roots: Vec<usize>,
    body: BodyFn,
    started: AtomicU64,
}

impl std::fmt::Debug for Conversations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversations")
            .field("scripts", &self.scripts.len())
            .field("started", &self.started)
            .finish()
    }
}

impl Conversations {
    /// Wraps prepared scripts (at least one) and the API's body builder.
    pub fn new(scripts: Vec<Script>, body: BodyFn) -> Conversations {
        let agents = scripts.iter().flat_map(|s| &s.agent);
        let branches = agents.flat_map(|a| a.branches.iter().flatten());
        Conversations {
            roots: dag::roots(scripts.len(), branches),
            scripts,
            body,
            started: AtomicU64::new(0),
        }
    }

    /// The request body of a turn whose messages are `messages`.
    pub fn body(
        &self,
        messages: &[Message],
        max_tokens: Option<u32>,
        offer: Option<&str>,
    ) -> Bytes {
        (self.body)(messages, (max_tokens, offer))
    }

    /// Takes the next session: its number in the run and its script (root scripts are used
    /// in order and cycle when more sessions are asked for than there are).
    pub fn take(&self) -> (u64, usize, &Script) {
        let n = self.started.fetch_add(1, Ordering::Relaxed);
        let index = self.roots[(n % self.roots.len().max(1) as u64) as usize];
        (n, index, &self.scripts[index])
    }

    /// The script at `index` (a branch's child).
    pub fn script(&self, index: usize) -> &Script {
        &self.scripts[index]
    }

    /// The requests a session started from `index` sends: its turns and every branch's.
    pub fn task_turns(&self, index: usize) -> u64 {
        let s = &self.scripts[index];
        s.agent
            .as_ref()
            .map_or(s.turns.len() as u64, |a| a.task_turns)
    }
}

/// The scripts of `plan`: `prompts` are the user messages of every turn in session order
/// (synthetic ones generated for `total_turns`, or a file's, tokenized), `max_tokens` one per
/// user turn; think times are sampled from the plan's seed.
pub fn scripts(
    plan: &SessionPlan,
    prompts: Vec<Prompt>,
    max_tokens: &[Option<u32>],
    tokenizer: &Tokenizer,
    seed: u64,
) -> Vec<Script> {
    let mut rng = StdRng::seed_from_u64(seed ^ DELAY_SEED);
    let normal = Normal::new(plan.delay_mean_ms as f64, plan.delay_stddev_ms as f64).ok();
    let mut delay = move || match &normal {
        Some(n) if plan.delay_stddev_ms > 0 => n.sample(&mut rng).round().max(0.0) as u64,
        _ => plan.delay_mean_ms,
    };
    let mut prompts = prompts.into_iter().zip(max_tokens.iter().copied());
    plan.turns
        .iter()
        .enumerate()
        .map(|(s, &turns)| {
            let file = plan.file.get(s);
            let system = file.map_or(Vec::new(), |c| {
                let counted = c.system.iter().map(|t| (t.clone(), tokenizer.tokens(t)));
                counted.collect()
            });
            let recorded = file.filter(|_| plan.replies == Replies::Recorded);
            let replies = recorded.map_or(&[][..], |c| &c.replies[..]);
            let turns: Vec<UserTurn> = prompts
                .by_ref()
                .take(turns as usize)
                .enumerate()
                .map(|(t, (p, max_tokens))| UserTurn {
                    text: p.text,
                    tokens: p.tokens,
                    max_tokens,
                    recorded: replies.get(t).cloned().flatten().map(|r| {
                        let n = tokenizer.tokens(&r);
                        (r, n)
                    }),
                    tool: None,
                })
                .collect();
            let delays_ms = (1..turns.len()).map(|_| delay()).collect();
            Script {
                system,
                turns,
                delays_ms,
                agent: None,
            }
        })
        .collect()
}

/// The scripts of an agentic session file, one per session in file order: a turn's tool
/// results become its [`ToolResult`] and its user messages one user message, the first turn's
/// system messages first in every turn; `max_tokens[i]` is the output length of the `i`-th
/// turn of the file when the turn does not set its own; with `recorded` each turn carries the
/// file's recorded answer, if it has one.
pub fn agent_scripts(
    dag: &dag::Dag,
    max_tokens: &[Option<u32>],
    tokenizer: &Tokenizer,
    recorded: bool,
) -> Vec<Script> {
    let mut flag = max_tokens.iter().copied();
    dag.sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut system = Vec::new();
            let mut turns = Vec::with_capacity(s.turns.len());
            for (t, turn) in s.turns.iter().enumerate() {
                let (mut texts, mut results) = (Vec::new(), Vec::new());
                for said in &turn.said {
                    match said.role {
                        history::Role::System if t == 0 => {
                            system.push((said.text.clone(), tokenizer.tokens(&said.text)));
                        }
                        history::Role::Tool => results.push(said.text.as_str()),
                        _ => texts.push(said.text.as_str()),
                    }
                }
                let text = texts.join("\n\n");
                let tool = turn.tool.as_ref().map(|name| {
                    let text = results.join("\n\n");
                    ToolResult {
                        name: name.clone(),
                        tokens: tokenizer.tokens(&text),
                        text,
                    }
                });
                let fallback = flag.next().flatten();
                turns.push(UserTurn {
                    tokens: tokenizer.tokens(&text),
                    text,
                    max_tokens: turn.max_tokens.or(fallback),
                    recorded: turn
                        .recorded
                        .as_ref()
                        .filter(|_| recorded)
                        .map(|r| (r.clone(), tokenizer.tokens(r))),
                    tool,
                });
            }
            Script {
                system,
                turns,
                delays_ms: s.turns.iter().skip(1).map(|t| t.delay_ms).collect(),
                agent: Some(AgentScript {
                    start_delay_ms: s.turns[0].delay_ms,
                    branches: s.turns.iter().map(|t| t.branches.clone()).collect(),
                    task_turns: dag.task_turns(i),
                }),
            }
        })
        .collect()
}

/// The user messages of a file's sessions, tokenized, in session order.
pub fn file_prompts(plan: &SessionPlan, tokenizer: &Tokenizer) -> Vec<Prompt> {
    plan.file
        .iter()
        .take(plan.sessions as usize)
        .flat_map(|c| c.users.iter())
        .map(|t| Prompt {
            text: t.clone(),
            tokens: tokenizer.tokens(t),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::ConversationSource;
    use super::*;

    fn plan(turns: Vec<u32>, delay: (u64, u64)) -> SessionPlan {
        SessionPlan {
            source: ConversationSource::Synthetic {
                turns_mean: 2,
                turns_stddev: 0,
            },
            sessions: turns.len() as u32,
            total_turns: turns.iter().map(|&t| u64::from(t)).sum(),
            turns,
            delay_mean_ms: delay.0,
            delay_stddev_ms: delay.1,
            file: Arc::new(Vec::new()),
            agents: None,
            header: None,
            replies: Replies::Live,
        }
    }

    fn prompts(n: usize) -> Vec<Prompt> {
        (0..n)
            .map(|i| Prompt {
                text: format!("p{i}"),
                tokens: i as u32,
            })
            .collect()
    }

    #[test]
    fn scripts_take_turns_in_order_and_sample_delays() {
        let tk = Tokenizer::builtin_gpt2();
        let p = plan(vec![2, 1, 3], (100, 0));
        let s = scripts(&p, prompts(6), &[Some(7); 6], &tk, 1);
        let texts: Vec<Vec<&str>> = s
            .iter()
            .map(|s| s.turns.iter().map(|t| t.text.as_str()).collect())
            .collect();
        assert_eq!(
            texts,
            [vec!["p0", "p1"], vec!["p2"], vec!["p3", "p4", "p5"]]
        );
        assert_eq!(s[2].delays_ms, [100, 100]);
        assert!(s[1].delays_ms.is_empty());
        let p = plan(vec![50], (100, 80));
        let a = scripts(&p, prompts(50), &[None; 50], &tk, 9);
        assert_eq!(a, scripts(&p, prompts(50), &[None; 50], &tk, 9), "seeded");
        let d = &a[0].delays_ms;
        assert!(d.contains(&0), "clamped at 0: {d:?}");
        assert!(d.iter().any(|&x| x > 150), "spread: {d:?}");
    }

    #[test]
    fn turns_are_at_least_one_and_sessions_cycle() {
        let t = sample_turns(2, 5, 3, 200);
        assert!(t.iter().all(|&n| n >= 1) && t.iter().any(|&n| n > 4));
        assert_eq!(t, sample_turns(2, 5, 3, 200));
        let c = Conversations::new(
            vec![Script::default(); 2],
            Box::new(|m, _| Bytes::from(m.len().to_string())),
        );
        let taken: Vec<(u64, usize)> = (0..3).map(|_| c.take()).map(|(n, i, _)| (n, i)).collect();
        assert_eq!(taken, [(0, 0), (1, 1), (2, 0)]);
    }
}
