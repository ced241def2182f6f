//! The binary as users run it: exit codes (0 ok, 1 run failed, 2 usage error), messages that say
//! what to change, `serve` printing its bound ports, and the seeds' command lines end to end.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common;

use common::bin;

fn run(args: &[&str]) -> (i32, String, String) {
    common::run_in(args, std::path::Path::new("."))
}

/// `profile -m gpt2 --endpoint-type generate --streaming -u HTTP` with `extra` flags: the
/// simulator's Triton generate endpoint over HTTP.
fn profile_generate(http: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec![
        "profile",
        "-m",
        "gpt2",
        "--endpoint-type",
        "generate",
        "--streaming",
        "-u",
        http,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// `ttftbench serve` on free ports; returns the child and its (http, grpc, metrics) addresses.
fn serve(extra: &[&str]) -> (Child, String, String, String) {
    let mut child = bin()
        .args([
            "serve",
            "--address",
            "127.0.0.1",
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--metrics-port",
            "0",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addr = |prefix: &str| -> String {
        loop {
            let line = lines.next().expect("serve prints its addresses").unwrap();
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.trim().rsplit(' ').next().unwrap().to_string();
            }
        }
    };
    let http = addr("HTTP");
    let grpc = addr("gRPC");
    let metrics = addr("metrics");
    // Keep draining stdout so the server never writes into a closed pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, http, grpc, metrics)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn usage_errors_exit_2_with_a_reason() {
    let cases: &[(&[&str], &str)] = &[
        (&["profile"], "--model"),
        (
            &["profile", "-m", "gpt2", "--concurrency", "0"],
            "at least 1",
        ),
        (
            &["profile", "-m", "gpt2", "--concurrency", "8:4"],
            "below the start",
        ),
        (
            &["profile", "-m", "gpt2", "--concurrency", "lots"],
            "not a positive whole number",
        ),
        (
            &[
                "profile",
                "-m",
                "gpt2",
                "--request-count",
                "5",
                "--measurement-interval",
                "100",
            ],
            "give one of them",
        ),
        (
            &[
                "profile",
                "-m",
                "gpt2",
                "--endpoint-type",
                "chat",
                "--backend",
                "vllm",
            ],
            "--backend only applies",
        ),
        (
            &["profile", "-m", "gpt2", "--goodput", "speed:5"],
            "unknown metric",
        ),
        (&["profile", "-m", "gpt2", "-H", "no-colon"], "Name: value"),
        (
            &["profile", "-m", "gpt2", "--endpoint-type", "nope"],
            "invalid value",
        ),
        (
            &[
                "profile",
                "-m",
                "gpt2",
                "--output-tokens-mean-deterministic",
            ],
            "--output-tokens-mean N",
        ),
        (
            &["profile", "-m", "gpt2", "--bogus-flag"],
            "unexpected argument",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected '{needle}' in: {err}"
        );
    }
}

#[test]
fn unreachable_server_exits_1() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, _, err) = run(&[
        "profile",
        "-m",
        "gpt2",
        "-u",
        &format!("127.0.0.1:{port}"),
        "--streaming",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("cannot connect") && err.contains("8001"),
        "{err}"
    );
}

#[test]
fn seed_commands_against_serve() {
    let (child, http, grpc, metrics) = serve(&["--instant"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ttft_c1");
    // The seeds' single-level command (gRPC), with a short window for the test.
    let (code, out, err) = run(&[
        "profile",
        "-m",
        "gpt2",
        "--service-kind",
        "triton",
        "--backend",
        "tensorrtllm",
        "--num-prompts",
        "20",
        "--synthetic-input-tokens-mean",
        "200",
        "--synthetic-input-tokens-stddev",
        "20",
        "--output-tokens-mean",
        "100",
        "--output-tokens-stddev",
        "10",
        "--concurrency",
        "1",
        "--measurement-interval",
        "300",
        "--streaming",
        "--url",
        &grpc,
        "--artifact-dir",
        dir.to_str().unwrap(),
        "--server-metrics-url",
        &format!("http://{metrics}/metrics"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("TTFT avg (ms)"), "{out}");
    let csv = std::fs::read_to_string(dir.join("profile_export_genai_perf.csv")).unwrap();
    // column -s, -t ./ttft_c1/profile_export_genai_perf.csv | grep -i first_token
    let hits: Vec<&str> = csv
        .lines()
        .filter(|l| l.to_lowercase().contains("first_token"))
        .collect();
    assert_eq!(hits.len(), 1, "{csv}");
    assert!(dir.join("profile_export_genai_perf.json").exists());
    assert!(dir.join("requests.jsonl").exists());

    // OpenAI chat over HTTP, --service-kind openai, -u with a scheme.
    let dir2 = tmp.path().join("chat");
    let (code, _, err) = run(&[
        "profile",
        "-m",
        "gpt2",
        "--service-kind",
        "openai",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &format!("http://{http}"),
        "--num-prompts",
        "10",
        "--output-tokens-mean",
        "5",
        "--artifact-dir",
        dir2.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(dir2.join("requests.jsonl"))
            .unwrap()
            .lines()
            .count(),
        10,
        "--num-prompts 10 alone measures 10 requests"
    );
}

#[test]
fn every_request_failing_exits_1_with_artifacts() {
    let (child, http, _grpc, _metrics) = serve(&["--instant", "--fault-unavailable"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("down");
    let (code, _out, err) = profile_generate(
        &http,
        &[
            "--request-count",
            "3",
            "--artifact-dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("http_503"), "{err}");
    assert!(err.contains("every request failed"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("requests.jsonl"))
            .unwrap()
            .lines()
            .count(),
        3
    );
    assert!(dir.join("profile_export_genai_perf.json").exists());
}

/// `--artifact-dir` under a regular file: refused as a usage mistake before any request is sent
/// (the simulator's statistics count no inference).
#[test]
fn unwritable_artifact_dir_exits_2_before_sending() {
    let (child, http, _grpc, _metrics) = serve(&["--instant"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let dir = file.join("results");
    let (code, _out, err) = profile_generate(
        &http,
        &[
            "--request-count",
            "3",
            "--artifact-dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--artifact-dir") && err.contains("nothing was sent"),
        "{err}"
    );
    let stats = http_get(&http, "/v2/models/gpt2/stats");
    assert!(stats.contains("\"inference_count\":0"), "{stats}");
}

/// Found by a new user: `--concurrency 1,2 --artifact-dir 'mid/c{concurrency}'` with a file at
/// `mid/c2` ran level 1, then failed with exit 1 and no table. Every level's directory is
/// checked before the first request.
#[test]
fn a_later_levels_artifact_dir_is_checked_before_sending() {
    let (child, http, _grpc, _metrics) = serve(&["--instant"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("mid")).unwrap();
    std::fs::write(tmp.path().join("mid/c2"), "x").unwrap();
    let template = tmp.path().join("mid/c{concurrency}");
    let (code, _out, err) = profile_generate(
        &http,
        &[
            "--concurrency",
            "1,2",
            "--request-count",
            "3",
            "--artifact-dir",
            template.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{err}");
    let blocked = tmp.path().join("mid/c2");
    assert!(
        err.contains(&format!("{} is a file, not a directory", blocked.display()))
            && err.contains("nothing was sent"),
        "{err}"
    );
    let stats = http_get(&http, "/v2/models/gpt2/stats");
    assert!(stats.contains("\"inference_count\":0"), "{stats}");
    // The check leaves nothing behind: no probe file, no directory for a level that never ran.
    let left: Vec<_> = std::fs::read_dir(tmp.path().join("mid"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// Found by a new user: the parser's tips, followed, changed the run or failed again
/// (`--streming` → `-- --streming` ran without streaming and exited 0; `--request-rate -3` →
/// `-- -3`). A list's empty item and a zero step are refused by name.
#[test]
fn flag_mistakes_are_named_and_no_tip_changes_the_run() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["profile", "-m", "gpt2", "--streming"],
            &["a similar argument exists: '--streaming'"],
        ),
        (
            &["profile", "-m", "gpt2", "--request-rate", "-3"],
            &["--request-rate -3: rates must be positive"],
        ),
        (
            &["profile", "-m", "gpt2", "--concurrency", "-4"],
            &["--concurrency -4: levels must be positive"],
        ),
        (
            &["profile", "-m", "gpt2", "--request-count", "-3"],
            &["'-3' is negative: --request-count must be positive"],
        ),
        (
            &["profile", "-m", "gpt2", "--concurrency", "1,,4"],
            &["--concurrency 1,,4: item 2 of the list is empty"],
        ),
        (
            &["profile", "-m", "gpt2", "--concurrency", "1:32:0"],
            &["--concurrency 1:32:0: the step is '0'"],
        ),
        (
            &["profile", "-m", "gpt2", "--request-rate", "5,,20"],
            &["--request-rate 5,,20: item 2 of the list is empty"],
        ),
        (
            &["profile", "-m", "gpt2", "--request-rate", "1:8:0"],
            &["--request-rate 1:8:0: the step is '0'"],
        ),
        (
            &["perf", "-m", "yolov8s", "--concurrency-range", "1:8:0"],
            &["--concurrency-range 1:8:0: the step is 0"],
        ),
        (
            &["perf", "-m", "yolov8s", "--request-rate-range", "-5"],
            &["--request-rate-range -5: values must be positive"],
        ),
        (
            &["search", "-m", "gpt2", "--sloo", "ttft.p99<=1s"],
            &["a similar argument exists: '--slo'"],
        ),
    ];
    for (args, needles) in cases {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        for needle in *needles {
            assert!(
                err.contains(needle),
                "{args:?}: expected '{needle}' in: {err}"
            );
        }
        assert!(!err.contains("use '--"), "{args:?}: a `--` tip: {err}");
        assert!(
            !err.contains("levels must be at least 1"),
            "{args:?}: {err}"
        );
    }
}

/// `-h` fits one screen with the flags most runs set; `--help` keeps every flag, those first.
#[test]
fn short_help_fits_a_screen_and_long_help_keeps_every_flag() {
    for (sub, first, later) in [
        (
            "profile",
            &[
                "--model",
                "--url",
                "--endpoint-type",
                "--streaming",
                "--concurrency",
                "--request-rate",
                "--request-count",
                "--measurement-interval",
                "--synthetic-input-tokens-mean",
                "--output-tokens-mean",
                "--artifact-dir",
                "--slo",
                "--input-file",
                "--api-key",
            ][..],
            &["--burstiness", "--tcp-quickack", "--shard", "--raw-export"][..],
        ),
        (
            "search",
            &["--model", "--slo", "--over", "--max", "--streaming"][..],
            &["--tcp-quickack", "--resolution"][..],
        ),
        (
            "perf",
            &[
                "--model-name",
                "--concurrency-range",
                "--request-rate-range",
                "--shape",
                "--input-data",
                "--measurement-interval",
                "--latency-report-file",
            ][..],
            &["--max-trials", "--ssl-grpc-use-ssl", "--verbose-csv"][..],
        ),
    ] {
        let (code, short, err) = run(&[sub, "-h"]);
        assert_eq!(code, 0, "{err}");
        let lines = short.lines().count();
        assert!(lines <= 60, "{sub} -h is {lines} lines:\n{short}");
        for f in first {
            assert!(short.contains(f), "{sub} -h lacks {f}:\n{short}");
        }
        for f in later {
            assert!(!short.contains(f), "{sub} -h shows {f}:\n{short}");
        }
        assert!(short.contains("see more with '--help'"), "{short}");
        let (_, long, _) = run(&[sub, "--help"]);
        for f in first.iter().chain(later) {
            assert!(long.contains(f), "{sub} --help lacks {f}");
        }
        // Under Target, the flags -h shows come before the others (TLS, which is declared
        // between them in the code).
        let at = |flag: &str| long.find(flag).unwrap_or_else(|| panic!("{flag}: {long}"));
        assert!(at("\nTarget:\n") < at("--url <URL>"), "{long}");
        assert!(at("--url <URL>") < at("--cacert <FILE>"), "{long}");
        assert!(at("--streaming") < at("--cacert <FILE>"), "{long}");
    }
}

/// A GenAI-Perf command line copied with `--generate-plots` and perf_analyzer arguments after
/// `--`: the measurement interval is read, the rest is named as ignored, and one level gets its
/// report.html.
#[test]
fn genai_perf_plots_flag_and_perf_analyzer_arguments() {
    let (child, http, _grpc, _metrics) = serve(&["--instant"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("one");
    let (code, _out, err) = profile_generate(
        &http,
        &[
            "--generate-plots",
            "--artifact-dir",
            dir.to_str().unwrap(),
            "--",
            "--measurement-interval",
            "400",
            "--max-threads",
            "4",
            "--shared-memory",
            "none",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("note: -- --max-threads 4: ignored"), "{err}");
    assert!(err.contains("note: -- --shared-memory none"), "{err}");
    assert!(dir.join("report.html").exists());
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("profile_export_genai_perf.json")).unwrap(),
    )
    .unwrap();
    // The interval after `--` became the measurement window (milliseconds in the record).
    assert_eq!(
        doc["input_config"]["stop"]["fixed"]["window"].as_f64(),
        Some(400.0),
        "{}",
        doc["input_config"]["stop"]
    );
}

/// One HTTP/1.1 GET over a fresh connection; the whole response as text.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connects");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf
}

#[test]
fn serve_binds_loopback_unless_told_otherwise() {
    // No --address: every listener is on 127.0.0.1.
    let mut child = bin()
        .args([
            "serve",
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--metrics-port",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let out = child.stdout.take().unwrap();
    let _guard = Killed(child);
    let lines: Vec<String> = BufReader::new(out)
        .lines()
        .map(|l| l.unwrap())
        .take_while(|l| !l.starts_with("models:"))
        .collect();
    let addrs: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("listening on"))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(addrs.len(), 3, "{lines:?}");
    for a in addrs {
        let ip: std::net::SocketAddr = a.parse().expect("an address");
        assert!(ip.ip().is_loopback(), "{a} is not loopback");
    }
    // --address widens it.
    let mut child = bin()
        .args([
            "serve",
            "--address",
            "0.0.0.0",
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            "--metrics-port",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let out = child.stdout.take().unwrap();
    let _guard = Killed(child);
    let http = BufReader::new(out)
        .lines()
        .map(|l| l.unwrap())
        .find(|l| l.starts_with("HTTP"))
        .unwrap();
    assert!(http.contains(" 0.0.0.0:"), "{http}");
}

#[test]
fn serve_metrics_style_and_dcgm_page() {
    let (child, _http, _grpc, metrics) = serve(&[
        "--metrics-style",
        "vllm",
        "--kv-blocks",
        "64",
        "--prefix-caching",
    ]);
    let _guard = Killed(child);
    let page = http_get(&metrics, "/metrics");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.contains("vllm:num_requests_waiting{engine=\"0\",model_name=\"gpt2\"} 0.0"),
        "{page}"
    );
    assert!(page.contains("block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"64\""), "{page}");
    let dcgm = http_get(&metrics, "/dcgm/metrics");
    assert!(dcgm.contains("# TYPE DCGM_FI_DEV_GPU_UTIL gauge"), "{dcgm}");
    let (code, _, err) = run(&["serve", "--metrics-style", "lmdeploy"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("triton") && err.contains("sglang") && err.contains("llamacpp"),
        "{err}"
    );
}

#[test]
fn serve_reports_ports_and_answers_health() {
    let (child, http, _grpc, _metrics) = serve(&[]);
    let _guard = Killed(child);
    let mut ok = false;
    for _ in 0..50 {
        if let Ok(mut s) = std::net::TcpStream::connect(&http) {
            use std::io::{Read, Write};
            s.write_all(b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut buf = String::new();
            let _ = s.read_to_string(&mut buf);
            ok = buf.starts_with("HTTP/1.1 200");
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(ok, "health/ready answers 200");
}

#[test]
fn ctrl_c_stops_sending_and_leaves_complete_artifacts() {
    let (child, http, _grpc, _metrics) = serve(&[]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("interrupted");
    let mut run = bin()
        .arg("profile")
        .args(common::chat_args(
            &http,
            &dir,
            &[
                "--output-tokens-mean",
                "20",
                "--concurrency",
                "4",
                "--duration",
                "60",
                "--quiet",
            ],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the level is under way (startup takes a while in a debug build).
    let rows_file = dir.join("requests.jsonl");
    for _ in 0..300 {
        if std::fs::metadata(&rows_file).is_ok_and(|m| m.len() > 0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(run.id() as i32, libc::SIGINT);
    }
    let started = std::time::Instant::now();
    let status = run.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "in-flight requests get a bounded grace period"
    );
    assert_eq!(status.code(), Some(130));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("profile_export_genai_perf.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["validity"]["interrupted"], true);
    assert_eq!(json["validity"]["trustworthy"], false);
    let rows = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    assert!(rows.lines().count() > 4);
    for line in rows.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("every row is complete JSON");
    }
    assert!(json["request_count"]["avg"].as_u64().unwrap() > 0);
}

/// The guides' 24-hour soak (`perf -m bert_classifier --request-rate-range 100
/// --measurement-interval 86400000 --periodic-concurrency-range 1 -f stability_24h.csv`) ended
/// early with Ctrl-C: exit 130, and the CSV and per-request log cover what was measured.
#[test]
fn perf_soak_ended_by_ctrl_c_writes_its_report() {
    let (child, _http, grpc, _metrics) = serve(&[]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("stability_24h.csv");
    let run = bin()
        .args([
            "perf",
            "-m",
            "bert_classifier",
            "--request-rate-range",
            "100",
            "--measurement-interval",
            "86400000",
            "--periodic-concurrency-range",
            "1",
            "-f",
            csv.to_str().unwrap(),
            "--verbose-csv",
            "-u",
            &grpc,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The auto timeline appears when measuring starts.
    let timeline = tmp.path().join("stability_24h.timeline.csv");
    for _ in 0..300 {
        if timeline.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(2000));
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(run.id() as i32, libc::SIGINT);
    }
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("Request Rate,Inferences/Second,")
    );
    let row: Vec<&str> = lines.next().expect("one row").split(',').collect();
    assert_eq!(row[0], "100");
    let rate: f64 = row[1].parse().unwrap();
    // One-sided on the wall clock: a busy machine can only lower the achieved rate (not below
    // half); above the asked rate would be a pacing bug whatever the machine.
    assert!((50.0..=115.0).contains(&rate), "{text}");
    let log = std::fs::read_to_string(tmp.path().join("stability_24h.requests.jsonl")).unwrap();
    assert!(log.lines().count() >= 100, "two seconds at 100/s");
    for line in log.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("every row is complete JSON");
    }
}

/// A full disk mid-run, made with a file-size limit on the profiling process (`RLIMIT_FSIZE`,
/// with `SIGXFSZ` ignored so a write past it fails with `EFBIG` as on a full disk): the run
/// fails with exit 1 and a message naming `requests.jsonl` and how many lines it saved, and the
/// file ends at its last complete line.
#[test]
fn full_disk_mid_run_names_the_file_and_what_was_saved() {
    use std::os::unix::process::CommandExt;
    let (child, http, _grpc, _metrics) = serve(&["--instant"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("full");
    const LIMIT: u64 = 200 * 1024;
    let mut cmd = bin();
    cmd.args([
        "profile",
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &http,
        "--concurrency",
        "8",
        "--request-count",
        "2000",
        "--output-tokens-mean",
        "4",
        // The raw export (profile_export.json) grows per request too; this test is about
        // requests.jsonl reaching the limit.
        "--raw-export",
        "none",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]);
    // SAFETY: between fork and exec only async-signal-safe calls (setrlimit, signal) are made.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = cmd.output().expect("binary runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("requests.jsonl"), "{err}");
    assert!(err.contains("complete lines"), "{err}");
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    assert!(!text.is_empty() && text.len() as u64 <= LIMIT);
    assert!(text.ends_with('\n'), "ends at a complete line");
    let lines = text.lines().count();
    for l in text.lines() {
        serde_json::from_str::<serde_json::Value>(l).expect("every saved line is whole JSON");
    }
    assert!(
        err.contains(&format!("after {lines} complete lines")),
        "the message counts the {lines} lines saved: {err}"
    );
}

/// Issue 15.1: a gRPC client pointed at the HTTP port, and HTTP clients pointed at the gRPC port,
/// get doctor's diagnosis (the port speaks the other protocol) with the flag that fixes it, exit 2,
/// from `profile` and `perf` alike.
#[test]
fn wrong_port_for_the_protocol_names_the_flag_that_fixes_it() {
    let (child, http, grpc, _metrics) = serve(&[]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["profile", "-m", "gpt2", "-u", &http],
            "--endpoint-type generate",
        ),
        (
            &[
                "profile",
                "-m",
                "gpt2",
                "--endpoint-type",
                "generate",
                "-u",
                &grpc,
            ],
            "--endpoint-type kserve",
        ),
        (
            &[
                "profile",
                "-m",
                "gpt2",
                "--endpoint-type",
                "chat",
                "-u",
                &grpc,
            ],
            "--endpoint-type kserve",
        ),
        (
            &["perf", "-m", "bert_classifier", "-i", "grpc", "-u", &http],
            "-i http",
        ),
        (
            &["perf", "-m", "bert_classifier", "-i", "http", "-u", &grpc],
            "-i grpc",
        ),
    ];
    for (args, fix) in cases {
        let mut argv = args.to_vec();
        if argv[0] == "profile" {
            argv.extend(["--duration", "1", "--artifact-dir", dir]);
        }
        let (code, _out, err) = run(&argv);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(fix), "{args:?} should name {fix}: {err}");
        let other = if fix.contains("kserve") || fix.contains("grpc") {
            "speaks gRPC, not HTTP"
        } else {
            "speaks HTTP, not gRPC"
        };
        assert!(err.contains(other), "{args:?}: {err}");
        assert!(!err.contains("compression flag"), "{args:?}: {err}");
    }
}

/// Issue 15.3: `perf` stopped with Ctrl-C before its first window completes exits 130, writes the
/// partial window to the CSV, says it was interrupted, and does not blame stability.
#[test]
fn perf_ctrl_c_before_the_first_window_reports_the_partial_window() {
    let (child, _http, grpc, _metrics) = serve(&[]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("partial.csv");
    let run = bin()
        .args(["perf", "-m", "bert_classifier", "-u", &grpc])
        .args([
            "--measurement-interval",
            "60000",
            "--verbose-csv",
            "-f",
            csv.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = tmp.path().join("partial.requests.jsonl");
    for _ in 0..300 {
        if std::fs::metadata(&log).is_ok_and(|m| m.len() > 0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(run.id() as i32, libc::SIGINT);
    }
    let out = run.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(text.contains("nterrupted"), "{text}");
    assert!(
        !text.contains("Failed to obtain stable measurement"),
        "{text}"
    );
    let report = std::fs::read_to_string(&csv).expect("the CSV is written");
    let row: Vec<&str> = report.lines().nth(1).expect("one row").split(',').collect();
    assert_eq!(row[0], "1", "{report}");
    assert!(row[1].parse::<f64>().unwrap() > 0.0, "{report}");
}

/// Requests to the simulator's `gpt2` that got their first response so far
/// (`nv_inference_first_response_histogram_ms_count` on `serve`'s metrics address).
fn first_responses(metrics: &str) -> u64 {
    let page = http_get(metrics, "/metrics");
    page.lines()
        .find(|l| l.starts_with("nv_inference_first_response_histogram_ms_count{model=\"gpt2\""))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// Waits until `n` requests to `gpt2` have had their first response (a debug build starts
/// slowly: up to a minute).
fn wait_first_responses(metrics: &str, n: u64) {
    for _ in 0..600 {
        if first_responses(metrics) >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{n} requests never had a first response");
}

/// Sends SIGINT to `child`.
fn ctrl_c(child: &Child) {
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
}

/// A child's exit code and its stdout and stderr together.
fn finished(child: Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// The simulator at 100 ms a token: a request of 30 tokens stays in flight for 3 s, so signals
/// land while requests stream.
const SLOW_DECODE: [&str; 2] = ["--decode-base-us", "100000"];

/// Issue 39.4: `profile --concurrency 8 --request-count 100`, Ctrl-C twice 0.3 s apart while the
/// second eight requests stream: those eight are abandoned — counted apart (JSON, CSV, records,
/// console), not errors, not in the error gate — and the run exits 130.
#[test]
fn second_ctrl_c_abandons_requests_in_flight_apart_from_errors_and_exits_130() {
    let (child, _http, grpc, metrics) = serve(&SLOW_DECODE);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("abandoned");
    let run = bin()
        .args(["profile", "-m", "gpt2", "-u", &grpc, "--streaming"])
        .args(["--concurrency", "8", "--request-count", "100"])
        .args(["--output-tokens-mean", "30", "--warmup-request-count", "0"])
        .args(["--artifact-dir", dir.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first eight finished, the next eight stream.
    wait_first_responses(&metrics, 16);
    ctrl_c(&run);
    std::thread::sleep(Duration::from_millis(300));
    ctrl_c(&run);
    let (code, text) = finished(run);
    assert_eq!(code, Some(130), "{text}");
    assert!(!text.contains("max-error-rate"), "{text}");
    assert!(!text.contains("WARNING"), "{text}");
    assert!(text.contains("8 requests, 0 errors, 8 abandoned"), "{text}");
    let json = common::json_file(&dir.join("profile_export_genai_perf.json"));
    assert_eq!(json["request_count"]["avg"], 8, "{text}");
    assert_eq!(json["error_count"]["avg"], 0);
    assert_eq!(json["errors"], serde_json::json!([]));
    assert_eq!(json["abandoned_count"]["avg"], 8);
    assert_eq!(json["validity"]["interrupted"], true);
    let csv = std::fs::read_to_string(dir.join("profile_export_genai_perf.csv")).unwrap();
    assert!(csv.contains("\nabandoned_count,8,count\n"), "{csv}");
    let rows = common::measured(&dir);
    assert_eq!(rows.len(), 16);
    let abandoned = rows.iter().filter(|r| r["error"] == "abandoned").count();
    assert_eq!(abandoned, 8, "{rows:?}");
    assert!(
        rows.iter()
            .all(|r| r["error"].is_null() || r["error"] == "abandoned")
    );
}

/// Issue 39.4: Ctrl-C once every planned request was sent cuts nothing: the requests in flight
/// finish, and neither the level nor the run is called interrupted (exit 0). In a ladder the
/// same signal leaves the next level unrun: the run is interrupted (130), its first level not.
#[test]
fn ctrl_c_after_the_planned_requests_were_sent_interrupts_only_what_was_not_run() {
    let (child, _http, grpc, metrics) = serve(&SLOW_DECODE);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let profile = |levels: &str, count: &str, dir: &std::path::Path| {
        bin()
            .args(["profile", "-m", "gpt2", "-u", &grpc, "--streaming"])
            .args(["--concurrency", levels, "--request-count", count])
            .args(["--output-tokens-mean", "30", "--warmup-request-count", "0"])
            .args(["--artifact-dir", dir.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let one = tmp.path().join("one");
    let run = profile("5", "5", &one);
    wait_first_responses(&metrics, 5);
    ctrl_c(&run);
    let (code, text) = finished(run);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("nterrupted"), "{text}");
    let json = common::json_file(&one.join("profile_export_genai_perf.json"));
    assert_eq!(json["request_count"]["avg"], 5);
    assert_eq!(json["validity"]["interrupted"], false);
    let ladder = tmp.path().join("ladder");
    let run = profile("3,6", "3", &ladder);
    wait_first_responses(&metrics, 5 + 3);
    ctrl_c(&run);
    let (code, text) = finished(run);
    assert_eq!(code, Some(130), "{text}");
    assert!(text.contains("\ninterrupted: "), "{text}");
    assert!(!text.contains("(interrupted)"), "{text}");
    assert!(!text.contains("the level was interrupted"), "{text}");
    // A sweep's level directories are named GenAI-Perf's way (`MODEL-...-concurrency3`).
    let levels: Vec<String> = std::fs::read_dir(&ladder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("concurrency"))
        .collect();
    let [first] = levels.as_slice() else {
        panic!("one level directory: {levels:?}")
    };
    assert!(first.ends_with("concurrency3"), "{first}");
    let json = common::json_file(&ladder.join(first).join("profile_export_genai_perf.json"));
    assert_eq!(json["request_count"]["avg"], 3);
    assert_eq!(json["validity"]["interrupted"], false);
}

/// Issue 39.4 in `perf` (the guide's streaming LLM run): Ctrl-C once all of `--request-count`
/// was sent is no interruption (exit 0); Ctrl-C twice abandons the requests in flight, which
/// the console and the CSV count apart from errors, and exits 130.
#[test]
fn perf_abandons_on_the_second_ctrl_c_and_is_not_interrupted_by_a_late_first() {
    let (child, _http, grpc, metrics) = serve(&SLOW_DECODE);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("prompts.json");
    std::fs::write(
        &data,
        r#"{"data": [{"text_input": ["Explain what a KV cache is."], "max_tokens": [30], "stream": [true]}]}"#,
    )
    .unwrap();
    let csv = tmp.path().join("perf.csv");
    let perf = |concurrency: &str, count: &str| {
        bin()
            .args(["perf", "-m", "gpt2", "-u", &grpc, "--streaming", "--async"])
            .args(["--input-data", data.to_str().unwrap()])
            .args(["--concurrency-range", concurrency, "--request-count", count])
            .args(["-f", csv.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let run = perf("5", "5");
    wait_first_responses(&metrics, 5);
    ctrl_c(&run);
    let (code, text) = finished(run);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("    Request count: 5\n"), "{text}");
    assert!(!text.contains("nterrupted"), "{text}");
    let run = perf("8", "100");
    wait_first_responses(&metrics, 5 + 16);
    ctrl_c(&run);
    std::thread::sleep(Duration::from_millis(300));
    ctrl_c(&run);
    let (code, text) = finished(run);
    assert_eq!(code, Some(130), "{text}");
    assert!(text.contains("    Request count: 8\n"), "{text}");
    assert!(
        text.contains("    Abandoned requests: 8 (in flight at the second Ctrl-C; left out of the statistics)\n"),
        "{text}"
    );
    assert!(!text.contains("Failed requests"), "{text}");
    assert!(!text.contains("max-error-rate"), "{text}");
    let (head, rows) = common::read_csv(&std::fs::read_to_string(&csv).unwrap());
    assert_eq!(head.last().map(String::as_str), Some("Abandoned Requests"));
    assert_eq!(rows[0]["Abandoned Requests"], "8");
}

/// Issue 15.4: a level where most requests failed fails the run (exit 1) under the default
/// `--max-error-rate 5%`, with a loud line naming the level; `--max-error-rate 100%` accepts it
/// (exit 0) and still prints the line.
#[test]
fn error_share_over_max_error_rate_fails_the_run() {
    let (child, http, _grpc, _metrics) = serve(&["--instant", "--fault-error-rate", "0.7"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let base = [
        "profile",
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        &http,
        "--concurrency",
        "4",
        "--request-count",
        "200",
    ];
    let dir = tmp.path().join("a");
    let mut argv = base.to_vec();
    argv.extend(["--artifact-dir", dir.to_str().unwrap()]);
    let (code, _out, err) = run(&argv);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("WARNING concurrency4: "), "{err}");
    assert!(err.contains("over --max-error-rate 5 %"), "{err}");
    let dir = tmp.path().join("b");
    let mut argv = base.to_vec();
    argv.extend([
        "--artifact-dir",
        dir.to_str().unwrap(),
        "--max-error-rate",
        "100%",
    ]);
    let (code, _out, err) = run(&argv);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("WARNING concurrency4: "), "{err}");
    let (code, _out, err) = run(&[&argv[..], &["--max-error-rate", "150%"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-error-rate"), "{err}");
}

/// Issue 15.5: connections that fail with "Too many open files" are counted as
/// `too_many_open_files` with a hint about the file limit (its value, `ulimit -n`, lower
/// concurrency), not about the server's address; the pre-load check warns first.
#[test]
fn too_many_open_files_hint_is_about_the_file_limit() {
    let (child, http, _grpc, _metrics) = serve(&["--instant"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("emfile");
    let script = format!(
        "ulimit -n 48 && exec {} profile -m gpt2 --endpoint-type chat --streaming -u {http} --concurrency 100 --request-count 300 --artifact-dir {}",
        env!("CARGO_BIN_EXE_ttftbench"),
        dir.display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("need about 164 open files"), "{err}");
    assert!(err.contains("too_many_open_files"), "{err}");
    assert!(err.contains("this process may open 48 files"), "{err}");
    assert!(err.contains("ulimit -n"), "{err}");
    assert!(!err.contains("check -u host:port"), "{err}");
}

/// Issue 15.7: a run without `--streaming` explains the "-" under TTFT and ITL and how to get
/// them; issue 15.8: a tensor model given to `profile` is pointed at `ttftbench perf`.
#[test]
fn non_streaming_explains_dashes_and_tensor_models_point_at_perf() {
    let (child, http, grpc, _metrics) = serve(&["--instant"]);
    let _guard = Killed(child);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plain");
    let (code, out, err) = run(&[
        "profile",
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "-u",
        &http,
        "--request-count",
        "10",
        "--no-streaming",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("TTFT and ITL are \"-\""), "{out}");
    assert!(out.contains("--no-streaming is not given"), "{out}");
    let dir = tmp.path().join("tensor");
    let (code, _out, err) = run(&[
        "profile",
        "-m",
        "yolov8s",
        "-u",
        &grpc,
        "--streaming",
        "--artifact-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("ttftbench perf -m yolov8s -u {grpc}")),
        "{err}"
    );
}

/// Issues 15.14 and 14.3: `--help` groups the flags by purpose and ends with examples, defaults
/// shown; completions load in bash; the man page lists the subcommands; `--version` names the
/// commit.
#[test]
fn help_groups_completions_man_and_version() {
    for (sub, flags) in [
        ("profile", ["--concurrency", "--slo", "--artifact-dir"]),
        ("perf", ["--concurrency-range", "--latency-threshold", "-f"]),
    ] {
        let (code, out, err) = run(&[sub, "--help"]);
        assert_eq!(code, 0, "{err}");
        // Target first; the other groups follow in the order their flags are declared.
        let target = out.find("\nTarget:\n").expect("a Target heading");
        for heading in [
            "Load:",
            "Workload:",
            "Measurement:",
            "Output:",
            "Decisions:",
        ] {
            let i = out
                .find(&format!("\n{heading}\n"))
                .unwrap_or_else(|| panic!("{sub} --help has no {heading} heading:\n{out}"));
            assert!(i > target, "{sub}: {heading} before Target");
        }
        for f in flags {
            assert!(out.contains(f), "{sub} --help lists {f}");
        }
        let examples = &out[out.find("\nExamples:\n").expect("examples")..];
        assert!(
            examples.matches(&format!("ttftbench {sub} ")).count() >= 3,
            "{examples}"
        );
        assert!(out.contains("[default: 5%]"), "defaults shown: {out}");
    }
    let (code, script, err) = run(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("ttftbench.bash");
    std::fs::write(&file, &script).unwrap();
    let out = Command::new("bash")
        .args([
            "-c",
            &format!("source {} && complete -p ttftbench", file.display()),
        ])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(shown.contains("ttftbench"), "{shown}");
    for shell in ["zsh", "fish", "powershell"] {
        let (code, script, err) = run(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(script.contains("profile"), "{shell}: {script}");
    }
    let (code, page, err) = run(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        page.starts_with(".ie") || page.contains(".TH ttftbench"),
        "{page}"
    );
    for sub in [
        "profile", "perf", "serve", "demo", "report", "compare", "doctor",
    ] {
        assert!(page.contains(sub), "the man page lists {sub}");
    }
    let (code, version, _) = run(&["--version"]);
    assert_eq!(code, 0);
    assert!(version.starts_with("ttftbench "), "{version}");
    assert!(version.contains("(commit "), "{version}");
}
