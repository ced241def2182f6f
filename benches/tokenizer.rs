//! Token counting and prompt generation speed: the built-in fast byte-level BPE against the
//! Hugging Face `tokenizers` pipeline on the same GPT-2 `tokenizer.json`, with allocation counts
//! (`count()` on the fast path should show none once warm).
//!
//! Run with `cargo bench --bench tokenizer`.

use std::io::Read;
use std::sync::OnceLock;

use divan::{Bencher, black_box};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use ttftbench::workload::prompts;
use ttftbench::workload::tokenizer::Tokenizer;

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    // The built-in loads once per process, so its load time is measured here rather than as a
    // benchmark.
    let started = std::time::Instant::now();
    let _ = Tokenizer::builtin_gpt2();
    eprintln!("built-in GPT-2 tokenizer loaded in {:?}", started.elapsed());
    divan::main();
}

/// The same embedded JSON, through HF: the pipeline the fast path replaces.
fn hf() -> &'static tokenizers::Tokenizer {
    static HF: OnceLock<tokenizers::Tokenizer> = OnceLock::new();
    HF.get_or_init(|| {
        let gz = include_bytes!("../assets/gpt2-tokenizer.json.gz");
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut json)
            .expect("gzip");
        tokenizers::Tokenizer::from_bytes(json).expect("tokenizer.json")
    })
}

/// Varied English prose (not from the synthetic generator's word lists), repeated and cut to
/// exactly `tokens` GPT-2 tokens: a stand-in for model output.
fn prose(tokens: usize) -> String {
    const PARAGRAPHS: &[&str] = &[
        "Time to first token is the delay a user sees before anything appears on the screen. \
         It covers queueing in the server, the prefill pass over the whole prompt, and the first \
         decode step; for long prompts prefill dominates, while under heavy load the queue does.",
        "When the concurrency doubles, a well-provisioned deployment keeps its median latency \
         roughly flat until the batch slots fill up. Past that knee, requests wait in line and \
         the 99th percentile climbs steeply, even though throughput barely improves.",
        "We measured 1,024 requests at 8 concurrent users; the p50 was 212 ms and the p99 was \
         1.9 s. Retrying with a larger batch size (32 instead of 16) reduced the tail by 40%, \
         but doubled GPU memory usage - not a trade-off everyone can afford!",
        "Inter-token latency, on the other hand, reflects how quickly the decoder emits each new \
         token once streaming has begun. Users perceive it as reading speed: below about 50 ms \
         per token the text appears faster than most people read.",
    ];
    let tk = Tokenizer::builtin_gpt2();
    let mut text = String::new();
    let mut i = 0;
    while tk.count(&text) < tokens {
        text.push_str(if text.is_empty() { "" } else { " " });
        text.push_str(PARAGRAPHS[i % PARAGRAPHS.len()]);
        i += 1;
    }
    let ids = tk.encode(&text);
    let mut cut = tk.decode(&ids[..tokens]);
    // Decoding a prefix can end mid-word differently; trim until exact.
    while tk.count(&cut) > tokens {
        cut.pop();
    }
    cut
}

fn prose_100() -> &'static str {
    static T: OnceLock<String> = OnceLock::new();
    T.get_or_init(|| prose(100))
}

fn prose_1000() -> &'static str {
    static T: OnceLock<String> = OnceLock::new();
    T.get_or_init(|| prose(1000))
}

fn text(tokens: usize) -> &'static str {
    if tokens == 100 {
        prose_100()
    } else {
        prose_1000()
    }
}

/// `count()` on the fast path, word cache warm (the steady state: most words repeat).
#[divan::bench(args = [100, 1000])]
fn count_fast(bencher: Bencher, tokens: usize) {
    let tk = Tokenizer::builtin_gpt2();
    let t = text(tokens);
    assert_eq!(tk.count(t), tokens);
    bencher.bench_local(|| tk.count(black_box(t)));
}

/// `count()` through the HF pipeline, as the crate did before (`encode_fast(text, false).len()`).
#[divan::bench(args = [100, 1000])]
fn count_hf(bencher: Bencher, tokens: usize) {
    let t = text(tokens);
    assert_eq!(
        hf().encode_fast(t, false).map(|e| e.len()).unwrap_or(0),
        tokens
    );
    bencher.bench_local(|| {
        hf().encode_fast(black_box(t), false)
            .map(|e| e.len())
            .unwrap_or(0)
    });
}

/// The cold worst case: every word is new to the cache (random letter strings), so each is
/// BPE-merged and inserted.
#[divan::bench(args = [100, 1000])]
fn count_fast_all_misses(bencher: Bencher, tokens: usize) {
    let tk = Tokenizer::builtin_gpt2();
    let mut rng = StdRng::seed_from_u64(1);
    bencher
        .with_inputs(|| {
            // ~2.5 tokens per random 7-letter word.
            (0..tokens * 2 / 5)
                .map(|_| {
                    let w: String = (0..7)
                        .map(|_| (b'a' + rng.random_range(0..26u8)) as char)
                        .collect();
                    format!(" {w}")
                })
                .collect::<String>()
        })
        .bench_local_refs(|t| tk.count(t));
}

/// `encode()` on the fast path (allocates the output vector).
#[divan::bench(args = [100, 1000])]
fn encode_fast(bencher: Bencher, tokens: usize) {
    let tk = Tokenizer::builtin_gpt2();
    let t = text(tokens);
    bencher.bench_local(|| tk.encode(black_box(t)));
}

/// Several threads counting at once: per-thread caches mean no shared lock or cache line.
#[divan::bench(threads = [1, 2, 4])]
fn count_fast_threads(bencher: Bencher) {
    let tk = Tokenizer::builtin_gpt2();
    let t = prose_100();
    bencher.bench(|| tk.count(black_box(t)));
}

/// 1000 synthetic prompts of 200 ± 0 tokens with the built-in tokenizer.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn synthetic_1000x200(bencher: Bencher) {
    let tk = Tokenizer::builtin_gpt2();
    bencher.bench_local(|| prompts::synthetic(&tk, 1000, 200, 0, black_box(42)));
}

/// 1000 synthetic prompts of 200 ± 40 tokens with the built-in tokenizer.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn synthetic_1000x200_sd40(bencher: Bencher) {
    let tk = Tokenizer::builtin_gpt2();
    bencher.bench_local(|| prompts::synthetic(&tk, 1000, 200, 40, black_box(42)));
}

/// Loading the built-in tokenizer (once per process in real use): gunzip + JSON + tables.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn load_hf_gpt2() -> tokenizers::Tokenizer {
    let gz = include_bytes!("../assets/gpt2-tokenizer.json.gz");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut json)
        .expect("gzip");
    tokenizers::Tokenizer::from_bytes(json).expect("tokenizer.json")
}
