//! `ttftbench doctor` against the simulator with faults switched on: each broken set-up stops at
//! the step the seeds' troubleshooting list names, with the fix it names.

use crate::common;

use clap::Parser;
use common::*;
use ttftbench::cli::{Cli, Command};
use ttftbench::doctor::{Diagnosis, Status, diagnose};
use ttftbench::sim::{FaultConfig, ModelSpec, SimConfig};

async fn doctor(args: &[&str]) -> Diagnosis {
    let mut argv = vec!["ttftbench", "doctor"];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(&argv).expect("doctor flags parse");
    let Command::Doctor(a) = cli.command else {
        panic!("not doctor")
    };
    let plan = a.plan().expect("plan");
    diagnose(&plan, &mut |_, _| {}).await
}

fn ids(d: &Diagnosis) -> Vec<(&str, Status)> {
    d.steps.iter().map(|s| (s.id, s.status)).collect()
}

/// The failing step's id, detail and fix.
fn failure(d: &Diagnosis) -> (&str, &str, &str) {
    let f = d.failed().unwrap_or_else(|| panic!("no failure: {d:#?}"));
    (f.id, f.detail.as_str(), f.fix.as_deref().unwrap_or(""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_server_passes_every_step_on_each_protocol() {
    let sim = start_round().await;
    let metrics = sim.metrics_url();
    let grpc = sim.grpc_target();
    let http = sim.http_url();
    let d = doctor(&["-u", &grpc, "-m", "gpt2", "--server-metrics-url", &metrics]).await;
    assert_eq!(
        ids(&d),
        [
            ("connect", Status::Ok),
            ("health", Status::Ok),
            ("server", Status::Ok),
            ("model", Status::Ok),
            ("metrics", Status::Ok),
            ("statistics", Status::Ok),
            ("request", Status::Ok),
        ]
    );
    let model = d.step("model").unwrap();
    assert!(model.detail.contains("decoupled: yes"), "{}", model.detail);
    assert!(model.detail.contains("layout fits --backend tensorrtllm"));
    let req = d.step("request").unwrap();
    // 12 tokens asked for: at least 12 text events, each shown with its arrival time.
    assert!(
        req.detail.contains("with text; first token at +"),
        "{}",
        req.detail
    );
    assert!(req.lines[0].contains("ms  event   1: "), "{:?}", req.lines);
    // vLLM layout, found as such.
    let d = doctor(&["-u", &grpc, "-m", "vllm_model", "--backend", "vllm"]).await;
    assert!(d.failed().is_none(), "{d:#?}");
    // Triton HTTP generate_stream and OpenAI chat.
    let d = doctor(&[
        "-u",
        &http,
        "-m",
        "gpt2",
        "--endpoint-type",
        "generate",
        "--server-metrics-url",
        &metrics,
    ])
    .await;
    assert!(d.failed().is_none(), "{d:#?}");
    assert_eq!(d.steps.len(), 7);
    let d = doctor(&["-u", &http, "-m", "gpt2", "--endpoint-type", "chat"]).await;
    assert!(d.failed().is_none(), "{d:#?}");
    assert_eq!(d.step("server").unwrap().status, Status::Skip);
    // The default metrics URL (port 8002 of the host) is not the simulator's: a warning only.
    assert_eq!(d.step("metrics").unwrap().status, Status::Warn);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_stops_at_connect() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let d = doctor(&["-u", &format!("127.0.0.1:{port}"), "-m", "gpt2"]).await;
    assert_eq!(d.steps.len(), 1);
    let (id, detail, fix) = failure(&d);
    assert_eq!(id, "connect");
    assert!(detail.contains("connection refused"), "{detail}");
    assert!(fix.contains("--http-address 0.0.0.0 --grpc-address 0.0.0.0"));
    assert!(fix.contains("8001 gRPC"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_model_lists_the_names_that_exist() {
    let sim = start_round().await;
    let d = doctor(&["-u", &sim.grpc_target(), "-m", "gtp2"]).await;
    let (id, detail, fix) = failure(&d);
    assert_eq!(id, "model");
    assert!(
        detail.contains("models it has: ") && detail.contains("gpt2, "),
        "{detail}"
    );
    assert!(detail.contains("vllm_model"), "{detail}");
    assert!(fix.contains("use one of the model names listed"));
    let d = doctor(&[
        "-u",
        &sim.http_url(),
        "-m",
        "gtp2",
        "--endpoint-type",
        "generate",
    ])
    .await;
    let (id, detail, _) = failure(&d);
    assert_eq!(id, "model");
    assert!(
        detail.contains("models it has: ") && detail.contains(", vllm_model"),
        "{detail}"
    );
    let d = doctor(&[
        "-u",
        &sim.http_url(),
        "-m",
        "gtp2",
        "--endpoint-type",
        "chat",
    ])
    .await;
    let (id, detail, _) = failure(&d);
    assert_eq!(id, "model");
    assert!(detail.contains("gpt2"), "{detail}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_required_says_add_the_key() {
    let sim = start(SimConfig {
        engine: round_engine(),
        api_key: Some("sk-doctor".into()),
        ..SimConfig::default()
    })
    .await;
    let d = doctor(&[
        "-u",
        &sim.http_url(),
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
    ])
    .await;
    let (id, detail, fix) = failure(&d);
    assert_eq!(id, "health");
    assert!(detail.contains("401"), "{detail}");
    assert!(fix.contains("--api-key"), "{fix}");
    let d = doctor(&[
        "-u",
        &sim.http_url(),
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--api-key",
        "sk-doctor",
    ])
    .await;
    assert!(d.failed().is_none(), "{d:#?}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_server_fails_the_request_step() {
    let sim = start(SimConfig {
        engine: round_engine(),
        faults: FaultConfig {
            unavailable: true,
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await;
    let (grpc, http) = (sim.grpc_target(), sim.http_url());
    for args in [
        vec!["-u", grpc.as_str(), "-m", "gpt2"],
        vec![
            "-u",
            http.as_str(),
            "-m",
            "gpt2",
            "--endpoint-type",
            "generate",
        ],
    ] {
        let d = doctor(&args).await;
        let (id, detail, fix) = failure(&d);
        assert_eq!(id, "request", "{args:?}");
        assert!(
            detail.contains("503") || detail.to_lowercase().contains("unavailable"),
            "{detail}"
        );
        assert!(fix.contains("refuses inference"), "{fix}");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_body_or_one_response_means_no_ttft() {
    // The default models include `gpt2_nostream`, TensorRT-LLM's layout without decoupling.
    assert!(
        ModelSpec::defaults()
            .iter()
            .any(|m| m.name == "gpt2_nostream" && !m.decoupled)
    );
    let sim = start_round().await;
    // The non-streaming generate route answers with one JSON body.
    let d = doctor(&[
        "-u",
        &sim.http_url(),
        "-m",
        "gpt2",
        "--endpoint-type",
        "generate",
        "--endpoint",
        "v2/models/gpt2/generate",
    ])
    .await;
    let (id, detail, fix) = failure(&d);
    assert_eq!(id, "request");
    assert!(
        detail.contains("one JSON body instead of a stream"),
        "{detail}"
    );
    assert!(fix.contains("--streaming"), "{fix}");
    assert!(fix.contains("generate_stream"), "{fix}");
    // A model that is not decoupled: the config says so before any request.
    let d = doctor(&["-u", &sim.grpc_target(), "-m", "gpt2_nostream"]).await;
    let (id, detail, fix) = failure(&d);
    assert_eq!(id, "model");
    assert!(detail.contains("decoupled: no"), "{detail}");
    assert!(fix.contains("decoupled: true"), "{fix}");
    assert!(fix.contains("without --streaming"), "{fix}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restricted_statistics_warn_with_the_access_token_header() {
    let sim = start(SimConfig {
        engine: round_engine(),
        access_token: Some("tok".into()),
        ..SimConfig::default()
    })
    .await;
    let grpc = sim.grpc_target();
    let d = doctor(&["-u", &grpc, "-m", "gpt2"]).await;
    assert!(d.failed().is_none(), "{d:#?}");
    let s = d.step("statistics").unwrap();
    assert_eq!(s.status, Status::Warn);
    assert!(
        s.fix
            .as_deref()
            .unwrap()
            .contains("-H 'triton-access-token: TOKEN'"),
        "{s:?}"
    );
    let d = doctor(&["-u", &grpc, "-m", "gpt2", "-H", "triton-access-token: tok"]).await;
    assert_eq!(d.step("statistics").unwrap().status, Status::Ok);
    sim.shutdown().await;
}

#[test]
fn binary_exit_codes_and_printed_steps() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ttftbench"))
        .args(["doctor", "-u", &format!("127.0.0.1:{port}"), "-m", "gpt2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with(&format!(
        "ttftbench doctor: model 'gpt2' over KServe v2 gRPC at http://127.0.0.1:{port}\n[1/7] TCP connect to 127.0.0.1:{port}: FAIL — connection refused at 127.0.0.1:{port}: nothing listens on that port\n      fix: check the address and port"
    )), "{stdout}");
    assert!(stdout.ends_with(&format!(
        "stopped at \"TCP connect to 127.0.0.1:{port}\": fix that and run doctor again\n"
    )));
    // A bad flag is a usage error.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ttftbench"))
        .args(["doctor", "-m", "gpt2", "-H", "novalue"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
