//! What a run records about itself (issue 19.4–19.5): the run id, `--label` tags, client host,
//! the server's identity and model, each level's start and end, `schema_version` in every JSON
//! file, report.html's header, and `--profile-export-file` naming the GenAI-Perf files.

use crate::common;

use common::{args, json_file, plan, profile, start_round};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_sweep_records_its_context_and_names_its_exports() {
    let sim = start_round().await;
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
        &sim.grpc_target(),
        "--server-metrics-url",
        &sim.metrics_url(),
        "--synthetic-input-tokens-mean",
        "20",
        "--output-tokens-mean",
        "4",
        "--request-count",
        "4",
        "--concurrency",
        "1,2",
        "--label",
        "release=v2.3",
        "--label",
        "team=serving",
        "--profile-export-file",
        "run7.json",
        "--artifact-dir",
        &tmp.path().join("c{concurrency}").display().to_string(),
    ]))
    .await
    .unwrap();
    assert_eq!(out.levels.len(), 2);
    let mut contexts = Vec::new();
    let mut previous_end = 0;
    for l in &out.levels {
        for f in ["run7.json", "run7_genai_perf.csv", "run7_genai_perf.json"] {
            assert!(l.dir.join(f).is_file(), "{f} in {}", l.dir.display());
        }
        assert!(!l.dir.join("profile_export.json").exists());
        let doc = json_file(&l.dir.join("run7_genai_perf.json"));
        assert_eq!(doc["schema_version"], 2);
        let level = &doc["level"];
        let (start, end) = (
            level["started_unix_ns"].as_u64().unwrap(),
            level["ended_unix_ns"].as_u64().unwrap(),
        );
        assert!(previous_end <= start && start < end, "{level}");
        previous_end = end;
        for f in ["histograms.json", "run7.json", "inputs.json"] {
            assert_eq!(json_file(&l.dir.join(f))["schema_version"], 2, "{f}");
        }
        contexts.push(doc["context"].clone());
    }
    let c = &contexts[0];
    assert_eq!(contexts[1]["run_id"], c["run_id"], "one run id per run");
    assert!(c["run_id"].as_str().unwrap().len() > 16, "{c}");
    assert_eq!(c["labels"]["release"], "v2.3");
    assert_eq!(c["labels"]["team"], "serving");
    assert!(c["client"]["cores"].as_u64().unwrap() >= 1);
    assert!(!c["client"]["host"].as_str().unwrap().is_empty());
    assert_eq!(c["server"]["name"], "ttftbench-sim");
    assert_eq!(c["server"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(c["server"]["source"], "gRPC ServerMetadata");
    assert_eq!(c["model"]["name"], "gpt2");
    assert_eq!(c["model"]["decoupled"], true);

    let sweep = out.sweep_dir.expect("a sweep");
    let summary = json_file(&sweep.join("summary.json"));
    assert_eq!(summary["schema_version"], 2);
    assert_eq!(summary["context"]["run_id"], c["run_id"]);
    let html = std::fs::read_to_string(sweep.join("report.html")).unwrap();
    for want in [
        format!("run {}", c["run_id"].as_str().unwrap()),
        "labels release=v2.3 team=serving".to_string(),
        format!(
            "server ttftbench-sim {} (from gRPC ServerMetadata)",
            env!("CARGO_PKG_VERSION")
        ),
        "model gpt2: platform".to_string(),
        "client ".to_string(),
        "ended ".to_string(),
    ] {
        assert!(html.contains(&want), "report header lacks {want:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_run_reads_the_server_and_its_model_listing() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let out = profile(&args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &sim.http_url(),
        "--synthetic-input-tokens-mean",
        "20",
        "--output-tokens-mean",
        "4",
        "--request-count",
        "3",
        "--artifact-dir",
        &tmp.path().display().to_string(),
    ]))
    .await
    .unwrap();
    let doc = json_file(&out.levels[0].dir.join("profile_export_genai_perf.json"));
    let c = &doc["context"];
    assert_eq!(c["labels"], serde_json::json!({}));
    assert_eq!(c["server"]["name"], "ttftbench-sim", "{c}");
    assert_eq!(c["server"]["source"], "GET /v2");
    assert_eq!(c["model"]["id"], "gpt2");
    assert_eq!(c["model"]["owned_by"], "ttftbench-sim");
}

#[test]
fn bad_labels_and_export_names_are_usage_errors() {
    let base = ["-m", "gpt2", "--endpoint-type", "chat"];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        plan(&args(&a))
    };
    let e = with(&["--label", "release"]).unwrap_err();
    assert!(e.contains("--label release: no '='"), "{e}");
    let e = with(&["--label", "a=1", "--label", "a=2"]).unwrap_err();
    assert!(e.contains("given twice"), "{e}");
    let e = with(&["--profile-export-file", "out/x.json"]).unwrap_err();
    assert!(e.contains("bare file name"), "{e}");
    let e = with(&["--profile-export-file", "requests.jsonl"]).unwrap_err();
    assert!(e.contains("another file"), "{e}");
    let p = with(&["--profile-export-file", "x.json", "--label", "k=v"]).unwrap();
    assert_eq!(p.export_names.json, "x_genai_perf.json");
    assert_eq!(p.outputs.labels.get("k").map(String::as_str), Some("v"));
}
