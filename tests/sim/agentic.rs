//! Agentic session files on the wire: a planner spawns two sub-agents that run side by side,
//! its next turn waits for both (then its recorded tool time), a fork continues its history,
//! every live answer goes into the next turn of its own session, a tool round trip as the
//! server's call and the tool's message answering it; AIPerf's `dag_jsonl` runs the same way; a cycle or a dangling branch exits 2 naming the session before anything is sent.
//! What was sent is read from a relay (`Tee`), when from `requests.jsonl`.

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use common::{Tee, measured, profile, run_in, start_round};
use serde_json::Value;

/// The planner (script 0) spawns reader (1) and tester (2) after turn 0, joined at turn 1 after
/// a 30 ms tool time; its last turn forks followup (3).
const AGENTS: &str = r#"{"agent": "planner", "system": "You plan.", "turns": [{"user": "P0", "spawn": ["reader", "tester"]}, {"tool": "grep", "result": "R1", "tool_ms": 30}, {"user": "P2", "fork": "followup"}]}
{"agent": "reader", "turns": [{"user": "A0", "think_ms": 150}, {"user": "A1"}]}
{"agent": "tester", "turns": [{"user": "B0", "think_ms": 150}]}
{"agent": "followup", "turns": [{"user": "F0"}]}
"#;

/// The same task in AIPerf's `dag_jsonl` (its `delay` is the wait before a turn).
const AIPERF: &str = r#"{"session_id": "planner", "turns": [{"messages": [{"role": "system", "content": "You plan."}, {"role": "user", "content": "P0"}], "spawns": ["reader", "tester"]}, {"messages": [{"role": "tool", "tool_call_id": "grep", "content": "R1"}], "delay": 30}, {"messages": [{"role": "user", "content": "P2"}], "forks": ["followup"]}]}
{"session_id": "reader", "turns": [{"messages": [{"role": "user", "content": "A0"}], "delay": 150}, {"messages": [{"role": "user", "content": "A1"}]}]}
{"session_id": "tester", "turns": [{"messages": [{"role": "user", "content": "B0"}], "delay": 150}]}
{"session_id": "followup", "turns": [{"messages": [{"role": "user", "content": "F0"}]}]}
"#;

type Msgs = Vec<(String, String)>;

/// Each request's messages and the answer streamed back, by its last user message.
fn by_last_user(tee: &Tee) -> HashMap<String, (Msgs, String)> {
    let mut out = HashMap::new();
    for (body, answer) in tee.exchanges().into_iter().flatten() {
        let v: Value = serde_json::from_slice(&body).unwrap();
        let m: Msgs = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let s = |k: &str| m[k].as_str().unwrap().to_string();
                (s("role"), s("content"))
            })
            .collect();
        let last = m.last().unwrap().1.clone();
        assert!(
            out.insert(last, (m, answer)).is_none(),
            "each turn sent once"
        );
    }
    out
}

/// The planner's tool round trip: P0 offered grep as its choice, the simulator called it, and
/// R1's history holds that call (the server's arguments) and the tool's message answering its
/// id (the simulator refuses a result that answers no call, so 0 errors says it matched).
fn tool_round_trip(tee: &Tee, records: &[Value]) {
    let bodies: Vec<Value> = tee
        .exchanges()
        .into_iter()
        .flatten()
        .map(|(b, _)| serde_json::from_slice(&b).unwrap())
        .collect();
    let last = |v: &Value| v["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let p0 = bodies.iter().find(|v| last(v) == "P0").unwrap();
    assert_eq!(p0["tool_choice"]["function"]["name"], "grep", "{p0}");
    assert_eq!(p0["tools"][0]["function"]["name"], "grep");
    let r1 = bodies.iter().find(|v| last(v) == "R1").unwrap();
    assert!(
        r1.get("tools").is_none(),
        "only the turn before a result offers it"
    );
    let (call, result) = (&r1["messages"][2]["tool_calls"][0], &r1["messages"][3]);
    assert_eq!(call["function"]["name"], "grep");
    assert_eq!(result["tool_call_id"], call["id"]);
    let args = call["function"]["arguments"].as_str().unwrap();
    assert!(
        args.starts_with("{\"query\":\"") && args.len() > 12,
        "{args}"
    );
    let called: Vec<&Value> = records.iter().filter(|r| r["tool_calls"] == 1).collect();
    assert_eq!(called.len(), 1, "P0's answer alone called a tool");
    assert_eq!(called[0]["prompt_index"], 0);
}

/// The values of header `name` over every request sent, in order per connection.
fn header_values(tee: &Tee, name: &str) -> Vec<String> {
    let prefix = format!("{}:", name.to_ascii_lowercase());
    tee.heads()
        .iter()
        .flat_map(|h| h.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| l.to_ascii_lowercase().starts_with(&prefix))
        .map(|l| l[prefix.len()..].trim().to_string())
        .collect()
}

fn msg(role: &str, text: &str) -> (String, String) {
    (role.to_string(), text.to_string())
}

/// The requests of script `i` in send order: (sent, end) ns.
fn times(records: &[Value], i: u64) -> Vec<(u64, u64)> {
    let mut t: Vec<(u64, u64)> = records
        .iter()
        .filter(|r| r["prompt_index"] == i)
        .map(|r| {
            (
                r["sent_ns"].as_u64().unwrap(),
                r["end_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    t.sort();
    t
}

/// A quiet run of session file `file`, 4 output tokens a turn, then `extra`.
fn file_flags<'a>(file: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let path = file.to_str().unwrap();
    let mut flags = vec![
        "--ui",
        "none",
        "--input-file",
        path,
        "--output-tokens-mean",
        "4",
    ];
    flags.extend_from_slice(extra);
    flags
}

async fn run_task(file_text: &str, dir: &Path) {
    let sim = start_round().await;
    let tee = Tee::start(sim.http_addr);
    let file = dir.join("agents.jsonl");
    std::fs::write(&file, file_text).unwrap();
    let out = profile(&common::chat_args(
        &tee.addr,
        &dir.join("out"),
        &file_flags(&file, &[]),
    ))
    .await
    .unwrap();
    let records = measured(&out.levels[0].dir);
    assert_eq!(records.len(), 7, "the task once: 3 + 2 + 1 + 1 turns");
    assert!(records.iter().all(|r| r["error"].is_null()));
    let mut turns: Vec<u64> = records
        .iter()
        .map(|r| r["turn"].as_u64().unwrap())
        .collect();
    turns.sort();
    assert_eq!(
        turns,
        (0..7).collect::<Vec<_>>(),
        "one session, its requests numbered"
    );

    // What each turn carried: its own session's history with the live answers.
    let sent = by_last_user(&tee);
    let answer = |k: &str| sent[k].1.clone();
    assert!(!answer("A0").is_empty());
    let planner_1 = vec![
        msg("system", "You plan."),
        msg("user", "P0"),
        msg("assistant", ""),
        msg("tool", "R1"),
    ];
    assert_eq!(
        sent["R1"].0, planner_1,
        "the server's tool call, then the tool's result"
    );
    tool_round_trip(&tee, &records);
    assert_eq!(
        sent["A0"].0,
        vec![msg("user", "A0")],
        "a spawn starts fresh"
    );
    let reader_1 = vec![
        msg("user", "A0"),
        msg("assistant", &answer("A0")),
        msg("user", "A1"),
    ];
    assert_eq!(sent["A1"].0, reader_1);
    assert_eq!(sent["B0"].0, vec![msg("user", "B0")]);
    let mut fork = sent["P2"].0.clone();
    fork.extend([msg("assistant", &answer("P2")), msg("user", "F0")]);
    assert_eq!(sent["F0"].0, fork, "a fork continues the parent's history");

    // One session id on every request of the task, branches included.
    let ids = header_values(&tee, "X-Session-ID");
    assert_eq!(ids.len(), 7, "{ids:?}");
    assert!(
        ids.iter().all(|v| v == &ids[0] && v.ends_with("-s0")),
        "{ids:?}"
    );

    // When: the sub-agents side by side, the join, the tool time after it.
    let (planner, reader, tester) = (times(&records, 0), times(&records, 1), times(&records, 2));
    let (followup, ms) = (times(&records, 3), 1_000_000);
    assert!(
        reader[0].0 < tester[0].1 && tester[0].0 < reader[0].1,
        "in parallel"
    );
    assert!(
        reader[0].0 >= planner[0].1 + 150 * ms,
        "think time before A0"
    );
    let joined = reader[1].1.max(tester[0].1);
    assert!(
        planner[1].0 >= joined + 30 * ms,
        "R1 waits for both, then 30 ms"
    );
    assert!(followup[0].0 >= planner[2].1, "the fork after P2's answer");

    // The task as a whole: from its first request to its last answer, branches included.
    let s = out.levels[0]
        .summary
        .stats
        .sessions
        .clone()
        .expect("sessions");
    assert_eq!((s.completed, s.failed, s.cut_short), (1, 0, 0));
    assert_eq!((s.turns_avg, s.tool_round_trips_avg), (7.0, 1.0));
    let first = records.iter().map(|r| r["sent_ns"].as_u64().unwrap()).min();
    let last = records.iter().map(|r| r["end_ns"].as_u64().unwrap()).max();
    let span_ms = (last.unwrap() - first.unwrap()) as f64 / 1e6;
    let took = s.completion.expect("completed").max;
    assert!(
        took >= span_ms && took < span_ms + 250.0,
        "task {took} ms, its requests span {span_ms} ms"
    );
    let doc = common::json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
    assert_eq!(doc["sessions"]["completed"], 1);
    let csv = std::fs::read_to_string(out.levels[0].dir.join("profile_export_genai_perf.csv"));
    assert!(
        csv.unwrap()
            .contains("session_tool_round_trips_avg,1.00,requests")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agents_run_in_parallel_and_join_with_live_histories() {
    let tmp = tempfile::tempdir().unwrap();
    run_task(AGENTS, tmp.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aiperf_dag_jsonl_runs_the_same_task() {
    let tmp = tempfile::tempdir().unwrap();
    run_task(AIPERF, tmp.path()).await;
}

#[test]
fn a_cycle_or_a_dangling_branch_exits_2_naming_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            "{\"agent\": \"root\", \"turns\": [{\"user\": \"x\", \"spawn\": \"a\"}]}\n{\"agent\": \"a\", \"turns\": [{\"user\": \"y\", \"spawn\": \"a\"}]}\n",
            "sessions form a cycle (a -> a)",
        ),
        (
            "{\"session_id\": \"root\", \"turns\": [{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"forks\": [\"gone\"]}]}\n",
            "session 'root' turn 0: branch target 'gone' is not declared",
        ),
    ];
    for (text, want) in cases {
        let file = tmp.path().join("bad.jsonl");
        std::fs::write(&file, text).unwrap();
        let (code, _, err) = run_in(
            &[
                "profile",
                "-m",
                "gpt2",
                "--endpoint-type",
                "chat",
                "-u",
                "127.0.0.1:9",
                "--input-file",
                file.to_str().unwrap(),
            ],
            tmp.path(),
        );
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(want), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_header_is_named_by_flag_and_differs_between_sessions() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    for (flag, name) in [("X-Affinity", Some("X-Affinity")), ("none", None)] {
        let tee = Tee::start(sim.http_addr);
        let out = profile(&common::chat_args(
            &tee.addr,
            &tmp.path().join(flag),
            &[
                "--ui",
                "none",
                "--num-sessions",
                "3",
                "--session-turns-mean",
                "2",
                "--synthetic-input-tokens-mean",
                "8",
                "--output-tokens-mean",
                "2",
                "--concurrency",
                "2",
                "--session-header",
                flag,
            ],
        ))
        .await
        .unwrap();
        assert_eq!(measured(&out.levels[0].dir).len(), 6);
        assert!(header_values(&tee, "X-Session-ID").is_empty());
        let Some(name) = name else {
            assert!(header_values(&tee, "X-Affinity").is_empty());
            continue;
        };
        let mut ids = header_values(&tee, name);
        ids.sort();
        let tails: Vec<&str> = ids.iter().map(|v| &v[v.rfind('-').unwrap()..]).collect();
        assert_eq!(tails, ["-s0", "-s0", "-s1", "-s1", "-s2", "-s2"], "{ids:?}");
    }
}

#[test]
fn session_flags_that_an_agentic_file_decides_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("agents.jsonl");
    std::fs::write(&file, AGENTS).unwrap();
    for (flag, value) in [
        ("--num-sessions", "2"),
        ("--session-turns-mean", "3"),
        ("--session-turn-delay-mean", "10"),
    ] {
        let (code, _, err) = run_in(
            &[
                "profile",
                "-m",
                "gpt2",
                "--endpoint-type",
                "chat",
                "-u",
                "127.0.0.1:9",
                "--input-file",
                file.to_str().unwrap(),
                flag,
                value,
            ],
            tmp.path(),
        );
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(
            err.contains(
                "is an agentic session file, whose sessions, turns and delays are its own"
            ),
            "{flag}: {err}"
        );
    }
}

/// `--session-replies recorded` with an agentic file: each turn's history carries the file's
/// recorded replies (the tool call's arguments still the server's); a file that records none
/// exits 2 saying where a reply goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_replies_of_an_agentic_file() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let text = r#"{"agent": "a", "turns": [{"user": "U0", "reply": "Rec zero."}, {"tool": "grep", "result": "R1", "reply": "Rec one."}, {"user": "U2"}]}"#;
    let file = tmp.path().join("a.jsonl");
    std::fs::write(&file, format!("{text}\n")).unwrap();
    let tee = Tee::start(sim.http_addr);
    let flags = file_flags(&file, &["--session-replies", "recorded"]);
    let out = profile(&common::chat_args(&tee.addr, &tmp.path().join("o"), &flags))
        .await
        .unwrap();
    assert_eq!(measured(&out.levels[0].dir).len(), 3);
    let sent = by_last_user(&tee);
    let want = [
        msg("user", "U0"),
        msg("assistant", "Rec zero."),
        msg("tool", "R1"),
        msg("assistant", "Rec one."),
        msg("user", "U2"),
    ];
    assert_eq!(sent["U2"].0, want);

    std::fs::write(
        &file,
        text.replace(", \"reply\": \"Rec zero.\"", "")
            .replace(", \"reply\": \"Rec one.\"", ""),
    )
    .unwrap();
    let err = profile(&common::chat_args(
        &sim.http_url(),
        &tmp.path().join("x"),
        &flags,
    ))
    .await
    .unwrap_err();
    assert!(
        err.contains("records no answer to replay (a turn's \"reply\""),
        "{err}"
    );
    sim.shutdown().await;
}
