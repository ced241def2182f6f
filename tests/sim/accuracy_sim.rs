//! Scored workloads against the simulator on port 0, with known answers: the simulator answers
//! the same dataset the run sends (`serve --answer-key`), right with a set probability that
//! falls with load (`--accuracy-drop-per-batch`), and changes a share of temperature-0
//! outputs under load (`--nondeterministic-share`). The accuracy drop must be found at the
//! level where the simulator makes it and not where it does not; the changed-answer share must
//! hold the simulator's share within its interval. Also: the checked-in fixtures of each
//! benchmark graded end to end on chat and completions, Parquet and Arrow files in the Hugging
//! Face cache layouts, `--slo` and `compare` on accuracy, and bad input refused with exit 2.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use serde_json::Value;
use ttftbench::analysis::accuracy;
use ttftbench::stats::LevelSummary;

/// A quick engine: many slots, 1 ms prefill, 2 ms decode steps (a scored request of 8 tokens
/// takes ~20 ms, so requests of one level overlap and the simulator sees their load).
const FAST: [&str; 10] = [
    "--max-batch",
    "64",
    "--prefill-base-us",
    "1000",
    "--prefill-us-per-token",
    "2",
    "--decode-base-us",
    "2000",
    "--decode-us-per-seq",
    "0",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/accuracy")
        .join(name)
}

/// A simulator answering the questions of `key` (a `benchmark` dataset), then `extra` flags.
async fn sim_for(key: &Path, benchmark: &str, extra: &[&str]) -> ttftbench::sim::SimHandle {
    let key = key.to_str().unwrap().to_string();
    let mut flags: Vec<&str> = FAST.to_vec();
    flags.extend(["--answer-key", &key, "--answer-key-benchmark", benchmark]);
    flags.extend_from_slice(extra);
    serve_with(&flags).await
}

fn summaries(o: &ttftbench::profile::Outcome) -> Vec<LevelSummary> {
    o.levels.iter().map(|l| l.summary.clone()).collect()
}

/// `n` MMLU questions profiled at `concurrency` against a simulator answering them with
/// `sim_flags`; the levels' summaries, the outcome and the directory holding the files.
async fn mmlu_ladder(
    n: usize,
    sim_flags: &[&str],
    concurrency: &str,
) -> (
    Vec<LevelSummary>,
    ttftbench::profile::Outcome,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let data = mmlu_questions(dir.path(), "q.jsonl", n);
    let sim = sim_for(&data, "mmlu", sim_flags).await;
    let out = profile(&chat_args(
        &sim.http_url(),
        &dir.path().join("run"),
        &[
            "--accuracy-benchmark",
            "mmlu",
            "--accuracy-dataset",
            data.to_str().unwrap(),
            "--concurrency",
            concurrency,
        ],
    ))
    .await
    .unwrap();
    (summaries(&out), out, dir)
}

fn csv_value(dir: &Path, metric: &str) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join("profile_export_genai_perf.csv")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{metric},")))
        .and_then(|rest| rest.split(',').next())
        .and_then(|v| v.parse().ok())
}

/// Each checked-in fixture, answered right by the simulator, is graded 100 % on the endpoint
/// the benchmark is usually run on; the answers land in the console table, the level JSON and
/// CSV, requests.jsonl and report.html.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixtures_graded_end_to_end() {
    for (file, benchmark, endpoint, shots, graded) in [
        ("mmlu.jsonl", "mmlu", "chat", "2", 4u64),
        ("gsm8k.jsonl", "gsm8k", "completions", "1", 3),
        ("hellaswag.jsonl", "hellaswag", "chat", "0", 4),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let sim = sim_for(&fixture(file), benchmark, &[]).await;
        let data = fixture(file);
        let a = args(&[
            "-m",
            "gpt2",
            "--endpoint-type",
            endpoint,
            "-u",
            &sim.http_url(),
            "--artifact-dir",
            dir.path().to_str().unwrap(),
            "--accuracy-benchmark",
            benchmark,
            "--accuracy-dataset",
            data.to_str().unwrap(),
            "--accuracy-n-shots",
            shots,
            "--concurrency",
            "1,2",
        ]);
        let out = profile(&a).await.unwrap_or_else(|e| panic!("{file}: {e}"));
        for l in &out.levels {
            let acc = l.summary.stats.accuracy.as_ref().expect("accuracy");
            assert_eq!((acc.graded, acc.correct), (graded, graded), "{file}");
            assert_eq!(csv_value(&l.dir, "accuracy"), Some(1.0), "{file}");
            assert_eq!(csv_value(&l.dir, "graded_count"), Some(graded as f64));
            let doc = json_file(&l.dir.join("profile_export_genai_perf.json"));
            assert_eq!(doc["accuracy"]["avg"], 1.0, "{file}");
            assert_eq!(doc["accuracy"]["graded"], graded);
            let rows = measured(&l.dir);
            assert!(
                rows.iter().all(|r| r["correct"] == Value::Bool(true)),
                "{file}"
            );
        }
        // Temperature 0 by default, and the same answers at both levels.
        let second = out.levels[1].summary.stats.accuracy.as_ref().unwrap();
        let c = second
            .changed
            .as_ref()
            .expect("outputs compared at the second level");
        assert_eq!((c.changed, c.compared), (0, graded), "{file}");
        let table = ttftbench::report::console::sweep_table(&summaries(&out));
        assert!(
            table.contains("Accuracy") && table.contains("100.0% ["),
            "{table}"
        );
        let html = std::fs::read_to_string(out.sweep_dir.unwrap().join("report.html")).unwrap();
        assert!(html.contains("<th>Accuracy</th>"), "{file}");
    }
}

/// The simulator answers right 95 % of the time until more than 6 scored requests are in
/// flight, and 10 points less for each one more: concurrency 4 keeps the accuracy of
/// concurrency 1, concurrency 16 loses it. The verdict says so, level by level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accuracy_drop_found_where_the_simulator_makes_it() {
    let (levels, out, _dir) = mmlu_ladder(
        80,
        &[
            "--answer-accuracy",
            "0.95",
            "--accuracy-drop-per-batch",
            "0.1",
            "--accuracy-drop-above",
            "6",
        ],
        "1,4,16",
    )
    .await;
    let a = accuracy::assess(&levels).expect("scored levels");
    assert_eq!(a.baseline, "concurrency1");
    let dropped: Vec<(&str, bool)> = a
        .tests
        .iter()
        .map(|t| (t.level.as_str(), t.dropped))
        .collect();
    assert_eq!(
        dropped,
        [("concurrency4", false), ("concurrency16", true)],
        "{:?}",
        a.lines
    );
    let acc = |i: usize| levels[i].stats.accuracy.clone().unwrap();
    // Temperature 0: the same questions get the same answers at both light loads (the draw is
    // the prompt's), about the simulator's 95 % of them right.
    assert_eq!(acc(0).correct, acc(1).correct);
    assert!(acc(0).accuracy >= 0.85, "{:?}", acc(0));
    assert_eq!(acc(1).changed.as_ref().map(|c| c.changed), Some(0));
    // Well below the light loads (0.1 less per request in flight above 6). How far depends on
    // how many of the 16 were in flight as each was answered, which a busy machine lowers.
    assert!(acc(2).accuracy < acc(0).accuracy - 0.2, "{:?}", acc(2));
    let text = out.verdict.lines.join("\n");
    assert!(
        text.contains("accuracy falls with load at concurrency 16"),
        "{text}"
    );
    assert!(text.contains("one-sided two-proportion z-test"), "{text}");
    assert!(text.contains("accuracy holds at concurrency 4"), "{text}");
    // The verdict is in summary.json too, and the changed answers follow the accuracy's fall.
    let c16 = acc(2).changed.unwrap();
    assert!(c16.changed > 0 && c16.example.is_some(), "{c16:?}");
}

/// A third of the prompts get a different word after their answer when more than 2 requests
/// are in flight: none changes at concurrency 2, and at concurrency 8 the measured share's
/// interval holds the simulator's third; the example names the token after the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_answer_share_within_its_interval() {
    let (levels, out, _dir) = mmlu_ladder(
        120,
        &[
            "--nondeterministic-share",
            "0.33",
            "--nondeterministic-above",
            "2",
        ],
        "1,2,8",
    )
    .await;
    let changed = |i: usize| levels[i].stats.accuracy.as_ref().unwrap().changed.clone();
    assert!(changed(0).is_none(), "the first level is the reference");
    let c2 = changed(1).unwrap();
    assert_eq!((c2.changed, c2.compared), (0, 120));
    let c8 = changed(2).unwrap();
    assert_eq!(c8.compared, 120);
    // Which prompts the simulator varies is itself a draw of share 0.33 over the questions'
    // hashes (about 30 of these 120), less the first two of the level, which arrive with 2 or
    // fewer in flight. So the count is checked against the band such a draw falls in
    // (Binomial(120, 0.33) ± 3.3 sd, 99.9 %, widened by those 2), and the stated interval
    // against its own count.
    let sd = (120.0_f64 * 0.33 * 0.67).sqrt();
    let (lo, hi) = (120.0 * 0.33 - 3.3 * sd - 2.0, 120.0 * 0.33 + 3.3 * sd);
    assert!(
        (lo..=hi).contains(&(c8.changed as f64)),
        "{c8:?} outside [{lo:.1}, {hi:.1}]"
    );
    assert!(c8.low <= c8.share && c8.share <= c8.high, "{c8:?}");
    assert!(c8.low > 0.1 && c8.high < 0.6, "{c8:?}");
    // " A" then "\n" then the changed word: token 2.
    let ex = c8.example.as_ref().unwrap();
    assert_eq!(ex.token, 2, "{ex:?}");
    assert_ne!(ex.reference, ex.now);
    // Every answer still right: only the text after it changed.
    assert!(
        levels
            .iter()
            .all(|l| l.stats.accuracy.as_ref().unwrap().accuracy == 1.0)
    );
    let doc = json_file(&out.levels[2].dir.join("profile_export_genai_perf.json"));
    assert_eq!(doc["answer_changed_share"]["compared"], 120);
    assert_eq!(doc["answer_changed_share"]["example"]["token"], 2);
    let rows = measured(&out.levels[2].dir);
    let flagged = rows
        .iter()
        .filter(|r| r["answer_changed"] == Value::Bool(true))
        .count();
    assert_eq!(flagged as u64, c8.changed);
}

/// `--slo accuracy>=...` and `compare` on accuracy and the changed share: a server answering
/// half its questions wrong fails the objective and is a regression against one answering all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slo_and_compare_take_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    let data = mmlu_questions(dir.path(), "q.jsonl", 40);
    let q = data.to_str().unwrap();
    let mut runs = Vec::new();
    for (name, p) in [("good", "1.0"), ("bad", "0.5")] {
        let sim = sim_for(&data, "mmlu", &["--answer-accuracy", p]).await;
        let run = dir.path().join(name);
        let a = chat_args(
            &sim.http_url(),
            &run,
            &[
                "--accuracy-benchmark",
                "mmlu",
                "--accuracy-dataset",
                q,
                "--concurrency",
                "2",
                "--slo",
                "accuracy>=90%",
            ],
        );
        let out = profile(&a).await.unwrap();
        let passed = out.levels[0].slo.iter().all(|r| r.passed);
        assert_eq!(passed, name == "good", "{name}: {:?}", out.levels[0].slo);
        runs.push(out.levels[0].dir.clone());
    }
    let (code, stdout, stderr) = run_bin(
        &args(&[
            "compare",
            runs[0].to_str().unwrap(),
            runs[1].to_str().unwrap(),
            "--threshold",
            "accuracy:-5pp",
        ]),
        &[],
    )
    .await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("accuracy"), "{stdout}");
}

/// Parquet files in the hub cache's layout (`datasets--cais--mmlu/snapshots/<rev>/all/`, with
/// its dev split for the examples) and Arrow IPC streams in the `datasets` library's cache
/// (`openai___gsm8k/main/<version>/<hash>/gsm8k-test.arrow`), found by dataset name through
/// HF_HOME by the binary, graded like their JSONL rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parquet_and_arrow_in_hugging_face_caches() {
    let home = tempfile::tempdir().unwrap();
    let snap = home
        .path()
        .join("hub/datasets--cais--mmlu/snapshots/0123abc/all");
    std::fs::create_dir_all(&snap).unwrap();
    write_mmlu_parquet(
        &fixture("mmlu.jsonl"),
        &snap.join("test-00000-of-00001.parquet"),
    );
    write_mmlu_parquet(
        &fixture("mmlu.jsonl"),
        &snap.join("dev-00000-of-00001.parquet"),
    );
    let build = home
        .path()
        .join("datasets/openai___gsm8k/main/0.0.0/5f8ee1e4");
    std::fs::create_dir_all(&build).unwrap();
    write_gsm8k_arrow(&fixture("gsm8k.jsonl"), &build.join("gsm8k-test.arrow"));
    write_gsm8k_arrow(&fixture("gsm8k.jsonl"), &build.join("gsm8k-train.arrow"));
    for (benchmark, key, endpoint, graded) in [
        ("mmlu", fixture("mmlu.jsonl"), "chat", 6),
        ("gsm8k", fixture("gsm8k.jsonl"), "completions", 4),
    ] {
        let sim = sim_for(&key, benchmark, &[]).await;
        let out = home.path().join(format!("run-{benchmark}"));
        let a = args(&[
            "profile",
            "-m",
            "gpt2",
            "--endpoint-type",
            endpoint,
            "-u",
            &sim.http_url(),
            "--artifact-dir",
            out.to_str().unwrap(),
            "--accuracy-benchmark",
            benchmark,
            "--accuracy-n-shots",
            "3",
            "--output",
            "json",
            "--ui",
            "none",
        ]);
        let (code, stdout, stderr) =
            run_bin(&a, &[("HF_HOME", home.path()), ("HOME", home.path())]).await;
        assert_eq!(code, 0, "{benchmark}: {stderr}");
        let level: Value = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v.get("accuracy").is_some())
            .unwrap_or_else(|| panic!("{benchmark}: no level line in {stdout}"));
        assert_eq!(level["accuracy"]["graded"], graded, "{benchmark}: {level}");
        assert_eq!(level["accuracy"]["avg"], 1.0, "{benchmark}");
    }
}

/// Bad input exits 2 before anything is sent: a row without its answer (the file and line
/// named), a grader that does not exist (the known ones listed), a grader that cannot grade
/// the benchmark's answers, and a dataset that is nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_rows_and_graders_exit_2() {
    let bad = fixture("mmlu_no_answer.jsonl");
    let base = |extra: &[&str]| {
        let mut a = args(&[
            "profile",
            "-m",
            "gpt2",
            "--endpoint-type",
            "chat",
            "-u",
            "127.0.0.1:9",
        ]);
        a.extend(args(extra));
        a
    };
    let cases: [(Vec<String>, &[&str]); 4] = [
        (
            base(&[
                "--accuracy-benchmark",
                "mmlu",
                "--accuracy-dataset",
                bad.to_str().unwrap(),
            ]),
            &["mmlu_no_answer.jsonl:4", "has no `answer`"],
        ),
        (
            base(&["--accuracy-benchmark", "mmlu", "--accuracy-grader", "math"]),
            &["'math'", "multiple_choice", "exact_match", "numeric"],
        ),
        (
            base(&[
                "--accuracy-benchmark",
                "mmlu",
                "--accuracy-dataset",
                fixture("mmlu.jsonl").to_str().unwrap(),
                "--accuracy-grader",
                "numeric",
            ]),
            &[
                "cannot grade mmlu's answers",
                "graders that can: multiple_choice, exact_match",
            ],
        ),
        (
            base(&[
                "--accuracy-benchmark",
                "gsm8k",
                "--accuracy-dataset",
                "nobody/nothing",
            ]),
            &[
                "nobody/nothing",
                "datasets--nobody--nothing",
                "huggingface-cli download",
            ],
        ),
    ];
    let empty = tempfile::tempdir().unwrap();
    for (a, wanted) in cases {
        let (code, _, stderr) =
            run_bin(&a, &[("HF_HOME", empty.path()), ("HOME", empty.path())]).await;
        assert_eq!(code, 2, "{a:?}: {stderr}");
        for w in wanted {
            assert!(stderr.contains(w), "{a:?}: {w:?} not in {stderr}");
        }
    }
}

/// The fixture's MMLU rows as a Parquet file (`question`, `subject`, `choices` as a list of
/// strings, `answer` as int64: the hub's column types), Snappy-compressed.
fn write_mmlu_parquet(jsonl: &Path, out: &Path) {
    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    let rows = json_rows(jsonl);
    let text = |k: &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r[k].as_str().unwrap().to_string()),
        ))
    };
    let mut choices = ListBuilder::new(StringBuilder::new());
    for r in &rows {
        for c in r["choices"].as_array().unwrap() {
            choices.values().append_value(c.as_str().unwrap());
        }
        choices.append(true);
    }
    let answer: ArrayRef = Arc::new(Int64Array::from_iter_values(
        rows.iter().map(|r| r["answer"].as_i64().unwrap()),
    ));
    let batch = RecordBatch::try_from_iter([
        ("question", text("question")),
        ("subject", text("subject")),
        ("choices", Arc::new(choices.finish()) as ArrayRef),
        ("answer", answer),
    ])
    .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(out).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// The fixture's GSM8K rows as an Arrow IPC stream, as the `datasets` library caches them.
fn write_gsm8k_arrow(jsonl: &Path, out: &Path) {
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    let rows = json_rows(jsonl);
    let col = |k: &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r[k].as_str().unwrap().to_string()),
        ))
    };
    let batch =
        RecordBatch::try_from_iter([("question", col("question")), ("answer", col("answer"))])
            .unwrap();
    let file = std::fs::File::create(out).unwrap();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(file, &batch.schema()).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
}

fn json_rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
