//! Request ids (issue 14.5): every request leaves with `RUN-SEQ` — in `X-Request-ID` (or the
//! header `--request-id-header` names) over HTTP, in KServe's `id` over gRPC — and
//! `requests.jsonl` records the same id, so a slow request can be found in the server's logs.
//! Checked on the bytes that left the process (a relay in front of the simulator).

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{Tee, args, chat_args, profile, rows, start_round};

/// Every row's `request_id` (warm-up included) of the run's level directories.
fn recorded_ids(dirs: &[&Path]) -> Vec<String> {
    dirs.iter()
        .flat_map(|d| rows(d))
        .map(|r| r["request_id"].as_str().expect("request_id").to_string())
        .collect()
}

fn run_id(dir: &Path) -> String {
    let doc = common::json_file(&dir.join("profile_export_genai_perf.json"));
    doc["context"]["run_id"].as_str().unwrap().to_string()
}

/// The values of header `name` in the request heads sent to the inference route.
fn header_values(tee: &Tee, name: &str) -> Vec<String> {
    let prefix = format!("{}: ", name.to_ascii_lowercase());
    tee.heads()
        .iter()
        .filter(|h| h.starts_with("POST /v1/chat"))
        .filter_map(|h| {
            h.lines()
                .find(|l| l.to_ascii_lowercase().starts_with(&prefix))
                .map(|l| l[prefix.len()..].to_string())
        })
        .collect()
}

fn chat(url: &str, dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = chat_args(
        url,
        dir,
        &[
            "--output-tokens-mean",
            "3",
            "--request-count",
            "6",
            "--warmup-request-count",
            "2",
        ],
    );
    a.extend(args(extra));
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requests_carry_the_id_their_row_records() {
    let sim = start_round().await;
    let tee = Tee::start(sim.http_addr);
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&chat(
        &tee.addr,
        &tmp.path().join("c{concurrency}"),
        &["--concurrency", "1,2"],
    ))
    .await
    .unwrap();
    let dirs: Vec<&Path> = out.levels.iter().map(|l| l.dir.as_path()).collect();
    let recorded = recorded_ids(&dirs);
    assert_eq!(recorded.len(), 16, "2 levels × (2 warm-up + 6)");
    let unique: BTreeSet<&String> = recorded.iter().collect();
    assert_eq!(
        unique.len(),
        recorded.len(),
        "one id per request across levels"
    );
    let run = run_id(dirs[0]);
    assert!(
        recorded.iter().all(|id| id.starts_with(&format!("{run}-"))),
        "{recorded:?}"
    );
    let mut sent = header_values(&tee, "X-Request-ID");
    sent.sort();
    let mut want = recorded.clone();
    want.sort();
    assert_eq!(sent, want, "the headers sent are the ids recorded");

    // Another header name; `none` sends none and records none.
    let tee = Tee::start(sim.http_addr);
    let d = tmp.path().join("named");
    profile(&chat(&tee.addr, &d, &["--request-id-header", "X-Trace-Id"]))
        .await
        .unwrap();
    assert_eq!(header_values(&tee, "X-Trace-Id").len(), 8);
    assert!(header_values(&tee, "X-Request-ID").is_empty());
    let tee = Tee::start(sim.http_addr);
    let d = tmp.path().join("none");
    profile(&chat(&tee.addr, &d, &["--request-id-header", "none"]))
        .await
        .unwrap();
    assert!(header_values(&tee, "X-Request-ID").is_empty());
    assert!(rows(&d).iter().all(|r| r.get("request_id").is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_requests_carry_the_id_in_kserve_id() {
    let sim = start_round().await;
    let tee = Tee::start(sim.grpc_addr);
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--service-kind",
        "triton",
        "--backend",
        "tensorrtllm",
        "--streaming",
        "-u",
        &tee.addr,
        "--output-tokens-mean",
        "3",
        "--request-count",
        "5",
        "--request-id-header",
        "none",
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    let recorded = recorded_ids(&[out.levels[0].dir.as_path()]);
    assert_eq!(recorded.len(), 5);
    let wire = tee.all_sent();
    for id in &recorded {
        assert_eq!(
            wire.matches(id.as_str()).count(),
            1,
            "{id} sent once in a request body"
        );
    }
}

#[test]
fn a_bad_header_name_is_a_usage_error() {
    for (bad, says) in [
        ("X Request", "not an HTTP header name"),
        ("Content-Length", "writes that header itself"),
    ] {
        let (code, _, err) = common::run_in(
            &["profile", "-m", "m", "--request-id-header", bad],
            Path::new("."),
        );
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "{err}");
    }
}
