//! Fuzz targets: one function per parser of outside data, each checking properties beyond "does
//! not panic", shared by the coverage-guided harnesses in `fuzz/`, the stable mutation runner
//! (`examples/fuzz_stable.rs`) and the regression replay in `tests/sim/fuzz_regressions.rs`.
//!
//! A target takes arbitrary bytes, feeds them to one parser and panics only when a property
//! fails (or the parser itself panics): that is what the fuzzers report as a crash. Targets never
//! touch the file system or the network, so millions of inputs run per minute.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;

use crate::client::{events, grpc_conn, sse, wire};
use crate::workload::tensor::{DataType, ModelInfo, TensorSpec};
use crate::workload::tokenizer::Tokenizer;

/// One fuzz target: its name (the `fuzz/fuzz_targets/<name>.rs` harness and the corpus folder)
/// and the function that checks one input.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Name used by scripts, corpora and harnesses.
    pub name: &'static str,
    /// Checks one input; panics when a property fails.
    pub run: fn(&[u8]),
}

impl Target {
    const fn new(name: &'static str, run: fn(&[u8])) -> Target {
        Target { name, run }
    }
}

/// Every target, in the order `scripts/fuzz.sh` runs them.
pub const TARGETS: &[Target] = &[
    Target::new("sse", sse_framing),
    Target::new("events", event_json),
    Target::new("wire", kserve_wire),
    Target::new("grpc_frames", grpc_framing),
    Target::new("prometheus", prometheus_text),
    Target::new("level_json", level_json),
    Target::new("genai_perf_json", genai_perf_json),
    Target::new("histograms", histograms_json),
    Target::new("perf_csv", perf_csv),
    Target::new("input_data", input_data),
    Target::new("prompts", prompt_file),
    Target::new("trace", trace_file),
    Target::new("conversations", conversation_file),
    Target::new("scored_rows", scored_rows),
    Target::new("graders", graders),
    Target::new("agentic", agentic_file),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().copied().find(|t| t.name == name)
}

/// Events as `(name, data)` pairs, owned, for comparing two framings of one stream.
type Events = Vec<(Vec<u8>, Vec<u8>)>;

fn frame(chunks: &[&[u8]]) -> (Events, bool) {
    let mut p = sse::SseParser::new();
    let mut out = Events::new();
    let failed = chunks.iter().any(|c| {
        p.feed(c, |n, d| out.push((n.to_vec(), d.to_vec())))
            .is_err()
    });
    if !failed {
        p.finish(|n, d| out.push((n.to_vec(), d.to_vec())));
    }
    (out, failed)
}

/// `data` cut into pieces of 1 to `1 + seed % modulo` bytes at points a walk seeded by `seed`
/// picks: how a fuzz input says how its stream arrives in reads.
fn seeded_split(data: &[u8], seed: u8, modulo: u8) -> Vec<&[u8]> {
    let mut rng = StdRng::seed_from_u64(u64::from(seed));
    let mut chunks = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let n = rng.random_range(1..=rest.len().min(1 + usize::from(seed % modulo)));
        let (a, b) = rest.split_at(n);
        chunks.push(a);
        rest = b;
    }
    chunks
}

/// SSE framing: the events of a byte stream are the same however the stream is split into
/// reads. The first byte picks the split points (a pseudo-random walk seeded by it); the rest is
/// the stream.
pub fn sse_framing(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };
    let whole = frame(&[stream]);
    let chunks = seeded_split(stream, seed, 17);
    let split = frame(&chunks);
    assert_eq!(whole, split, "framing depends on how the stream was split");
    // One byte at a time is the most adversarial split of all.
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(whole, frame(&bytes), "byte-at-a-time framing differs");
    for (name, _) in &whole.0 {
        assert!(
            !name.contains(&b'\n') && !name.contains(&b'\r'),
            "an event name spans lines"
        );
    }
    // The shortcut for the usual event reads the same events and the same text as the framing.
    for chunks in [vec![stream], chunks] {
        assert_eq!(
            read_events(&chunks, false),
            read_events(&chunks, true),
            "the event shortcut differs from the framing"
        );
    }
}

/// The events of a stream read in `chunks`, with their JSON read by one [`events::EventReader`]
/// (each event's text, or `None` when it is not an event it reads), and every event's data;
/// `shortcut`: through [`events::EventReader::read_run`] where it applies.
fn read_events(chunks: &[&[u8]], shortcut: bool) -> (Events, Vec<Option<String>>, bool) {
    struct Sink {
        reader: events::EventReader,
        shortcut: bool,
        events: Events,
        texts: Vec<Option<String>>,
    }
    impl sse::EventSink for Sink {
        fn lines(&mut self, at: &[u8]) -> usize {
            if !self.shortcut {
                return 0;
            }
            let (events, texts) = (&mut self.events, &mut self.texts);
            let mut all = String::new();
            let run = self
                .reader
                .read_run(at, &mut all, usize::MAX, |data, text| {
                    events.push((Vec::new(), data.to_vec()));
                    texts.push(Some(String::from_utf8_lossy(text).into_owned()));
                });
            let each: String = texts[texts.len() - run.events as usize..]
                .iter()
                .flatten()
                .map(String::as_str)
                .collect();
            assert_eq!(all, each, "a run's text is its events' texts");
            run.bytes
        }
        fn event(&mut self, name: &[u8], data: &[u8]) {
            let mut text = String::new();
            let ok = self.reader.read(data, &mut text).is_ok();
            self.events.push((name.to_vec(), data.to_vec()));
            self.texts.push(ok.then_some(text));
        }
    }
    let mut sink = Sink {
        reader: events::EventReader::new(),
        shortcut,
        events: Events::new(),
        texts: Vec::new(),
    };
    let mut p = sse::SseParser::new();
    let failed = chunks.iter().any(|c| p.feed_to(c, &mut sink).is_err());
    (sink.events, sink.texts, failed)
}

/// Event JSON: when the fast scanner accepts an event, the full JSON reader accepts it too and
/// extracts the same text; a failed parse leaves the output buffer as it was; whatever is
/// accepted is valid JSON.
pub fn event_json(data: &[u8]) {
    let mut fast = String::from("prefix");
    let scanned = events::scan_fast(data, &mut fast);
    let mut full = String::from("prefix");
    let parsed = events::parse_event_full(data, &mut full);
    // What the scanner accepts, the reader accepts too, with the same text.
    if let Some(n) = scanned {
        let info = parsed
            .as_ref()
            .expect("the fast scanner accepted an event the JSON reader rejects");
        assert_eq!(
            fast, full,
            "fast scanner and JSON reader disagree on the text"
        );
        assert_eq!(n.content_bytes, info.content_bytes);
        assert_eq!(
            n.reasoning_bytes, info.reasoning_bytes,
            "fast scanner and JSON reader disagree on the reasoning bytes"
        );
        assert!(info.error.is_none());
        assert_eq!(
            (n.prompt_tokens, n.completion_tokens, n.reasoning_tokens),
            (
                info.prompt_tokens,
                info.completion_tokens,
                info.reasoning_tokens
            ),
            "fast scanner and JSON reader disagree on the usage"
        );
        assert!(
            info.timings.is_none(),
            "the fast scanner read llama.cpp's timings"
        );
    }
    if parsed.is_err() {
        assert_eq!(full, "prefix", "a rejected event left text behind");
    } else {
        assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok(),
            "the JSON reader accepted an event that is not JSON"
        );
    }
    let mut both = String::new();
    let _ = events::parse_event(data, &mut both);
    // The server's other JSON answers: vLLM's /tokenize.
    let _ = crate::client::tokenize::read_count(data);
}

/// What deframing a gRPC response body in `chunks` gives: the messages, then how it ended (the
/// error's kind, or the bytes of an unfinished message left over).
fn deframe_all(chunks: &[&[u8]]) -> (Vec<Vec<u8>>, Result<usize, crate::record::ErrorKind>) {
    let mut partial = Vec::new();
    let mut msgs = Vec::new();
    for c in chunks {
        let r = grpc_conn::deframe(c, &mut partial, 1 << 12, |m| {
            msgs.push(m.to_vec());
            // A message starting with 0xff plays the final response: reading stops there.
            Ok(if m.first() == Some(&0xff) {
                grpc_conn::Flow::Final
            } else {
                grpc_conn::Flow::More
            })
        });
        match r {
            Err(e) => return (msgs, Err(e.kind)),
            Ok(grpc_conn::Flow::Final) => return (msgs, Ok(0)),
            Ok(grpc_conn::Flow::More) => {}
        }
    }
    (msgs, Ok(partial.len()))
}

/// gRPC message framing: a response body yields the same messages, the same end and the same
/// leftover however it is split into chunks (HTTP/2 DATA frames). The first byte seeds the split
/// points; the rest is the body.
pub fn grpc_framing(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let whole = deframe_all(&[body]);
    let chunks = seeded_split(body, seed, 23);
    assert_eq!(whole, deframe_all(&chunks), "messages depend on the split");
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(
        whole,
        deframe_all(&bytes),
        "byte-at-a-time deframing differs"
    );
    for m in &whole.0 {
        assert!(m.len() <= 1 << 12, "a message past the limit was delivered");
    }
}

/// KServe v2 protobuf: the in-place reader never panics, and whenever `prost` also decodes the
/// message, both see the same outputs and the same error flag.
pub fn kserve_wire(data: &[u8]) {
    use prost::Message;
    let mut text = String::new();
    let mut error = String::new();
    let stream = wire::read_stream_response(data, Some(&mut text), &mut error);
    if let (Ok(info), Ok(msg)) = (
        &stream,
        crate::proto::ModelStreamInferResponse::decode(data),
    ) {
        let outputs = msg.infer_response.as_ref().map_or(0, |r| r.outputs.len());
        assert_eq!(
            info.outputs as usize, outputs,
            "output count differs from prost"
        );
        assert_eq!(info.has_error, !msg.error_message.is_empty());
    }
    let mut text = String::new();
    let infer = wire::read_infer_response(data, Some(&mut text));
    if let (Ok(info), Ok(msg)) = (&infer, crate::proto::ModelInferResponse::decode(data)) {
        assert_eq!(info.outputs as usize, msg.outputs.len());
    }
    let _ = wire::read_infer_response(data, None);
}

/// Prometheus text exposition: Triton's counters (`parse_prometheus`), the general parser, engine
/// detection, every engine's sample and the GPU families read from the same page.
pub fn prometheus_text(data: &[u8]) {
    use crate::server_metrics::{ServerKind, engines, gpu, prometheus};
    let text = String::from_utf8_lossy(data);
    for model in ["m", "", "llama"] {
        let _ = crate::server_metrics::parse_prometheus(&text, model);
    }
    let page = prometheus::parse(&text);
    let _ = engines::detect(&page);
    for &kind in ServerKind::ALL {
        let _ = engines::read_sample(&page, kind, Some("m"));
        let _ = engines::read_sample(&page, kind, None);
    }
    let _ = gpu::read_gpus(&page);
    // The probe's other page: llama.cpp's /slots.
    let _ = crate::server_metrics::probe::slot_count(&text);
}

/// A level's `profile_export_genai_perf.json` as compare/report read it.
pub fn level_json(data: &[u8]) {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(level) = crate::artifact::read::level_from_json(&doc, Path::new("fuzz")) {
        // What compare and report do next with a level.
        let run = crate::artifact::read::run_from(Path::new("fuzz"), vec![level]);
        let _ = run.summaries();
        let _ = run.started_unix_ns();
    }
}

/// A level directory's JSON that GenAI-Perf itself wrote, as compare/report read a baseline.
pub fn genai_perf_json(data: &[u8]) {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = crate::artifact::genai_perf_dir::is_genai_perf(&doc);
    if let Ok(level) =
        crate::artifact::genai_perf_dir::level_from_genai_perf(&doc, Path::new("fuzz"))
    {
        let run = crate::artifact::read::run_from(Path::new("fuzz"), vec![level]);
        let _ = run.summaries();
    }
}

/// `histograms.json` (what merge reads): the JSON document, or — when the input is not JSON —
/// the bytes as one metric's serialized HDR histogram.
pub fn histograms_json(data: &[u8]) {
    use base64::Engine;
    let doc = serde_json::from_slice::<Value>(data).unwrap_or_else(|_| {
        serde_json::json!({"metrics": {"time_to_first_token": {
            "hdr": base64::engine::general_purpose::STANDARD.encode(data),
            "count": 3, "sum": 3e6, "sum_sq": 3e12, "min": 1e6, "max": 1e6}}})
    });
    let mut agg = crate::stats::Aggregate::new();
    if crate::artifact::histograms::decode(&doc, &mut agg).is_ok() {
        for (_, d) in agg.dists() {
            let _ = d.stats(1.0);
        }
        let _ = agg.summarize(true, crate::metrics::PercentileMethod::Linear);
    }
}

/// A perf_analyzer CSV (`-f`), as compare/report read it.
pub fn perf_csv(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(levels) = crate::artifact::read::perf_csv_levels(&text, Path::new("fuzz.csv")) {
        let run = crate::artifact::read::run_from(Path::new("fuzz.csv"), levels);
        let _ = run.summaries();
    }
}

fn spec(name: &str, datatype: DataType, dims: &[i64], optional: bool) -> TensorSpec {
    TensorSpec {
        name: name.into(),
        datatype,
        dims: dims.to_vec(),
        optional,
    }
}

/// Two models (batching and not) with inputs of every shape rule: fixed, one variable dim, two
/// variable dims, BYTES, optional.
fn fuzz_models() -> &'static [(crate::perf::plan::PerfPlan, ModelInfo); 2] {
    static MODELS: OnceLock<[(crate::perf::plan::PerfPlan, ModelInfo); 2]> = OnceLock::new();
    MODELS.get_or_init(|| {
        let inputs = vec![
            spec("F32", DataType::F32, &[-1], false),
            spec("BYTES", DataType::Bytes, &[2], false),
            spec("I64", DataType::I64, &[-1, 3], true),
            spec("F16", DataType::F16, &[2, 2], true),
            spec("BOOL", DataType::Bool, &[-1, -1], true),
        ];
        let model = |max_batch_size| ModelInfo {
            name: "m".into(),
            platform: String::new(),
            backend: String::new(),
            max_batch_size,
            decoupled: false,
            inputs: inputs.clone(),
            outputs: vec![spec("OUT", DataType::F32, &[1], false)],
        };
        let plan = |batch: &str| {
            let mut plan = crate::cli::perf::plan_of(&["-m", "m", "-b", batch])
                .expect("fixed perf plan builds");
            plan.data = crate::perf::plan::DataSource::Files(vec![PathBuf::from("fuzz.json")]);
            plan
        };
        [(plan("1"), model(0)), (plan("2"), model(4))]
    })
}

/// `--input-data` JSON: parsing the file and turning its entries into tensors for a model; every
/// tensor built holds exactly the bytes its datatype and shape call for.
pub fn input_data(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(entries) = crate::perf::inputs::parse_data_text(text, Path::new("fuzz.json")) else {
        return;
    };
    let entries: Vec<HashMap<String, Value>> = entries.into_iter().take(8).collect();
    for (plan, info) in fuzz_models() {
        let Ok(requests) = crate::perf::inputs::tensors_from_entries(plan, info, &entries) else {
            continue;
        };
        for t in requests.iter().flatten() {
            if let Some(size) = t.datatype.size() {
                let n: u128 = t.shape.iter().map(|d| (*d).max(0) as u128).product();
                assert_eq!(
                    t.raw.len() as u128,
                    n * size as u128,
                    "tensor {} of shape {:?} holds the wrong number of bytes",
                    t.name,
                    t.shape
                );
            }
        }
    }
}

/// `--input-file` prompts (JSONL): parsing and token counting of arbitrary text.
pub fn prompt_file(data: &[u8]) {
    static TOKENIZER: OnceLock<Tokenizer> = OnceLock::new();
    let tk = TOKENIZER.get_or_init(Tokenizer::builtin_gpt2);
    if let Ok(prompts) = crate::workload::prompts::from_jsonl_reader(data, Path::new("fuzz"), tk) {
        assert!(!prompts.is_empty(), "an empty prompt list was accepted");
    }
}

/// `--input-file` conversations (ShareGPT or OpenAI JSONL, or one JSON array): an accepted
/// file has conversations, each with a user turn; the chat messages of a session built from one
/// alternate user and assistant after its system messages and serialize to JSON that reads
/// back the same.
pub fn conversation_file(data: &[u8]) {
    use crate::workload::conversation::{Script, UserTurn, file, history::History};
    let read = if data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        file::read_array(data, Path::new("fuzz"))
    } else {
        file::read_from(data, Path::new("fuzz"))
    };
    let Ok(conversations) = read else {
        return;
    };
    assert!(!conversations.is_empty(), "an empty file was accepted");
    for c in conversations.iter().take(4) {
        assert!(
            !c.users.is_empty(),
            "a conversation without a user turn was accepted"
        );
        let script = Script {
            system: c.system.iter().map(|s| (s.clone(), 1)).collect(),
            turns: Vec::new(),
            delays_ms: Vec::new(),
            agent: None,
        };
        let mut h = History::default();
        h.begin(&script);
        for u in &c.users {
            h.ask(&UserTurn {
                text: u.clone(),
                tokens: 1,
                max_tokens: None,
                recorded: None,
                tool: None,
            });
            h.answer("ok", 1, None);
        }
        let text = serde_json::to_string(h.messages()).expect("messages serialize");
        let back: Vec<serde_json::Value> = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back.len(), h.messages().len());
        let roles: Vec<&str> = back.iter().filter_map(|m| m["role"].as_str()).collect();
        let after = &roles[c.system.len()..];
        assert!(
            after.chunks(2).all(|p| p == ["user", "assistant"]),
            "{roles:?}"
        );
    }
}

/// `--input-file` traces (Mooncake JSONL, 8-token blocks, fixed schedule): an accepted trace has
/// rows, timestamps that never decrease, one id per block; a small one is synthesized into
/// prompts of exactly its lengths whose shared leading ids are shared leading tokens.
pub fn trace_file(data: &[u8]) {
    static TOKENIZER: OnceLock<Tokenizer> = OnceLock::new();
    let tk = TOKENIZER.get_or_init(Tokenizer::builtin_gpt2);
    let opts = crate::workload::trace::ReadOptions {
        block_size: 8,
        fixed_schedule: true,
        start_ms: None,
        end_ms: None,
    };
    let Ok(trace) = crate::workload::trace::read_from(data, Path::new("fuzz"), &opts) else {
        return;
    };
    assert!(!trace.requests.is_empty(), "an empty trace was accepted");
    let times = trace.schedule_ns(None).expect("every row has a timestamp");
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "times go backwards");
    for r in &trace.requests {
        assert_eq!(r.hash_ids.len(), r.input_length.div_ceil(8) as usize);
    }
    let total: u64 = trace
        .requests
        .iter()
        .map(|r| u64::from(r.input_length))
        .sum();
    if total > 4_096 {
        return;
    }
    let salt = crate::workload::Salt::NONE;
    let prompts = crate::workload::blocks::trace_prompts(tk, &trace, 8, 0, salt)
        .expect("the built-in tokenizer has units");
    let first = tk.encode(&prompts[0].text);
    for (r, p) in trace.requests.iter().zip(&prompts) {
        let toks = tk.encode(&p.text);
        assert_eq!(toks.len(), r.input_length as usize, "inexact prompt");
        let k = r
            .hash_ids
            .iter()
            .zip(&trace.requests[0].hash_ids)
            .take_while(|(a, b)| a == b)
            .count();
        let n = (k * 8).min(toks.len()).min(first.len());
        assert_eq!(toks[..n], first[..n], "shared blocks differ");
    }
}

/// A stable (no nightly, no instrumentation) mutation fuzzer: starting from `seeds`, applies
/// random byte-level mutations (flips, inserts, deletes, splices, interesting values, duplicated
/// runs) and runs `target` on each input. Returns how many inputs ran before `deadline` or
/// `max_inputs`. A property failure panics, naming nothing; callers save the input first via
/// `on_input` if they want it kept.
pub fn mutate_run(
    target: Target,
    seeds: &[Vec<u8>],
    rng_seed: u64,
    max_inputs: u64,
    deadline: Option<std::time::Instant>,
    mut on_input: impl FnMut(&[u8]),
) -> u64 {
    let mut rng = StdRng::seed_from_u64(rng_seed);
    let empty = [Vec::new()];
    let seeds = if seeds.is_empty() { &empty[..] } else { seeds };
    let mut buf = Vec::new();
    let mut n = 0;
    while n < max_inputs {
        if n % 256 == 0 && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        buf.clear();
        buf.extend_from_slice(&seeds[rng.random_range(0..seeds.len())]);
        let rounds = 1 + rng.random_range(0..6);
        for _ in 0..rounds {
            mutate(&mut buf, seeds, &mut rng);
        }
        on_input(&buf);
        (target.run)(&buf);
        n += 1;
    }
    n
}

/// Bytes that tend to matter to these parsers: structure characters, line ends, protobuf keys.
const INTERESTING: &[u8] =
    b"{}[]\":,\\\n\r\t :-0123456789eE.+ndtfa\x00\x08\x0a\x12\x1a\x22\x2a\x42\x80\xff";

fn mutate(buf: &mut Vec<u8>, seeds: &[Vec<u8>], rng: &mut StdRng) {
    let len = buf.len();
    match rng.random_range(0..8) {
        0 if len > 0 => {
            let i = rng.random_range(0..len);
            buf[i] ^= 1 << rng.random_range(0..8);
        }
        1 => {
            let i = rng.random_range(0..=len);
            buf.insert(i, INTERESTING[rng.random_range(0..INTERESTING.len())]);
        }
        2 if len > 0 => {
            let i = rng.random_range(0..len);
            let j = (i + 1 + rng.random_range(0..8)).min(len);
            buf.drain(i..j);
        }
        3 if len > 0 => {
            let i = rng.random_range(0..len);
            buf[i] = INTERESTING[rng.random_range(0..INTERESTING.len())];
        }
        4 => {
            // Splice a piece of another seed in.
            let other = &seeds[rng.random_range(0..seeds.len())];
            if !other.is_empty() {
                let a = rng.random_range(0..other.len());
                let b = (a + 1 + rng.random_range(0..32)).min(other.len());
                let at = rng.random_range(0..=len);
                buf.splice(at..at, other[a..b].iter().copied());
            }
        }
        5 if len > 0 => {
            // Duplicate a run (repeated fields, nested brackets, long lines).
            let a = rng.random_range(0..len);
            let b = (a + 1 + rng.random_range(0..16)).min(len);
            let piece = buf[a..b].to_vec();
            for _ in 0..rng.random_range(1..4) {
                buf.splice(a..a, piece.iter().copied());
            }
        }
        6 if len > 0 => {
            buf.truncate(rng.random_range(0..len));
        }
        _ => {
            let i = rng.random_range(0..=len);
            let v: u8 = rng.random();
            buf.insert(i, v);
        }
    }
    buf.truncate(64 << 10);
}

/// Scored workloads' JSONL rows (`workload::scored::rows`), read as the benchmark the first byte
/// picks: an accepted row's question ends in the answer cue, a choice's index is among its
/// options, and the benchmark's own grader accepts the answer and grades the simulator's right
/// answer (` {expected}` and a line break) right.
pub fn scored_rows(data: &[u8]) {
    use crate::workload::scored::{Benchmark, Expected, rows};
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let all = <Benchmark as strum::VariantArray>::VARIANTS;
    let b = all[usize::from(pick) % all.len()];
    let Ok(lines) = rows::read_jsonl_from(text, Path::new("fuzz")) else {
        return;
    };
    for (row, at) in lines.iter().take(16) {
        let Ok(item) = rows::item(b, row, at) else {
            continue;
        };
        assert!(item.block.ends_with("Answer:"), "{:?}", item.block);
        if let Expected::Choice { index, of } = item.expected {
            assert!(index < of && (2..=26).contains(&of), "{:?}", item.expected);
        }
        let g = b.default_grader();
        assert!(
            g.accepts(&item.expected),
            "{b:?} cannot grade {:?}",
            item.expected
        );
        let right = format!(" {}\n the of and", item.expected.text());
        assert!(
            g.grade(&right, &item.expected).correct,
            "{right:?} graded wrong against {:?}",
            item.expected
        );
    }
}

/// The graders on arbitrary answers: a chosen letter is among the options, a grade is never
/// both right and unparsed for exact and numeric answers.
pub fn graders(data: &[u8]) {
    use crate::workload::scored::Expected;
    use crate::workload::scored::grade::{self, Grader};
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let of = 2 + pick % 25;
    if let Some((i, _)) = grade::chosen_letter(&text, of) {
        assert!(i < of, "letter {i} of {of}");
    }
    let _ = grade::final_number(&text);
    let _ = grade::parse_number(&text);
    let expected = [
        Expected::Choice {
            index: pick % of,
            of,
        },
        Expected::Number("42".into()),
        Expected::Text("yes".into()),
    ];
    for e in &expected {
        for &g in <Grader as strum::VariantArray>::VARIANTS {
            let r = g.grade(&text, e);
            assert!(
                !(r.correct && r.unparsed && g != Grader::MultipleChoice),
                "{g:?} {r:?}"
            );
        }
    }
}

/// Agentic session files (`workload::conversation::dag`): an accepted file has roots, every
/// branch names a session of the file, a join is a later turn of its session, every turn
/// sends something, and each task's request count is finite (no cycle got through).
pub fn agentic_file(data: &[u8]) {
    use crate::workload::conversation::dag::{self, BranchMode};
    let Ok(d) = dag::read_from(data) else {
        return;
    };
    assert!(!d.roots.is_empty(), "no root");
    let n = d.sessions.len();
    for s in &d.sessions {
        assert!(!s.turns.is_empty(), "{} has no turn", s.id);
        for (t, turn) in s.turns.iter().enumerate() {
            assert!(!turn.said.is_empty(), "{} turn {t} sends nothing", s.id);
            for b in &turn.branches {
                assert!(b.children.iter().all(|&c| c < n), "{b:?}");
                if let Some(k) = b.join_at {
                    assert!(b.mode == BranchMode::Spawn && k > t && k < s.turns.len());
                }
            }
        }
    }
    for &r in &d.roots {
        assert!(d.task_turns(r) >= d.sessions[r].turns.len() as u64);
    }
}
