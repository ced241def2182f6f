//! Multi-turn sessions on the wire: turn t of a session carries its t + 1 user messages with
//! the server's own answers between them, on one connection, with at most --concurrency
//! sessions in flight; conversation files (ShareGPT and OpenAI) replayed turn by turn; bad
//! input refused before anything is sent; the per-turn block of the level JSON agrees with
//! requests.jsonl. What was sent, and what the simulator streamed back, is read from a relay
//! that records both directions (`Tee`).

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use common::{Tee, args, json_file, measured, profile, run_in, start_round};
use serde_json::Value;

fn chat(url: &str, dir: &Path, extra: &[&str]) -> Vec<String> {
    common::chat_args(url, dir, &[&["--ui", "none"], extra].concat())
}

/// A message's (role, content).
fn messages(body: &[u8]) -> Vec<(String, String)> {
    let v: Value = serde_json::from_slice(body).expect("a JSON body");
    v["messages"]
        .as_array()
        .expect("a messages array")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Checks every connection's exchanges: each POST is a session's first turn (system messages
/// then one user message) or the next turn of the POST before it on the same connection (its
/// messages, the text the server streamed back for it as the assistant's, a new user message).
/// Returns the number of turns by their user-message count.
fn check_histories(tee: &Tee, system: usize) -> BTreeMap<usize, usize> {
    let mut by_turn = BTreeMap::new();
    for conn in tee.exchanges() {
        let mut prev: Option<(Vec<(String, String)>, String)> = None;
        for (body, answer) in conn {
            let m = messages(&body);
            let users = m.iter().filter(|(r, _)| r == "user").count();
            *by_turn.entry(users).or_insert(0) += 1;
            assert!(
                m[..system].iter().all(|(r, _)| r == "system"),
                "system first"
            );
            let turns = &m[system..];
            for (i, (role, _)) in turns.iter().enumerate() {
                let want = if i % 2 == 0 { "user" } else { "assistant" };
                assert_eq!(role, want, "user and assistant alternate: {m:?}");
            }
            assert_eq!(turns.len(), 2 * users - 1, "ends with the new user message");
            if users > 1 {
                let (p, p_answer) = prev
                    .as_ref()
                    .expect("a later turn follows its session's last turn on the same connection");
                assert_eq!(
                    &m[..m.len() - 2],
                    &p[..],
                    "the history is the last turn's messages"
                );
                assert_eq!(
                    m[m.len() - 2].1,
                    *p_answer,
                    "the assistant's text is what the server streamed back"
                );
                assert!(!p_answer.is_empty());
            }
            prev = Some((m, answer));
        }
    }
    by_turn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_t_carries_t_user_messages_with_the_answers_between_them() {
    let sim = start_round().await;
    let tee = Tee::start(sim.http_addr);
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&chat(
        &tee.addr,
        &tmp.path().join("s"),
        &[
            "--num-sessions",
            "6",
            "--session-turns-mean",
            "3",
            "--session-turns-stddev",
            "1",
            "--session-turn-delay-mean",
            "20",
            "--synthetic-input-tokens-mean",
            "24",
            "--output-tokens-mean",
            "6",
            "--concurrency",
            "2",
            "--random-seed",
            "5",
        ],
    ))
    .await
    .unwrap();
    let dir = &out.levels[0].dir;
    let records = measured(dir);
    let plan = common::plan(&chat(
        &tee.addr,
        dir,
        &[
            "--num-sessions",
            "6",
            "--session-turns-mean",
            "3",
            "--session-turns-stddev",
            "1",
            "--random-seed",
            "5",
        ],
    ))
    .unwrap();
    let total = plan.workload.sessions.as_ref().unwrap().total_turns;
    assert_eq!(
        records.len() as u64,
        total,
        "every session once, each turn one request"
    );
    assert!(records.iter().all(|r| r["error"].is_null()));

    // On the wire: histories, answers, stickiness.
    let by_turn = check_histories(&tee, 0);
    assert!(
        by_turn.len() >= 3,
        "sessions of several lengths: {by_turn:?}"
    );
    let conns = tee.exchanges().len();
    assert!(conns <= 2, "two workers, two connections: {conns}");

    // In the records: turns 0.. of each session, the think time between them, and never more
    // than two sessions in flight.
    let mut sessions: HashMap<u64, Vec<&Value>> = HashMap::new();
    for r in &records {
        sessions
            .entry(r["session"].as_u64().unwrap())
            .or_default()
            .push(r);
    }
    assert_eq!(sessions.len(), 6);
    let mut spans = Vec::new();
    for turns in sessions.values_mut() {
        turns.sort_by_key(|r| r["turn"].as_u64().unwrap());
        for (i, r) in turns.iter().enumerate() {
            assert_eq!(r["turn"], i as u64);
            assert_eq!(
                r["prompt_index"], turns[0]["prompt_index"],
                "one conversation"
            );
            if i > 0 {
                let gap = r["sent_ns"].as_u64().unwrap() - turns[i - 1]["end_ns"].as_u64().unwrap();
                assert!(gap >= 20_000_000, "think time 20 ms, got {gap} ns");
                assert!(
                    r["isl"].as_u64() > turns[i - 1]["isl"].as_u64(),
                    "the input grows"
                );
            }
        }
        spans.push((
            turns[0]["sent_ns"].as_u64().unwrap(),
            turns.last().unwrap()["end_ns"].as_u64().unwrap(),
        ));
    }
    for &(start, _) in &spans {
        let open = spans
            .iter()
            .filter(|&&(s, e)| s <= start && start < e)
            .count();
        assert!(
            open <= 2,
            "at most --concurrency sessions in flight, {open} at {start}"
        );
    }

    // The per-turn block agrees with requests.jsonl.
    let doc = json_file(&dir.join("profile_export_genai_perf.json"));
    let turns = doc["turns"].as_array().expect("a turns block");
    for t in turns {
        let i = t["turn"].as_u64().unwrap();
        let rows: Vec<&Value> = records.iter().filter(|r| r["turn"] == i).collect();
        assert_eq!(t["count"], rows.len() as u64, "turn {i}");
        let isl = rows.iter().map(|r| r["isl"].as_f64().unwrap()).sum::<f64>() / rows.len() as f64;
        assert!((t["input_sequence_length"]["avg"].as_f64().unwrap() - isl).abs() < 1e-6);
        let ttft = rows
            .iter()
            .map(|r| r["ttft_ms"].as_f64().unwrap())
            .sum::<f64>()
            / rows.len() as f64;
        let got = t["time_to_first_token"]["avg"].as_f64().unwrap();
        assert!(
            (got - ttft).abs() <= ttft * 1e-3,
            "turn {i}: TTFT avg {got} vs {ttft}"
        );
    }
    assert_eq!(turns.len(), by_turn.len(), "one entry per turn index");
    assert!(doc["input_config"]["workload"]["sessions"]["total_turns"] == total);
    sim.shutdown().await;
}

/// Conversation files: the file's user messages in order, its system message first, the
/// server's answers (never the file's) between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharegpt_and_openai_files_are_replayed_turn_by_turn() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let sharegpt = concat!(
        r#"{"conversations": [{"from": "system", "value": "You are terse."}, {"from": "human", "value": "Name a colour."}, {"from": "gpt", "value": "FILE ANSWER"}, {"from": "human", "value": "Another one?"}, {"from": "gpt", "value": "FILE ANSWER"}, {"from": "human", "value": "And a third?"}]}"#,
        "\n",
        r#"{"conversations": [{"from": "system", "value": "You are terse."}, {"from": "human", "value": "Hello there."}]}"#,
        "\n"
    );
    let openai = concat!(
        r#"{"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "First question."}, {"role": "assistant", "content": "FILE ANSWER"}, {"role": "user", "content": [{"type": "text", "text": "Second question."}]}]}"#,
        "\n",
        r#"{"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Only question."}]}"#,
        "\n"
    );
    let want_users: [&[&[&str]]; 2] = [
        &[
            &["Name a colour.", "Another one?", "And a third?"],
            &["Hello there."],
        ],
        &[
            &["First question.", "Second question."],
            &["Only question."],
        ],
    ];
    for (k, (name, text)) in [("sharegpt", sharegpt), ("openai", openai)]
        .into_iter()
        .enumerate()
    {
        let tee = Tee::start(sim.http_addr);
        let file = tmp.path().join(format!("{name}.jsonl"));
        std::fs::write(&file, text).unwrap();
        let out = profile(&chat(
            &tee.addr,
            &tmp.path().join(name),
            &[
                "--input-file",
                file.to_str().unwrap(),
                "--output-tokens-mean",
                "4",
            ],
        ))
        .await
        .unwrap();
        let records = measured(&out.levels[0].dir);
        let turns: usize = want_users[k].iter().map(|c| c.len()).sum();
        assert_eq!(records.len(), turns, "{name}: every user turn once");
        check_histories(&tee, 1);
        let mut seen: Vec<Vec<String>> = Vec::new();
        for conn in tee.exchanges() {
            for (body, _) in conn {
                let m = messages(&body);
                assert_eq!(m[0], ("system".to_string(), "You are terse.".to_string()));
                assert!(
                    m.iter().all(|(_, c)| c != "FILE ANSWER"),
                    "{name}: the file's answers are not sent"
                );
                let users: Vec<String> = m
                    .iter()
                    .filter(|(r, _)| r == "user")
                    .map(|(_, c)| c.clone())
                    .collect();
                seen.push(users);
            }
        }
        for conversation in want_users[k] {
            for t in 1..=conversation.len() {
                let want: Vec<String> = conversation[..t].iter().map(|s| s.to_string()).collect();
                assert!(
                    seen.contains(&want),
                    "{name}: turn {t} of {conversation:?} sent"
                );
            }
        }
    }

    // A ShareGPT dump is one JSON array: the same conversations, replayed alike.
    let tee = Tee::start(sim.http_addr);
    let rows: Vec<Value> = sharegpt
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let file = tmp.path().join("sharegpt.json");
    std::fs::write(&file, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    let out = profile(&chat(
        &tee.addr,
        &tmp.path().join("array"),
        &[
            "--input-file",
            file.to_str().unwrap(),
            "--num-sessions",
            "1",
        ],
    ))
    .await
    .unwrap();
    assert_eq!(
        measured(&out.levels[0].dir).len(),
        3,
        "the first conversation's turns"
    );
    assert_eq!(
        check_histories(&tee, 1).into_keys().collect::<Vec<_>>(),
        [1, 2, 3]
    );

    // Completions: the history as text, joined by blank lines.
    let tee = Tee::start(sim.http_addr);
    let file = tmp.path().join("openai.jsonl");
    profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "completions",
        "--streaming",
        "-u",
        &tee.addr,
        "--artifact-dir",
        &tmp.path().join("cmpl").display().to_string(),
        "--ui",
        "none",
        "--input-file",
        file.to_str().unwrap(),
        "--num-sessions",
        "1",
        "--output-tokens-mean",
        "3",
    ]))
    .await
    .unwrap();
    let conn = &tee.exchanges()[0];
    assert_eq!(conn.len(), 2);
    let prompt = |b: &[u8]| {
        serde_json::from_slice::<Value>(b).unwrap()["prompt"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(prompt(&conn[0].0), "You are terse.\n\nFirst question.");
    assert_eq!(
        prompt(&conn[1].0),
        format!(
            "You are terse.\n\nFirst question.\n\n{}\n\nSecond question.",
            conn[0].1
        )
    );
    sim.shutdown().await;
}

#[test]
fn bad_conversations_and_combinations_exit_2_before_sending() {
    let tmp = tempfile::tempdir().unwrap();
    let tee = Tee::start("127.0.0.1:9".parse().unwrap());
    let ok = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
    let cases: Vec<(String, &[&str], &str)> = vec![
        (
            format!("{ok}\n{{\"messages\": [\n"),
            &[],
            "line 2: invalid JSON",
        ),
        (
            r#"{"conversations": [{"from": "gpt", "value": "only an answer"}]}"#.to_string(),
            &[],
            "line 1: field \"conversations\" has no user message",
        ),
        (
            format!("{ok}\n{{\"messages\": [{{\"role\": \"user\"}}]}}\n"),
            &[],
            "line 2: field \"messages[0].content\" is missing or not text",
        ),
        (
            format!("{ok}\n"),
            &["--request-rate", "5"],
            "give --concurrency N to keep N sessions in flight",
        ),
        (
            format!("{ok}\n"),
            &["--session-turns-mean", "3"],
            "drop --session-turns-mean",
        ),
        (
            format!("{ok}\n"),
            &["--num-sessions", "2"],
            "holds 1 conversations",
        ),
        (
            format!("{ok}\n"),
            &["--endpoint-type", "kserve"],
            "--endpoint-type chat",
        ),
    ];
    for (i, (content, extra, says)) in cases.iter().enumerate() {
        let path = tmp.path().join(format!("bad{i}.jsonl"));
        std::fs::write(&path, content).unwrap();
        let mut a = vec![
            "profile",
            "-m",
            "gpt2",
            "-u",
            &tee.addr,
            "--input-file",
            path.to_str().unwrap(),
        ];
        if !extra.contains(&"--endpoint-type") {
            a.extend(["--endpoint-type", "chat"]);
        }
        a.extend(extra.iter());
        let (code, _, stderr) = run_in(&a, tmp.path());
        assert_eq!(code, 2, "{says}: {stderr}");
        assert!(stderr.contains(says), "{stderr} lacks {says:?}");
        if i < 3 {
            assert!(
                stderr.contains(&format!("bad{i}.jsonl")),
                "names the file: {stderr}"
            );
        }
    }
    let (code, _, stderr) = run_in(
        &[
            "profile",
            "-m",
            "gpt2",
            "--endpoint-type",
            "chat",
            "-u",
            &tee.addr,
            "--session-turn-delay-mean",
            "100",
        ],
        tmp.path(),
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("give --num-sessions N"), "{stderr}");
    assert_eq!(tee.all_sent(), "", "nothing reached the server");
}

/// `--session-replies recorded`: each turn's history carries the file's recorded answers in
/// place of the server's (the server's are still measured); without a conversation file that
/// has some, exit 2 says what to give.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_replies_replace_the_live_ones_on_request() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("chats.jsonl");
    let text = r#"{"conversations": [{"from": "human", "value": "Q1"}, {"from": "gpt", "value": "A1 recorded"}, {"from": "human", "value": "Q2"}, {"from": "gpt", "value": "A2 recorded"}, {"from": "human", "value": "Q3"}]}"#;
    std::fs::write(&file, format!("{text}\n")).unwrap();
    let tee = Tee::start(sim.http_addr);
    let flags = ["--input-file", file.to_str().unwrap()];
    let recorded = [&flags[..], &["--session-replies", "recorded"]].concat();
    let out = profile(&chat(&tee.addr, &tmp.path().join("out"), &recorded))
        .await
        .unwrap();
    assert_eq!(measured(&out.levels[0].dir).len(), 3);
    let mut sent: Vec<Vec<(String, String)>> = tee
        .exchanges()
        .into_iter()
        .flatten()
        .map(|(body, _)| messages(&body))
        .collect();
    sent.sort_by_key(Vec::len);
    let m = |r: &str, c: &str| (r.to_string(), c.to_string());
    assert_eq!(
        sent[2],
        [
            m("user", "Q1"),
            m("assistant", "A1 recorded"),
            m("user", "Q2"),
            m("assistant", "A2 recorded"),
            m("user", "Q3")
        ]
    );
    let fp = json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
    assert_eq!(
        fp["input_config"]["workload"]["sessions"]["replies"],
        "recorded"
    );

    // Synthetic sessions, and a file without answers, have nothing to replay.
    let bare = tmp.path().join("bare.jsonl");
    std::fs::write(
        &bare,
        "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}\n",
    )
    .unwrap();
    for (extra, says) in [
        (
            vec!["--num-sessions", "2", "--session-replies", "recorded"],
            "synthetic sessions have none",
        ),
        (
            vec![
                "--input-file",
                bare.to_str().unwrap(),
                "--session-replies",
                "recorded",
            ],
            "has no assistant message after a user message",
        ),
    ] {
        let err = profile(&chat(&sim.http_url(), &tmp.path().join("x"), &extra))
            .await
            .unwrap_err();
        assert!(err.contains(says), "{err}");
    }
    sim.shutdown().await;
}
