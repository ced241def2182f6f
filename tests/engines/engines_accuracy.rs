//! A scored workload against the real vLLM of `scripts/engines` (skips like `engines_load.rs`
//! when it is not running): MMLU-style questions at concurrency 1, 4 and 16, temperature 0.
//! Every answer is graded and every later output compared with its prompt's first; the tiny
//! random-weight model answers at chance or below, and the run says so. Whether vLLM's outputs
//! changed with the batch is what the test prints, not what it asserts: it is the engine's
//! behaviour being measured.

use crate::common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_determinism_across_concurrency() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let Some(e) = engine("vllm") else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = mmlu_questions(dir.path(), "q.jsonl", 60);
    let tokenizer = e
        .vars
        .get("TTFTBENCH_VLLM_TOKENIZER")
        .cloned()
        .unwrap_or_default();
    let mut a = args(&[
        "-m",
        &e.model,
        "-u",
        &e.url,
        "--endpoint-type",
        "chat",
        "--accuracy-benchmark",
        "mmlu",
        "--accuracy-dataset",
        data.to_str().unwrap(),
        "--accuracy-n-shots",
        "3",
        "--output-tokens-mean",
        "32",
        "--concurrency",
        "1,4,16",
        "--artifact-dir",
        dir.path().join("run").to_str().unwrap(),
    ]);
    if !tokenizer.is_empty() {
        a.extend(args(&["--tokenizer", &tokenizer]));
    }
    let out = profile(&a).await.expect("the scored run completes");
    let graded = 57;
    for (i, l) in out.levels.iter().enumerate() {
        let s = &l.summary.stats;
        assert_eq!(s.error_count, 0, "{}", l.summary.stimulus.name());
        let acc = s.accuracy.as_ref().expect("every level graded");
        assert_eq!(acc.graded, graded);
        assert_eq!(acc.chance, Some(0.25));
        match (i, &acc.changed) {
            (0, None) => {}
            (0, Some(c)) => panic!("the first level is the reference: {c:?}"),
            (_, Some(c)) => {
                assert_eq!(c.compared, graded);
                eprintln!(
                    "vLLM {}: {} of {} temperature-0 outputs changed from concurrency 1 (first change: {:?})",
                    l.summary.stimulus.name(),
                    c.changed,
                    c.compared,
                    c.example
                );
            }
            (_, None) => panic!("outputs compared at every later level"),
        }
    }
    // A random-weight model does not beat guessing, and the verdict says so.
    let text = out.verdict.lines.join("\n");
    assert!(text.contains("at or below chance (25.0%"), "{text}");
    assert!(text.contains("temperature-0 answers"), "{text}");
}
