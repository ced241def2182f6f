//! GenAI-Perf's own parser agrees: ttftbench profiles the simulator over chat, completions,
//! Triton generate (HTTP `generate_stream`) and Triton gRPC (KServe streaming), with input and
//! output lengths spread, then `scripts/genai_perf/crosscheck.py` has GenAI-Perf's
//! `LLMProfileDataParser` recompute every metric from ttftbench's raw `profile_export.json` and
//! compares them with ttftbench's `profile_export_genai_perf.json` (tolerances and the one
//! stated difference, Triton's empty final response, are explained in the script).
//!
//! Needs the GenAI-Perf venv (`scripts/genai_perf/setup.sh`, which `scripts/test.sh` runs); skips
//! with the reason without it, fails instead under `TTFTBENCH_REQUIRE_GENAI_PERF=1` (CI).

use crate::common;

use common::{args, genai_perf_python, profile, run_python, start};
use ttftbench::sim::SimConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genai_perf_recomputes_the_same_metrics() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(python) = genai_perf_python() else {
        return;
    };
    let sim = start(SimConfig::default()).await;
    let tmp = tempfile::tempdir().unwrap();
    let runs: [(&str, &[&str], String); 4] = [
        ("chat", &["--endpoint-type", "chat"], sim.http_url()),
        (
            "completions",
            &["--endpoint-type", "completions"],
            sim.http_url(),
        ),
        ("generate", &["--endpoint-type", "generate"], sim.http_url()),
        ("grpc", &["--service-kind", "triton"], sim.grpc_target()),
    ];
    let mut dirs = Vec::new();
    for (name, api, url) in runs {
        let dir = tmp.path().join(name);
        let mut a = args(&[
            "-m",
            "gpt2",
            "--streaming",
            "--concurrency",
            "4",
            "--request-count",
            "40",
            "--num-prompts",
            "16",
            "--synthetic-input-tokens-mean",
            "120",
            "--synthetic-input-tokens-stddev",
            "60",
            "--output-tokens-mean",
            "16",
            "--output-tokens-stddev",
            "8",
        ]);
        a.extend(args(api));
        a.extend(args(&[
            "-u",
            &url,
            // GenAI-Perf's raw export is opt-in (`--raw-export full`).
            "--raw-export",
            "full",
            "--artifact-dir",
            &dir.display().to_string(),
        ]));
        let out = profile(&a).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.levels[0].summary.stats.error_count, 0, "{name}");
        dirs.push(dir);
    }
    sim.shutdown().await;
    let refs: Vec<&std::path::Path> = dirs.iter().map(|d| d.as_path()).collect();
    let table = run_python(&python, "scripts/genai_perf/crosscheck.py", &refs);
    println!("{table}");
    assert!(table.contains(" 0 failed"), "{table}");
    for label in [
        "openai:v1/chat/completions",
        "openai:v1/completions",
        "openai:v2/models/gpt2/generate_stream",
        "triton:kserve (empty final responses dropped)",
        "triton:kserve (as written)",
    ] {
        assert!(table.contains(label), "{label} was checked:\n{table}");
    }
}
