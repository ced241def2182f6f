//! The live view (issue 14.2) through the binary against the simulator, with stderr a pipe as
//! in CI: plain lines, at most one every five seconds, and one final line per level, for
//! `profile` and `perf` alike (one engine); no escape codes; nothing with `--ui none` or
//! `--quiet`. What a terminal shows is tested as text in `report::live` and `engine::live`.

use crate::common;

use common::{args, chat_args, run_bin, start_round};

/// A streamed chat level of `level` flags against the simulator's gpt2.
fn chat(url: &str, dir: &std::path::Path, level: &[&str]) -> Vec<String> {
    let small = [
        "--synthetic-input-tokens-mean",
        "20",
        "--output-tokens-mean",
        "8",
        "--num-prompts",
        "4",
    ];
    let mut a = args(&["profile"]);
    a.extend(chat_args(url, dir, &[&small, level].concat()));
    a
}

/// The lines of the live view in `stderr`: they start with `level N/M`.
fn live_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("level ")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_periodic_lines_when_stderr_is_not_a_terminal() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let a = chat(
        &sim.http_url(),
        tmp.path(),
        &["--concurrency", "2", "--duration", "7"],
    );
    let (code, _, stderr) = run_bin(&a, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains('\x1b'),
        "no escape codes in a log: {stderr:?}"
    );
    let lines = live_lines(&stderr);
    // About 7.5 s from the level's start to its end: a line at 5 s (one more at 10 s on a
    // machine slow to start the measurement). profile says the level itself, once: the view
    // leaves no final line beside it.
    assert!((1..=2).contains(&lines.len()), "{stderr}");
    for p in &lines {
        assert!(
            p.starts_with("level 1/1 concurrency2 at ")
                && p.contains(" of 7.0 s, ")
                && p.contains(" in flight, 0 errors, TTFT p50 ")
                && p.contains(" tok/s, "),
            "{stderr}"
        );
    }
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("concurrency2: "))
        .collect();
    assert_eq!(said.len(), 1, "the level said once: {stderr}");
    assert!(
        said[0].contains(" requests, 0 errors, TTFT avg "),
        "{stderr}"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_none_and_quiet_print_no_live_lines() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let level = ["--concurrency", "1,2", "--request-count", "4"];
    let url = sim.http_url();
    let (code, _, stderr) = run_bin(&chat(&url, &tmp.path().join("a"), &level), &[]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        live_lines(&stderr).is_empty(),
        "no final lines beside profile's: {stderr}"
    );
    for level in ["concurrency1: 4 requests", "concurrency2: 4 requests"] {
        assert_eq!(stderr.matches(level).count(), 1, "{stderr}");
    }
    for off in [["--ui", "none"], ["--quiet", "--ui=compact"]] {
        let mut a = chat(&url, &tmp.path().join(off[0].trim_matches('-')), &level);
        a.extend(args(&off));
        let (code, stdout, stderr) = run_bin(&a, &[]).await;
        assert_eq!(code, 0, "{stderr}");
        assert!(live_lines(&stderr).is_empty(), "{off:?}: {stderr}");
        assert!(stdout.contains("Concurrency"), "the table still: {stdout}");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn perf_gets_the_same_view() {
    let sim = common::start(ttftbench::sim::SimConfig::default()).await;
    let a = args(&[
        "perf",
        "-m",
        "bert_classifier",
        "-u",
        &sim.grpc_target(),
        "--concurrency-range",
        "1:2",
        "--measurement-interval",
        "300",
    ]);
    let (code, stdout, stderr) = run_bin(&a, &[]).await;
    assert_eq!(code, 0, "{stderr}");
    let lines = live_lines(&stderr);
    assert_eq!(lines.len(), 2, "{stderr}");
    for (line, name) in lines
        .iter()
        .zip(["level 1/2 concurrency1", "level 2/2 concurrency2"])
    {
        // Not streamed: request latency instead of TTFT, and no tokens.
        assert!(
            line.starts_with(&format!("{name} done in "))
                && line.contains(" requests, 0 errors, latency p50 ")
                && line.ends_with(" req/s"),
            "{stderr}"
        );
    }
    assert!(
        live_lines(&stdout).is_empty(),
        "perf_analyzer's report on stdout stays as it was: {stdout}"
    );
    sim.shutdown().await;
}
