//! Traffic that looks like production, checked on the wire: trace replay on its own schedule
//! with prompts whose shared blocks are shared token for token, prefix prompt pools, and the
//! prompt salt that keeps one run from meeting another's prefix cache. What the client sent is
//! read back from a relay that records every byte (`Tee`), tokenized, and compared.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use common::{Tee, chat_args, json_file, measured, profile, run_in, start_round};
use serde_json::Value;
use ttftbench::workload::tokenizer::Tokenizer;

/// Tokens per hash id in these traces (small, so that prompts have several blocks).
const BLOCK: u32 = 32;

/// One trace row.
struct Row {
    ts: f64,
    len: u32,
    ids: Vec<u64>,
}

/// 60 rows from t = 1000 ms: bursts of three at one instant, then gaps of 10–80 ms. Rows of
/// group `i mod 4` have `2 + group` blocks, the first few shared within the group (a different
/// number per row), the rest their own; lengths cut the last block short.
fn trace_rows() -> Vec<Row> {
    let mut ts = 1000.0;
    (0..60usize)
        .map(|i| {
            if i % 3 == 0 && i > 0 {
                ts += 10.0 + ((i * 37) % 71) as f64;
            }
            let group = (i % 4) as u64;
            let blocks = 2 + group as u32;
            let shared = ((i / 4) % (blocks as usize + 1)) as u32;
            let ids = (0..blocks)
                .map(|b| {
                    if b < shared {
                        group * 100 + u64::from(b)
                    } else {
                        1_000_000 + i as u64 * 10 + u64::from(b)
                    }
                })
                .collect();
            Row {
                ts,
                len: BLOCK * blocks - (i as u32 % 7),
                ids,
            }
        })
        .collect()
}

fn write_trace(path: &Path, rows: &[Row]) {
    let text: String = rows
        .iter()
        .map(|r| {
            format!(
                "{}\n",
                serde_json::json!({"timestamp": r.ts, "input_length": r.len, "output_length": 2, "hash_ids": r.ids})
            )
        })
        .collect();
    std::fs::write(path, text).unwrap();
}

/// The prompt of every chat request the relay saw, by the request id it carried.
fn sent_prompts(tee: &Tee) -> HashMap<String, String> {
    tee.posts()
        .into_iter()
        .filter_map(|(head, body)| {
            let id = head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("x-request-id")
                    .then(|| v.trim().to_string())
            })?;
            let body: Value = serde_json::from_slice(&body).ok()?;
            let text = body.pointer("/messages/0/content")?.as_str()?.to_string();
            Some((id, text))
        })
        .collect()
}

fn p99(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * 0.99).round() as usize]
}

/// Replays `trace` through `tee` into `dir`; returns the measured records and the send errors
/// (actual minus intended send, ms), after checking the intended times are the trace's.
async fn replay(tee: &Tee, trace: &Path, rows: &[Row], dir: &Path) -> (Vec<Value>, Vec<f64>) {
    let out = profile(&chat_args(
        &tee.addr,
        dir,
        &[
            "--input-file",
            trace.to_str().unwrap(),
            "--block-size",
            "32",
            "--fixed-schedule",
        ],
    ))
    .await
    .unwrap();
    let dir = &out.levels[0].dir;
    let records = measured(dir);
    assert!(records.iter().all(|r| r["level"] == "fixed_schedule"));
    assert_eq!(records.len(), rows.len(), "every row once");
    let doc = json_file(&dir.join("profile_export_genai_perf.json"));
    assert!(
        doc["send_lag"].is_object() && doc["time_to_first_token_from_intended"].is_object(),
        "open-loop metrics"
    );
    assert!(doc["input_config"]["levels"][0]["fixed_schedule"].is_object());
    let by_index: HashMap<u64, &Value> = records
        .iter()
        .map(|r| (r["prompt_index"].as_u64().unwrap(), r))
        .collect();
    let t0 = by_index[&0]["intended_ns"].as_u64().unwrap();
    let mut errors_ms = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let r = by_index[&(i as u64)];
        let intended = r["intended_ns"].as_u64().unwrap() - t0;
        let want = ((row.ts - rows[0].ts) * 1e6).round() as u64;
        assert!(
            intended.abs_diff(want) <= 1_000,
            "row {i}: {intended} ns, want {want}"
        );
        let sent = r["sent_ns"].as_u64().unwrap();
        errors_ms.push((sent - r["intended_ns"].as_u64().unwrap()) as f64 / 1e6);
        assert_eq!(r["isl"], row.len, "row {i}: ISL recorded");
        assert_eq!(r["requested_osl"], 2);
    }
    (records, errors_ms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_replay_keeps_its_schedule_and_shares_its_blocks() {
    let sim = start_round().await;
    let tee = Tee::start(sim.http_addr);
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace.jsonl");
    let rows = trace_rows();
    write_trace(&trace, &rows);
    // Arrivals: intended times are the trace's, relative to its first row; sends follow them.
    // A machine busy with other builds can starve the whole process for tens of ms: two more
    // replays are allowed before the bound counts.
    let mut p99_ms = f64::INFINITY;
    let mut records = Vec::new();
    for attempt in 1..=3 {
        let (r, errors) = replay(
            &tee,
            &trace,
            &rows,
            &tmp.path().join(format!("replay{attempt}")),
        )
        .await;
        let max = errors.iter().cloned().fold(0.0, f64::max);
        p99_ms = p99(errors);
        eprintln!(
            "fixed schedule, attempt {attempt}: send error p99 {p99_ms:.3} ms, max {max:.3} ms over {} requests",
            rows.len()
        );
        records = r;
        if p99_ms <= 10.0 {
            break;
        }
    }
    assert!(p99_ms <= 10.0, "send error p99 {p99_ms} ms");

    // What was sent: exact lengths under the tokenizer, and shared ids shared token for token.
    let sent = sent_prompts(&tee);
    let tk = Tokenizer::builtin_gpt2();
    let mut tokens: Vec<Vec<u32>> = vec![Vec::new(); rows.len()];
    for r in &records {
        let text = &sent[r["request_id"].as_str().unwrap()];
        tokens[r["prompt_index"].as_u64().unwrap() as usize] = tk.encode(text);
    }
    let exact = rows
        .iter()
        .zip(&tokens)
        .filter(|(r, t)| t.len() == r.len as usize)
        .count();
    eprintln!(
        "fixed schedule: ISL exact for {exact} of {} prompts",
        rows.len()
    );
    assert_eq!(exact, rows.len());
    let b = BLOCK as usize;
    let mut pairs_by_k = [0usize; 6];
    for i in 0..rows.len() {
        for j in i + 1..rows.len() {
            let k = rows[i]
                .ids
                .iter()
                .zip(&rows[j].ids)
                .take_while(|(a, b)| a == b)
                .count();
            pairs_by_k[k] += 1;
            let (ti, tj) = (&tokens[i], &tokens[j]);
            let common = (k * b).min(ti.len()).min(tj.len());
            assert_eq!(
                ti[..common],
                tj[..common],
                "rows {i} and {j} share {k} blocks"
            );
            if ti.len() > k * b && tj.len() > k * b {
                let end = ((k + 1) * b).min(ti.len()).min(tj.len());
                assert_ne!(
                    ti[k * b..end],
                    tj[k * b..end],
                    "rows {i} and {j} part after {k} blocks"
                );
            }
        }
    }
    assert!(
        pairs_by_k[1..].iter().all(|&n| n > 0),
        "pairs sharing 1..5 blocks: {pairs_by_k:?}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_salted_apart_unless_told_otherwise() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, salt: &[&'static str]| {
        let tee = Tee::start(sim.http_addr);
        let mut extra = vec![
            "--synthetic-input-tokens-mean",
            "48",
            "--num-prefix-prompts",
            "2",
            "--prefix-prompt-length",
            "16",
            "--num-prompts",
            "8",
            "--request-count",
            "8",
            "--concurrency",
            "4",
            "--output-tokens-mean",
            "2",
        ];
        extra.extend_from_slice(salt);
        let a = chat_args(&tee.addr, &tmp.path().join(name), &extra);
        async move {
            let out = profile(&a).await.unwrap();
            let dir = out.levels[0].dir.clone();
            let prompts: BTreeSet<String> = sent_prompts(&tee).into_values().collect();
            (
                prompts,
                json_file(&dir.join("profile_export_genai_perf.json")),
            )
        }
    };
    let (a, doc_a) = run("a", &[]).await;
    let (b, doc_b) = run("b", &[]).await;
    assert_eq!((a.len(), b.len()), (8, 8));
    assert!(
        a.is_disjoint(&b),
        "the same command twice sends no prompt twice"
    );
    assert_eq!(doc_a["input_config"]["workload"]["prompt_salt"], "auto");
    assert_eq!(
        doc_a["workload_fingerprint"], doc_b["workload_fingerprint"],
        "fresh salts are the same workload to compare"
    );
    // Within a run the prefixes are still shared: two prefixes among eight prompts.
    let tk = Tokenizer::builtin_gpt2();
    let heads: BTreeSet<Vec<u32>> = a.iter().map(|p| tk.encode(p)[..16].to_vec()).collect();
    assert_eq!(heads.len(), 2);

    let (c, doc_c) = run("c", &["--prompt-salt", "none"]).await;
    let (d, _) = run("d", &["--prompt-salt", "none"]).await;
    assert_eq!(c, d, "no salt: byte-identical prompts run to run");
    assert_eq!(doc_c["input_config"]["workload"]["prompt_salt"], "none");
    assert_eq!(
        doc_c["workload_fingerprint"]["prompt_salt"],
        "none (same text every run)"
    );
    let (e, _) = run("e", &["--prompt-salt", "shared-cache"]).await;
    let (f, doc_f) = run("f", &["--prompt-salt", "shared-cache"]).await;
    assert_eq!(e, f, "one fixed salt: the same prompts");
    assert!(e.is_disjoint(&c));
    assert_eq!(
        doc_f["input_config"]["workload"]["prompt_salt"]["text"],
        "shared-cache"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_pools_start_every_prompt() {
    let sim = start_round().await;
    let tee = Tee::start(sim.http_addr);
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&chat_args(
        &tee.addr,
        &tmp.path().join("pool"),
        &[
            "--num-prefix-prompts",
            "3",
            "--prefix-prompt-length",
            "40",
            "--synthetic-input-tokens-mean",
            "60",
            "--synthetic-input-tokens-stddev",
            "10",
            "--num-prompts",
            "12",
            "--request-count",
            "12",
            "--concurrency",
            "3",
            "--output-tokens-mean",
            "2",
        ],
    ))
    .await
    .unwrap();
    let records = measured(&out.levels[0].dir);
    let sent = sent_prompts(&tee);
    let tk = Tokenizer::builtin_gpt2();
    let mut heads: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut tails = BTreeSet::new();
    for r in &records {
        let toks = tk.encode(&sent[r["request_id"].as_str().unwrap()]);
        assert_eq!(toks.len() as u64, r["isl"].as_u64().unwrap(), "ISL exact");
        assert!(toks.len() > 40, "prefix plus the prompt's own words");
        *heads.entry(toks[..40].to_vec()).or_default() += 1;
        tails.insert(toks[40..].to_vec());
    }
    assert_eq!(heads.len(), 3, "three distinct prefixes of 40 tokens");
    assert!(heads.values().all(|&n| n == 4), "round robin: {heads:?}");
    assert_eq!(tails.len(), 12, "each prompt's own words");
    let fp = &json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"))["workload_fingerprint"];
    assert_eq!(
        fp["prompts"],
        "synthetic, 60±10 tokens after 1 of 3 prefixes of 40 tokens"
    );
    sim.shutdown().await;
}

/// Bad traces end in exit code 2 naming the line and field, before anything is sent.
#[test]
fn bad_traces_are_refused_before_anything_is_sent() {
    // A listener that accepts (through its backlog) and never answers: anything sent would reach
    // the relay's record.
    let sink = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tee = Tee::start(sink.local_addr().unwrap());
    let tmp = tempfile::tempdir().unwrap();
    let ok = r#"{"timestamp": 5, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}"#;
    let cases = [
        (
            format!("{ok}\n{{\"timestamp\": 9, \"input_length\"\n"),
            "line 2: invalid JSON",
        ),
        (
            format!("{ok}\n{{\"timestamp\": 9, \"input_length\": 10, \"hash_ids\": [1]}}\n"),
            "line 2: missing field \"output_length\"",
        ),
        (
            format!(
                "{ok}\n{ok}\n{{\"timestamp\": 4, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}}\n"
            ),
            "line 3: field \"timestamp\" goes backwards",
        ),
        (
            format!(
                "{ok}\n{{\"timestamp\": 9, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [1, 2]}}\n"
            ),
            "line 2: field \"hash_ids\" has 2 ids but input_length 1100 needs 3",
        ),
        (
            "{\"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n".to_string(),
            "line 1: missing field \"timestamp\"",
        ),
        (String::new(), "the file is empty"),
        (
            "{\"text\": \"hello\"}\n".to_string(),
            "--fixed-schedule sends a trace",
        ),
    ];
    for (i, (content, says)) in cases.iter().enumerate() {
        let path = tmp.path().join(format!("bad{i}.jsonl"));
        std::fs::write(&path, content).unwrap();
        let (code, _, stderr) = run_in(
            &[
                "profile",
                "-m",
                "gpt2",
                "--endpoint-type",
                "chat",
                "-u",
                &tee.addr,
                "--input-file",
                path.to_str().unwrap(),
                "--fixed-schedule",
            ],
            tmp.path(),
        );
        assert_eq!(code, 2, "{says}: {stderr}");
        assert!(stderr.contains(says), "{stderr} lacks {says:?}");
        if i < 5 {
            assert!(
                stderr.contains(&format!("bad{i}.jsonl")),
                "names the file: {stderr}"
            );
        }
    }
    assert_eq!(tee.all_sent(), "", "nothing reached the server");
}
