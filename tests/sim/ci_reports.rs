//! Results where CI systems and dashboards read them (issue 21), through the binary against the
//! simulator: `--junit` validated against the Jenkins xUnit plugin's JUnit schema with
//! `xmllint`, the GitHub step summary with `GITHUB_STEP_SUMMARY` set, `--output json` parsed
//! from stdout alone, pushes received by a test Pushgateway, and a bad `--junit` path refused
//! before any request.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{args, chat_args, run_bin, start_round};
use serde_json::Value;

/// A short two-level chat sweep against the simulator's gpt2 with two objectives: TTFT under
/// 10 s (passes) and a throughput no server reaches (fails).
fn sweep(url: &str, dir: &Path) -> Vec<String> {
    let mut a = args(&["profile"]);
    a.extend(chat_args(
        url,
        dir,
        &[
            "--synthetic-input-tokens-mean",
            "20",
            "--output-tokens-mean",
            "4",
            "--num-prompts",
            "4",
            "--request-count",
            "4",
            "--concurrency",
            "1,2",
            "--slo",
            "time_to_first_token.p99<=10s",
            "--slo",
            "request_throughput>=1000000",
        ],
    ));
    a
}

fn with(mut a: Vec<String>, more: &[&str]) -> Vec<String> {
    a.extend(args(more));
    a
}

/// Validates `file` against the vendored JUnit schema with `xmllint`. Without `xmllint` (Debian
/// package `libxml2-utils`) the check is skipped with a message, unless
/// `TTFTBENCH_REQUIRE_XMLLINT=1` (CI) makes that a failure.
fn assert_valid_junit(file: &Path) {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit/junit-10.xsd");
    let out = match std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&xsd)
        .arg(file)
        .output()
    {
        Ok(o) => o,
        Err(e) if std::env::var_os("TTFTBENCH_REQUIRE_XMLLINT").is_some() => {
            panic!("xmllint is required (TTFTBENCH_REQUIRE_XMLLINT) but cannot run: {e}")
        }
        Err(e) => {
            eprintln!(
                "SKIPPED schema validation of {}: xmllint cannot run ({e}); install libxml2-utils",
                file.display()
            );
            return;
        }
    };
    assert!(
        out.status.success(),
        "{} is not valid JUnit XML: {}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `<testcase ...>` opening line named `name` in `suite`, and whether a `<failure` follows.
fn case(xml: &str, suite: &str, name: &str) -> Option<bool> {
    let start = xml.find(&format!("<testsuite name=\"{suite}\""))?;
    let body = &xml[start..start + xml[start..].find("</testsuite>")?];
    let at = body.find(&format!("name=\"{name}\">"))?;
    let rest = &body[at..];
    let end = rest.find("</testcase>")?;
    Some(rest[..end].contains("<failure"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junit_and_step_summary_for_profile_and_compare() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("junit.xml");
    let summary = tmp.path().join("step_summary.md");
    std::fs::write(&summary, "## an earlier step\n").unwrap();
    let env = [("GITHUB_STEP_SUMMARY", summary.as_path())];
    let (code, _, stderr) = run_bin(
        &with(
            sweep(&sim.http_url(), &tmp.path().join("a")),
            &["--junit", junit.to_str().unwrap()],
        ),
        &env,
    )
    .await;
    assert_eq!(code, 1, "an objective failed: {stderr}");
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    for level in ["concurrency1", "concurrency2"] {
        let ttft = "time_to_first_token.p99&lt;=10000ms";
        assert_eq!(
            case(&xml, level, ttft),
            Some(false),
            "{level} passes: {xml}"
        );
        let tput = "request_throughput&gt;=1000000";
        assert_eq!(case(&xml, level, tput), Some(true), "{level} fails: {xml}");
        assert!(case(&xml, level, "trustworthy").is_some(), "{xml}");
    }
    assert!(xml.contains("breaks &gt;= 1000000"), "{xml}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("## an earlier step\n## ttftbench profile: `gpt2`\n"),
        "{md}"
    );
    for want in [
        "| concurrency1 | 4 | 0 |",
        "| concurrency2 | 4 | 0 |",
        "| concurrency2 | `request_throughput>=1000000` |",
        "**Knee:**",
        "Exit code 1.",
    ] {
        assert!(md.contains(want), "{want:?} in {md}");
    }

    // A second run, then compare the two: one case per limit per level.
    let (code, _, stderr) = run_bin(&sweep(&sim.http_url(), &tmp.path().join("b")), &[]).await;
    assert_eq!(code, 1, "{stderr}");
    let cmp_junit = tmp.path().join("compare.xml");
    let (code, stdout, stderr) = run_bin(
        &args(&[
            "compare",
            tmp.path().join("a").to_str().unwrap(),
            tmp.path().join("b").to_str().unwrap(),
            "--max-p99-increase",
            "100000%",
            "--threshold",
            "request_throughput:-0.000001%",
            "--junit",
            cmp_junit.to_str().unwrap(),
        ]),
        &env,
    )
    .await;
    assert!(code == 0 || code == 1, "{stdout}{stderr}");
    assert_valid_junit(&cmp_junit);
    let xml = std::fs::read_to_string(&cmp_junit).unwrap();
    assert!(
        case(&xml, "concurrency1", "time_to_first_token.p99:+100000%") == Some(false),
        "{xml}"
    );
    assert!(
        case(&xml, "concurrency2", "request_latency.p99:+100000%") == Some(false),
        "{xml}"
    );
    assert!(
        case(&xml, "concurrency1", "request_throughput:-0.000001%").is_some(),
        "{xml}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("### ttftbench compare:"), "{md}");
    sim.shutdown().await;
}

/// Every stdout line is one JSON object: levels with the fields of their JSON files, then the
/// summary; the console table went to stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_json_is_stdout_alone() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run_bin(
        &with(
            sweep(&sim.http_url(), &tmp.path().join("run")),
            &["--output", "json"],
        ),
        &[],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert_eq!(lines.len(), 3, "two levels and a summary: {stdout}");
    for (line, level) in lines.iter().zip(["concurrency1", "concurrency2"]) {
        let file = find_file(
            &tmp.path().join("run"),
            level,
            "profile_export_genai_perf.json",
        );
        let on_disk: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(line),
            keys(&on_disk),
            "{level}: the level file's fields"
        );
        assert_eq!(line["request_throughput"], on_disk["request_throughput"]);
    }
    let s = &lines[2];
    assert_eq!(s["type"], "run_summary");
    assert_eq!(
        s["levels"],
        serde_json::json!(["concurrency1", "concurrency2"])
    );
    assert_eq!(
        (s["exit_code"].as_u64(), s["slo_failed"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(
        stderr.contains("SLO request_throughput>=1000000"),
        "{stderr}"
    );

    // perf: its perf_analyzer report moves to stderr too.
    let junit = tmp.path().join("perf.xml");
    let (code, stdout, stderr) = run_bin(
        &args(&[
            "perf",
            "-m",
            "bert_classifier",
            "-u",
            &sim.grpc_target(),
            "--request-count",
            "5",
            "--slo",
            "request_latency.p99<=60s",
            "--output",
            "json",
            "--junit",
            junit.to_str().unwrap(),
        ]),
        &[],
    )
    .await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0]["level"], "concurrency1");
    assert_eq!(lines[0]["request_count"], 5);
    assert_eq!(lines[0]["slo"][0]["passed"], true);
    assert_eq!(
        (lines[1]["type"].as_str(), lines[1]["mode"].as_str()),
        (Some("run_summary"), Some("perf"))
    );
    assert!(stderr.contains("Concurrency: 1"), "{stderr}");
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(
        case(&xml, "concurrency1", "request_latency.p99&lt;=60000ms"),
        Some(false),
        "{xml}"
    );
    sim.shutdown().await;
}

/// `file` in the directory of level `level` (`<model>-concurrency1`) under `root`.
fn find_file(root: &Path, level: &str, file: &str) -> PathBuf {
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                let named = name == level || name.ends_with(&format!("-{level}"));
                if named && p.join(file).exists() {
                    return p.join(file);
                }
                stack.push(p);
            }
        }
    }
    panic!("no {level}/{file} under {}", root.display())
}

/// What the test gateway received: (path, content type, body) per push.
type Pushes = Arc<Mutex<Vec<(String, String, String)>>>;

/// A Pushgateway stand-in on a free port that records every PUT.
async fn gateway() -> (String, Pushes) {
    use axum::{Router, extract::State, http::HeaderMap, http::Uri, routing::put};
    let seen: Pushes = Arc::default();
    let app = Router::new()
        .route(
            "/metrics/{*group}",
            put(
                |State(s): State<Pushes>, uri: Uri, h: HeaderMap, body: String| async move {
                    let ct = h
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    s.lock().unwrap().push((uri.path().to_string(), ct, body));
                    ""
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

/// One sample line: metric name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

/// Checks one exposition-format body line by line: HELP and TYPE before a family's samples,
/// valid metric and label names, well-formed escapes in label values, numeric values.
fn check_exposition(body: &str) -> Vec<Sample> {
    let name_ok = |n: &str| {
        let mut c = n.chars();
        c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
            && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
    };
    let mut typed = std::collections::HashSet::new();
    let mut samples = Vec::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(name_ok(name) && kind == "gauge", "{line}");
            typed.insert(name.to_string());
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (head, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value in {line}"));
        let (name, labels) = match head.split_once('{') {
            Some((n, l)) => (n, parse_labels(l.strip_suffix('}').expect(line))),
            None => (head, vec![]),
        };
        assert!(name_ok(name), "metric name {name:?}");
        assert!(typed.contains(name), "TYPE before samples: {line}");
        for (k, _) in &labels {
            assert!(name_ok(k) && !k.contains(':'), "label name {k:?}");
        }
        samples.push((name.to_string(), labels, value));
    }
    samples
}

/// `a="x",b="y\"z"` → pairs, unescaping `\\`, `\"` and `\n`; panics on anything else.
fn parse_labels(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while chars.peek().is_some() {
        let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
        assert_eq!(chars.next(), Some('"'), "quote after {key}= in {s}");
        let mut v = String::new();
        loop {
            match chars.next().expect("closing quote") {
                '\\' => v.push(match chars.next() {
                    Some('\\') => '\\',
                    Some('"') => '"',
                    Some('n') => '\n',
                    other => panic!("bad escape {other:?} in {s}"),
                }),
                '"' => break,
                '\n' => panic!("raw newline in {s}"),
                c => v.push(c),
            }
        }
        out.push((key, v));
        if chars.peek() == Some(&',') {
            chars.next();
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_level_is_pushed_and_an_unreachable_gateway_only_warns() {
    let sim = start_round().await;
    let tmp = tempfile::tempdir().unwrap();
    let (url, seen) = gateway().await;
    let a = with(
        sweep(&sim.http_url(), &tmp.path().join("run")),
        &["--push-gateway", &url],
    );
    let out = common::profile(&a[1..]).await.unwrap();
    assert_eq!(out.levels.len(), 2);
    let pushes = seen.lock().unwrap().clone();
    assert_eq!(pushes.len(), 2, "one push per level");
    for ((path, ct, body), level) in pushes.iter().zip(["concurrency1", "concurrency2"]) {
        assert!(
            path.starts_with("/metrics/job/ttftbench/instance/")
                && path.ends_with(&format!("/model/gpt2/level/{level}")),
            "{path}"
        );
        assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
        let samples = check_exposition(body);
        let get = |n: &str, stat: Option<&str>| {
            samples
                .iter()
                .find(|(name, l, _)| {
                    name == n && stat.is_none_or(|s| l.iter().any(|(k, v)| k == "stat" && v == s))
                })
                .map(|s| s.2)
                .unwrap_or_else(|| panic!("{n} {stat:?} in {body}"))
        };
        let ttft = get("ttftbench_time_to_first_token_seconds", Some("p99"));
        assert!(ttft > 0.0 && ttft < 10.0, "seconds: {ttft}");
        get("ttftbench_inter_token_latency_seconds", Some("avg"));
        get("ttftbench_request_latency_seconds", Some("p50"));
        assert!(get("ttftbench_output_token_throughput", None) > 0.0);
        assert_eq!(get("ttftbench_requests", None), 4.0);
        assert_eq!(get("ttftbench_errors", None), 0.0);
        assert_eq!(get("ttftbench_error_ratio", None), 0.0);
        let valid = get("ttftbench_valid", None);
        assert!(valid == 0.0 || valid == 1.0);
        assert!(
            body.contains("ttftbench_load{kind=\"concurrency\"}"),
            "{body}"
        );
    }

    // Nothing listens on a port just freed: each level warns once, the run still ends normally.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (code, _, stderr) = run_bin(
        &with(
            sweep(&sim.http_url(), &tmp.path().join("dead")),
            &["--push-gateway", &dead],
        ),
        &[],
    )
    .await;
    assert_eq!(code, 1, "the objective's failure, not the push's: {stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("warning: pushing level"))
        .collect();
    assert_eq!(warnings.len(), 2, "{stderr}");
    assert!(warnings[0].contains("concurrency1") && warnings[1].contains("concurrency2"));
    assert!(
        find_file(
            &tmp.path().join("dead"),
            "concurrency2",
            "profile_export_genai_perf.json"
        )
        .exists()
    );
    sim.shutdown().await;
}

/// An unwritable `--junit` path ends the run with exit code 2 before a connection is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unwritable_junit_path_is_refused_before_any_request() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("missing/dir/junit.xml");
    for cmd in [
        args(&[
            "profile",
            "-m",
            "gpt2",
            "--endpoint-type",
            "chat",
            "-u",
            &addr,
        ]),
        args(&["perf", "-m", "bert_classifier", "-i", "http", "-u", &addr]),
    ] {
        let (code, _, stderr) = run_bin(&with(cmd, &["--junit", bad.to_str().unwrap()]), &[]).await;
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains("--junit") && stderr.contains("does not exist"),
            "{stderr}"
        );
    }
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "no connection was made"
    );
}
