//! The requests of a run, prepared before it starts: prompts tokenized and request bodies
//! serialized once, then shared by every send (the timed path never builds JSON).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::bodies::{self, Input};
use super::conversation::history::Message;
use super::conversation::{self, Conversations};
use super::conversation::{ConversationSource, SessionPlan};
use super::kserve::{self, LlmAsk};
use super::lengths::LengthSampler;
use super::prompts::{self, Prompt, SyntheticSpec};
use super::salt::Salt;
use super::scored::{AnswerKey, ScoredSource};
use super::tensor::ModelInfo;
use super::tokenizer::Tokenizer;
use super::{PromptSource, WorkloadPlan};
use crate::error::UsageError;
use crate::record::Sent;
use crate::target::{Api, Target};

/// A request body prepared before the run, shared by every send of that dataset entry.
#[derive(Clone, Debug)]
pub enum Payload {
    /// JSON body for an HTTP API.
    Http(Bytes),
    /// Encoded `ModelInferRequest` without its `id` (appended per send).
    Grpc(Bytes),
    /// KServe v2 HTTP `/infer` body; with the binary tensor extension, the JSON header's length.
    HttpInfer {
        /// JSON, or JSON header followed by raw tensor data.
        body: Bytes,
        /// `Inference-Header-Content-Length`, when the body carries binary tensors.
        header_len: Option<usize>,
    },
}

/// One prepared request.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The body (or message) to send.
    pub payload: Payload,
    /// Input tokens under the run's tokenizer.
    pub isl: u32,
    /// Output tokens asked for (0 when the server decides).
    pub max_tokens: u32,
    /// What it carries besides its prompt: batch inputs, images, tools.
    pub sent: Sent,
}

/// Every prepared request, used round-robin.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    entries: Vec<Entry>,
    /// Each entry's index in the whole dataset, when this is a shard's part of it.
    indices: Option<Vec<u32>>,
    /// A trace's send times: entry `i` is due this many ns after the schedule's start.
    schedule: Option<Vec<u64>>,
    /// Multi-turn sessions: what each sends turn by turn (the entries are then their user
    /// turns alone, for lengths and input-length buckets; the workers send the sessions).
    conversations: Option<Arc<Conversations>>,
    /// A scored workload's answers, by index in the whole dataset.
    answers: Option<Arc<AnswerKey>>,
}

impl Dataset {
    /// Wraps prepared entries.
    pub fn new(entries: Vec<Entry>) -> Dataset {
        Dataset {
            entries,
            ..Dataset::default()
        }
    }

    /// Gives the dataset the answers its entries are graded against (a scored workload).
    pub fn with_answers(mut self, key: AnswerKey) -> Dataset {
        self.answers = Some(Arc::new(key));
        self
    }

    /// The answers responses are graded against, in a scored workload.
    pub fn answers(&self) -> Option<&Arc<AnswerKey>> {
        self.answers.as_ref()
    }

    /// Gives the dataset its sessions' scripts (`None`: single requests), whose turns are sent
    /// as `t` and `w` say.
    pub fn with_conversations(
        mut self,
        scripts: Option<Vec<conversation::Script>>,
        t: &Target,
        w: &WorkloadPlan,
    ) -> Dataset {
        self.conversations = scripts.map(|s| {
            let (t, w) = (t.clone(), w.clone());
            let body: conversation::BodyFn = Box::new(move |m, asked| turn_body(&t, &w, m, asked));
            Arc::new(Conversations::new(s, body))
        });
        self
    }

    /// The sessions, when the run sends multi-turn sessions.
    pub fn conversations(&self) -> Option<&Conversations> {
        self.conversations.as_deref()
    }

    /// Gives the entries a send time each (ns after the schedule's start, one per entry).
    pub fn with_schedule(mut self, schedule: Option<Vec<u64>>) -> Dataset {
        self.schedule = schedule.filter(|s| s.len() == self.entries.len());
        self
    }

    /// The entries' send times, when they come from a trace (a shard's part keeps the whole
    /// trace's times: the shards' union is the trace).
    pub fn schedule(&self) -> Option<&[u64]> {
        self.schedule.as_deref()
    }

    /// Shard `index` of `count`'s part: entries `index`, `index + count`, ... of the whole
    /// dataset, so shards never send the same prompt. Fails when there are fewer entries than
    /// shards (some shard would have none).
    pub fn partition(self, index: u32, count: u32) -> Result<Dataset, UsageError> {
        if count <= 1 {
            return Ok(self);
        }
        if self.entries.len() < count as usize {
            return Err(UsageError(format!(
                "{} prompts cannot be split over {count} shards without two shards sending the same prompt: give --num-prompts of at least {count}",
                self.entries.len()
            )));
        }
        let mine = |i: usize| i as u64 % u64::from(count) == u64::from(index);
        let (entries, indices) = self
            .entries
            .into_iter()
            .enumerate()
            .filter(|(i, _)| mine(*i))
            .map(|(i, e)| (e, i as u32))
            .unzip();
        let schedule = self.schedule.map(|s| {
            s.into_iter()
                .enumerate()
                .filter(|(i, _)| mine(*i))
                .map(|(_, t)| t)
                .collect()
        });
        Ok(Dataset {
            entries,
            indices: Some(indices),
            schedule,
            ..self
        })
    }

    /// The index in the whole dataset of entry `i` (`i` itself unless partitioned).
    pub fn prompt_index(&self, i: usize) -> u32 {
        self.indices.as_ref().map_or(i as u32, |ix| ix[i])
    }

    /// Every entry's input length, in dataset order.
    pub fn isls(&self) -> Vec<u32> {
        self.entries.iter().map(|e| e.isl).collect()
    }

    /// The same entries with these input lengths (the server's count of each, in order).
    pub fn with_isls(mut self, isls: &[u32]) -> Dataset {
        for (e, &n) in self.entries.iter_mut().zip(isls) {
            e.isl = n;
        }
        self
    }

    /// Number of entries (never 0 for a built dataset).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entry `i`.
    pub fn entry(&self, i: usize) -> &Entry {
        &self.entries[i]
    }
}

/// Mixed into the seed so output lengths do not reuse the prompt generator's random stream.
const OUTPUT_SEED_SALT: u64 = 0x9e37_79b9_7f4a_7c15;

/// A plan's prompts with what each asks for, before request bodies are built.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prepared {
    /// The prompts, in dataset order.
    pub prompts: Vec<Prompt>,
    /// Output tokens each asks for (`None`: left to the server).
    pub max_tokens: Vec<Option<u32>>,
    /// A trace's send times (ns after the schedule's start), one per prompt.
    pub schedule: Option<Vec<u64>>,
    /// Multi-turn sessions' scripts (`prompts` are then their user turns, in session order).
    pub conversations: Option<Vec<conversation::Script>>,
}

/// The prompts of a plan (synthetic, from an `--input-file` of prompts, or synthesized for a
/// trace), their output lengths and a trace's schedule; `salt` is the run's resolved salt.
pub fn prepare(
    w: &WorkloadPlan,
    tokenizer: &Tokenizer,
    salt: Salt,
) -> Result<Prepared, UsageError> {
    if let Some(plan) = &w.sessions {
        return Ok(prepare_sessions(w, plan, tokenizer, salt));
    }
    let prompts = match &w.prompts {
        PromptSource::Synthetic { mean, stddev } => prompts::synthetic_with(
            tokenizer,
            &SyntheticSpec {
                prefixes: w.prefix_prompts,
                ..synthetic_spec(w, (*mean, *stddev), w.num_prompts as usize, salt)
            },
        ),
        PromptSource::File(path) => {
            let mut all = prompts::from_jsonl(path, tokenizer)
                .map_err(|e| UsageError(format!("--input-file: {e}")))?;
            all.truncate(w.num_prompts.max(1) as usize);
            all
        }
        PromptSource::Rankings(_) => {
            return Err(UsageError(
                "reranker queries and passages make rankings requests only".into(),
            ));
        }
        PromptSource::Scored(_) => {
            return Err(UsageError(
                "a scored workload (--accuracy-benchmark) sends chat or completions requests: give --endpoint-type chat or completions".into(),
            ));
        }
        PromptSource::Trace(t) => {
            let prompts =
                super::blocks::trace_prompts(tokenizer, &t.trace, t.block_size, w.seed, salt)?;
            let requests = &t.trace.requests;
            return Ok(Prepared {
                max_tokens: requests.iter().map(|r| Some(r.output_length)).collect(),
                schedule: t.trace.schedule_ns(t.start_ms),
                prompts,
                ..Prepared::default()
            });
        }
    };
    let max_tokens = output_lengths(w, prompts.len());
    Ok(Prepared {
        prompts,
        max_tokens,
        ..Prepared::default()
    })
}

/// Sessions' user turns (synthetic ones as synthetic prompts are made, salt and all, or a
/// file's) with their output lengths, and the scripts built from them.
fn prepare_sessions(
    w: &WorkloadPlan,
    plan: &SessionPlan,
    tokenizer: &Tokenizer,
    salt: Salt,
) -> Prepared {
    if let Some(dag) = &plan.agents {
        let max_tokens = output_lengths(w, plan.turns.iter().map(|&t| t as usize).sum());
        let recorded = plan.replies == conversation::plan::Replies::Recorded;
        let scripts = conversation::agent_scripts(dag, &max_tokens, tokenizer, recorded);
        let turns = scripts.iter().flat_map(|s| &s.turns);
        let (prompts, max_tokens) = turns
            .map(|t| {
                let (text, tokens) = (t.text.clone(), t.tokens);
                (Prompt { text, tokens }, t.max_tokens)
            })
            .unzip();
        return Prepared {
            prompts,
            max_tokens,
            conversations: Some(scripts),
            ..Prepared::default()
        };
    }
    let prompts = match (&plan.source, &w.prompts) {
        (ConversationSource::Synthetic { .. }, PromptSource::Synthetic { mean, stddev }) => {
            let spec = synthetic_spec(w, (*mean, *stddev), plan.total_turns as usize, salt);
            prompts::synthetic_with(tokenizer, &spec)
        }
        _ => conversation::file_prompts(plan, tokenizer),
    };
    let max_tokens = output_lengths(w, prompts.len());
    let scripts = conversation::scripts(plan, prompts.clone(), &max_tokens, tokenizer, w.seed);
    Prepared {
        prompts,
        max_tokens,
        conversations: Some(scripts),
        ..Prepared::default()
    }
}

/// `count` synthetic prompts of lengths normal(`mean`, `stddev`), for the plan's seed and the
/// run's salt, without prefix prompts.
fn synthetic_spec(
    w: &WorkloadPlan,
    (mean, stddev): (u32, u32),
    count: usize,
    salt: Salt,
) -> SyntheticSpec {
    SyntheticSpec {
        count,
        mean,
        stddev,
        seed: w.seed,
        salt,
        prefixes: None,
    }
}

/// Output lengths, one per prompt, deterministic for the seed.
pub fn output_lengths(w: &WorkloadPlan, n: usize) -> Vec<Option<u32>> {
    match w.output {
        Some(o) => LengthSampler::new(o.mean, o.stddev)
            .seeded(w.seed ^ OUTPUT_SEED_SALT, n)
            .into_iter()
            .map(Some)
            .collect(),
        None => vec![None; n],
    }
}

/// Builds the HTTP JSON bodies of every HTTP API: generative ones here (with their images and
/// tools), embeddings and rankings batches in [`build_batches`].
pub fn build_http(
    t: &Target,
    w: &WorkloadPlan,
    tokenizer: &Tokenizer,
    salt: Salt,
) -> Result<Dataset, UsageError> {
    if !t.api.generates() {
        return build_batches(t, w, tokenizer, salt);
    }
    if let PromptSource::Scored(src) = &w.prompts {
        return Ok(build_scored(t, w, tokenizer, src));
    }
    let p = prepare(w, tokenizer, salt)?;
    let per = w.images.as_ref().map_or(0, |i| i.per_request as usize);
    let images = match &w.images {
        Some(plan) => plan
            .images(w.seed, p.prompts.len() * per)
            .map_err(|e| UsageError(format!("--image-dir: {e}")))?,
        None => Vec::new(),
    };
    let entries = p
        .prompts
        .iter()
        .zip(p.max_tokens)
        .enumerate()
        .map(|(i, (p, max_tokens))| {
            let mine = &images[(i * per).min(images.len())..((i + 1) * per).min(images.len())];
            let body = http_body_with(t, w, Input::Text(&p.text), max_tokens, mine);
            let sent = Sent {
                inputs: 0,
                images: mine.len() as u32,
                image_bytes: mine.iter().map(|i| i.bytes.len() as u64).sum(),
                tools: w.tools.is_some() && t.api.chat_like(),
            };
            http_entry(&body, p.tokens.into(), max_tokens.unwrap_or(0), sent)
        })
        .collect();
    Ok(Dataset::new(entries)
        .with_schedule(p.schedule)
        .with_conversations(p.conversations, t, w))
}

/// The requests of a scored workload, one per question (its few-shot examples before it: one
/// text for the completions API, messages for chat; see `scored::prompt`), and the answer key
/// their responses are graded against. Questions are sent as the dataset has them: no salt.
fn build_scored(
    t: &Target,
    w: &WorkloadPlan,
    tokenizer: &Tokenizer,
    src: &ScoredSource,
) -> Dataset {
    use super::scored::prompt;
    let set = &src.set;
    let max_tokens = w
        .output
        .map_or(src.benchmark.default_max_tokens(), |o| o.mean);
    let entries = set
        .items
        .iter()
        .map(|item| {
            let shots =
                prompt::shots_for(&set.shots, item.subject.as_deref(), src.n_shots as usize);
            let header = prompt::header(src.benchmark, item.subject.as_deref());
            let frame = prompt::Frame {
                system: src.system_prompt.as_deref(),
                header: header.as_deref(),
                shots: &shots,
            };
            let (body, isl) = match t.api {
                Api::Chat => {
                    let m = prompt::messages(&frame, item);
                    let isl = m.iter().map(|m| tokenizer.count(&m.content)).sum::<usize>();
                    (http_body(t, w, Input::Messages(&m), Some(max_tokens)), isl)
                }
                _ => {
                    let text = prompt::text(&frame, item);
                    let isl = tokenizer.count(&text);
                    (http_body(t, w, Input::Text(&text), Some(max_tokens)), isl)
                }
            };
            http_entry(&body, isl as u64, max_tokens, Sent::default())
        })
        .collect();
    let expected = set.items.iter().map(|i| i.expected.clone()).collect();
    let greedy = w
        .extra_inputs
        .iter()
        .any(|(k, v)| k == "temperature" && v.as_f64() == Some(0.0));
    Dataset::new(entries).with_answers(AnswerKey::new(src.grader, expected, greedy))
}

/// Builds KServe v2 gRPC requests for an LLM model, shaped by what the server said about it.
pub fn build_kserve(
    t: &Target,
    w: &WorkloadPlan,
    tokenizer: &Tokenizer,
    info: &ModelInfo,
    salt: Salt,
) -> Result<Dataset, UsageError> {
    let prepared = prepare(w, tokenizer, salt)?;
    let deterministic = w.exact_output();
    let entries = prepared.prompts.iter().zip(prepared.max_tokens);
    let entries = entries.map(|(p, max_tokens)| {
        let ask = LlmAsk {
            text: &p.text,
            max_tokens,
            deterministic,
            streaming: t.streaming,
            extra: &w.extra_inputs,
        };
        let (bytes, asked) = kserve::build_request(info, t.backend, &ask)?;
        Ok(Entry {
            payload: Payload::Grpc(Bytes::from(bytes)),
            isl: p.tokens,
            max_tokens: asked,
            sent: Sent::default(),
        })
    });
    let entries = entries.collect::<Result<_, UsageError>>()?;
    Ok(Dataset::new(entries).with_schedule(prepared.schedule))
}

/// The JSON body of one request without images (public for tests, sessions and `doctor`).
pub fn http_body(t: &Target, w: &WorkloadPlan, input: Input, max_tokens: Option<u32>) -> Value {
    http_body_with(t, w, input, max_tokens, &[])
}

/// The JSON body of one request carrying `images` (chat-like APIs) and the plan's tools.
pub fn http_body_with(
    t: &Target,
    w: &WorkloadPlan,
    input: Input,
    max_tokens: Option<u32>,
    images: &[super::images::Image],
) -> Value {
    if matches!(t.api, Api::Responses | Api::Messages) {
        return bodies::chat_like_body(t, w, input, max_tokens, images);
    }
    let mut m = Map::new();
    if matches!(t.api, Api::Chat | Api::Completions) {
        m.insert("model".into(), json!(t.model));
    }
    let (key, value) = match (t.api, input) {
        (Api::Chat, Input::Text(text)) if !images.is_empty() => {
            let content = bodies::content(Api::Chat, text, images);
            ("messages", json!([{"role": "user", "content": content}]))
        }
        (Api::Chat, _) => ("messages", input.messages()),
        (Api::Completions, _) => ("prompt", input.text()),
        _ => ("text_input", input.text()),
    };
    m.insert(key.into(), value);
    if let Some(n) = max_tokens {
        m.insert("max_tokens".into(), json!(n));
    }
    bodies::exact_output_fields(&mut m, w, max_tokens);
    m.insert("stream".into(), json!(t.streaming));
    // Always: the server's count is recorded next to the tokenizer's (and used with
    // --use-server-token-count). Only streamed requests take `stream_options`; a whole body
    // carries `usage` anyway.
    if t.streaming && matches!(t.api, Api::Chat | Api::Completions) {
        m.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if t.api == Api::Chat {
        bodies::tool_fields(&mut m, t.api, w);
    }
    m.extend(w.extra_inputs.iter().cloned());
    Value::Object(m)
}

/// The request body of a turn: the messages for the chat-like APIs, the messages' text joined
/// by blank lines for the completions and generate APIs; `offer` names the tool the turn
/// offers the model (chat-like APIs only: the others have no tools).
pub fn turn_body(
    t: &Target,
    w: &WorkloadPlan,
    messages: &[Message],
    (max_tokens, offer): (Option<u32>, Option<&str>),
) -> Bytes {
    let mut body = http_body(t, w, Input::Messages(messages), max_tokens);
    if let (Some(name), Value::Object(m)) = (offer, &mut body)
        && t.api.chat_like()
    {
        super::tools::offer(m, t.api, w.tools.as_ref(), name);
    }
    json_bytes(&body)
}

/// A request body's bytes.
fn json_bytes(body: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(body).unwrap_or_default())
}

/// The texts embeddings and synthetic rankings draw from: `n` synthetic prompts (the salt
/// applied), or an `--input-file`'s `{"text"}` rows in turn.
fn texts(
    w: &WorkloadPlan,
    tokenizer: &Tokenizer,
    salt: Salt,
    n: usize,
) -> Result<Vec<Prompt>, UsageError> {
    match &w.prompts {
        PromptSource::Synthetic { mean, stddev } => {
            let spec = synthetic_spec(w, (*mean, *stddev), n, salt);
            Ok(prompts::synthetic_with(tokenizer, &spec))
        }
        PromptSource::File(path) => prompts::from_jsonl(path, tokenizer)
            .map_err(|e| UsageError(format!("--input-file: {e}"))),
        other => Err(UsageError(format!(
            "this input ({other:?}) cannot feed embeddings or rankings requests"
        ))),
    }
}

/// The dataset of an embeddings or rankings run: `--num-prompts` requests of `--batch-size-text`
/// texts each (a rankings input file: one request per query).
pub fn build_batches(
    t: &Target,
    w: &WorkloadPlan,
    tokenizer: &Tokenizer,
    salt: Salt,
) -> Result<Dataset, UsageError> {
    let b = w.batch_size_text.max(1) as usize;
    let n = w.num_prompts.max(1) as usize;
    if let PromptSource::Rankings(src) = &w.prompts {
        let count = src.data.len().min(n);
        let entries = (0..count)
            .map(|i| {
                let (q, ps) = src.data.request(i, w.batch_size_text);
                let isl = std::iter::once(q)
                    .chain(ps.iter().copied())
                    .map(|s| tokenizer.count(s) as u64)
                    .sum::<u64>();
                batch_entry(bodies::rankings_body(t, w, q, &ps), isl, ps.len())
            })
            .collect();
        return Ok(Dataset::new(entries));
    }
    let rankings = t.api == Api::Rankings;
    // A rankings request's query is one text more.
    let per = b + usize::from(rankings);
    let pool = texts(w, tokenizer, salt, n * per)?;
    let entries = (0..n)
        .map(|i| {
            let group: Vec<&Prompt> = (0..per)
                .map(|j| &pool[(i * per + j) % pool.len()])
                .collect();
            let isl = group.iter().map(|p| u64::from(p.tokens)).sum::<u64>();
            let strs: Vec<&str> = group.iter().map(|p| p.text.as_str()).collect();
            let body = match rankings {
                true => bodies::rankings_body(t, w, strs[0], &strs[1..]),
                false => bodies::embeddings_body(t, w, &strs),
            };
            batch_entry(body, isl, b)
        })
        .collect();
    Ok(Dataset::new(entries))
}

fn batch_entry(body: Value, isl: u64, inputs: usize) -> Entry {
    let mut entry = http_entry(&body, isl, 0, Sent::default());
    entry.sent.inputs = u32::try_from(inputs).unwrap_or(u32::MAX);
    entry
}

/// An HTTP request's entry: its body, input length, output tokens asked for and what it carries.
fn http_entry(body: &Value, isl: u64, max_tokens: u32, sent: Sent) -> Entry {
    Entry {
        payload: Payload::Http(json_bytes(body)),
        isl: u32::try_from(isl).unwrap_or(u32::MAX),
        max_tokens,
        sent,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::plan::RunPlan;
    use clap::Parser;

    fn plan(args: &str) -> RunPlan {
        plan_for("gpt2", args)
    }

    /// The plan of `ttftbench profile -m MODEL ARGS...` (the arguments split at spaces).
    pub(in crate::workload) fn plan_for(model: &str, args: &str) -> RunPlan {
        let mut argv = vec!["ttftbench", "profile", "-m", model];
        argv.extend(args.split_whitespace());
        let cli = crate::cli::Cli::try_parse_from(&argv).unwrap();
        let crate::cli::Command::Profile(p) = cli.command else {
            panic!("expected profile")
        };
        p.plan(&[]).unwrap()
    }

    #[test]
    fn chat_body() {
        let p = plan(
            "--endpoint-type chat --streaming --output-tokens-mean 100 --output-tokens-mean-deterministic --use-server-token-count --extra-inputs temperature:0",
        );
        let body = http_body(&p.target, &p.workload, Input::Text("hi"), Some(100));
        assert_eq!(
            body,
            json!({"model": "gpt2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 100, "min_tokens": 100,
                   "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0})
        );
        assert_eq!(
            serde_json::to_string(&body).unwrap().find("\"model\""),
            Some(1),
            "field order is stable"
        );
    }

    #[test]
    fn generate_and_completions_bodies() {
        let p = plan("--endpoint-type generate --streaming");
        assert_eq!(
            http_body(&p.target, &p.workload, Input::Text("Hello"), Some(8)),
            json!({"text_input": "Hello", "max_tokens": 8, "stream": true})
        );
        let p = plan("--endpoint-type completions --no-streaming");
        assert_eq!(
            http_body(&p.target, &p.workload, Input::Text("x"), None),
            json!({"model": "gpt2", "prompt": "x", "stream": false})
        );
        // Streamed by default: the endpoint can.
        let p = plan("--endpoint-type completions");
        assert_eq!(
            http_body(&p.target, &p.workload, Input::Text("x"), None)["stream"],
            json!(true)
        );
    }

    #[test]
    fn partition_keeps_global_indices_and_never_overlaps() {
        let entry = |n: u32| Entry {
            payload: Payload::Http(Bytes::from(vec![n as u8])),
            isl: n,
            max_tokens: 0,
            sent: Sent::default(),
        };
        let whole = Dataset::new((0..10).map(entry).collect());
        let mut seen = Vec::new();
        for index in 0..3 {
            let part = whole.clone().partition(index, 3).unwrap();
            for i in 0..part.len() {
                let global = part.prompt_index(i);
                assert_eq!(part.entry(i).isl, global, "the entry is the global one");
                assert_eq!(global % 3, index);
                seen.push(global);
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..10).collect::<Vec<u32>>());
        // A trace's send times go with their entries.
        let timed = whole
            .clone()
            .with_schedule(Some((0..10).map(|t| t * 100).collect()));
        let part = timed.partition(1, 3).unwrap();
        assert_eq!(part.schedule(), Some(&[100, 400, 700][..]));
        assert_eq!(whole.clone().partition(0, 1).unwrap().prompt_index(7), 7);
        let e = whole.partition(0, 11).unwrap_err();
        assert!(e.0.contains("--num-prompts of at least 11"), "{e}");
    }

    #[test]
    fn dataset_is_deterministic() {
        let p = plan(
            "--endpoint-type chat --num-prompts 5 --synthetic-input-tokens-mean 50 --synthetic-input-tokens-stddev 5 --output-tokens-mean 20 --output-tokens-stddev 4",
        );
        let tk = Tokenizer::builtin_gpt2();
        let a = build_http(&p.target, &p.workload, &tk, Salt::NONE).unwrap();
        let b = build_http(&p.target, &p.workload, &tk, Salt::NONE).unwrap();
        assert_eq!(a.len(), 5);
        for i in 0..5 {
            match (&a.entry(i).payload, &b.entry(i).payload) {
                (Payload::Http(x), Payload::Http(y)) => assert_eq!(x, y),
                other => panic!("expected HTTP payloads, got {other:?}"),
            }
            assert_eq!(a.entry(i).max_tokens, b.entry(i).max_tokens);
            assert!(a.entry(i).max_tokens >= 1);
        }
    }

    /// A batch run's dataset: `--num-prompts` requests of `--batch-size-text` inputs, the input
    /// length the sum over the texts (and the query).
    #[test]
    fn batch_datasets() {
        let tk = Tokenizer::builtin_gpt2();
        let p = plan(
            "--endpoint-type embeddings -b 4 --num-prompts 3 --synthetic-input-tokens-mean 10",
        );
        let d = build_batches(&p.target, &p.workload, &tk, Salt::NONE).unwrap();
        assert_eq!(d.len(), 3);
        for i in 0..3 {
            let e = d.entry(i);
            assert_eq!((e.isl, e.sent.inputs), (40, 4));
            let Payload::Http(b) = &e.payload else {
                panic!("http")
            };
            let v: Value = serde_json::from_slice(b).unwrap();
            assert_eq!(v["input"].as_array().unwrap().len(), 4);
        }
        let p =
            plan("--endpoint-type rankings -b 3 --num-prompts 2 --synthetic-input-tokens-mean 10");
        let d = build_batches(&p.target, &p.workload, &tk, Salt::NONE).unwrap();
        assert_eq!((d.entry(1).isl, d.entry(1).sent.inputs), (40, 3));
    }
}
