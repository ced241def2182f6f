//! Shared helpers for integration tests: start the simulator on port 0, build a plan from a
//! command line exactly as the CLI does, run it in-process, read the artifacts back.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use clap::Parser;
use serde_json::Value;
use ttftbench::cli::{Cli, Command};
use ttftbench::load::Interrupt;
use ttftbench::perf::PerfOutcome;
use ttftbench::perf::plan::PerfPlan;
use ttftbench::plan::RunPlan;
use ttftbench::profile::{Outcome, Ui};
use ttftbench::proto;
use ttftbench::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use ttftbench::sim::{self, EngineConfig, SimConfig, SimHandle};

/// An engine with round numbers: prefill 5 ms + 0.1 ms/token, decode step 10 ms flat.
/// At concurrency 1 a 100-token prompt's first token arrives after one step: 10 + 5 + 10 = 25 ms.
pub fn round_engine() -> EngineConfig {
    EngineConfig {
        max_batch: 8,
        max_queue: 0,
        prefill_base_us: 5_000,
        prefill_us_per_token: 100,
        decode_base_us: 10_000,
        decode_us_per_seq: 0,
        ..EngineConfig::default()
    }
}

/// Starts the simulator with `cfg` on free ports.
pub async fn start(cfg: SimConfig) -> SimHandle {
    sim::start(cfg).await.expect("simulator starts")
}

/// Starts the simulator with [`round_engine`].
pub async fn start_round() -> SimHandle {
    start(SimConfig {
        engine: round_engine(),
        ..SimConfig::default()
    })
    .await
}

/// Starts the simulator in instant mode with a `rate` share of requests stalled for `ms`
/// before they reach the engine (which requests: [`ttftbench::sim::FaultConfig`]).
pub async fn start_stalling(rate: f64, ms: u64) -> SimHandle {
    start(SimConfig {
        engine: EngineConfig::instant(),
        faults: sim::FaultConfig {
            stall_rate: rate,
            stall_ms: ms,
            ..sim::FaultConfig::default()
        },
        ..SimConfig::default()
    })
    .await
}

/// Parses `ttftbench profile <args>` into a plan.
pub fn plan(args: &[String]) -> Result<RunPlan, String> {
    let mut argv = vec!["ttftbench".to_string(), "profile".to_string()];
    argv.extend(args.iter().cloned());
    let cli = Cli::try_parse_from(&argv).map_err(|e| e.to_string())?;
    match cli.command {
        Command::Profile(p) => p.plan(&argv).map_err(|e| e.0),
        other => Err(format!("not a profile command: {other:?}")),
    }
}

/// Runs `profile` in-process; errors are returned as their display text.
pub async fn profile(args: &[String]) -> Result<Outcome, String> {
    let plan = plan(args)?;
    ttftbench::profile::run(&plan, Interrupt::new(), Ui::silent())
        .await
        .map_err(|e| format!("{e:#}"))
}

/// Parses `ttftbench search <args>` into a search plan.
pub fn search_plan(args: &[String]) -> Result<ttftbench::plan::search::SearchPlan, String> {
    let mut argv = vec!["ttftbench".to_string(), "search".to_string()];
    argv.extend(args.iter().cloned());
    let cli = Cli::try_parse_from(&argv).map_err(|e| e.to_string())?;
    match cli.command {
        Command::Search(s) => s.plan(&argv).map_err(|e| e.0),
        other => Err(format!("not a search command: {other:?}")),
    }
}

/// Runs `search` in-process; errors are returned as their display text.
pub async fn search(args: &[String]) -> Result<ttftbench::search::SearchOutcome, String> {
    let plan = search_plan(args)?;
    ttftbench::search::run(&plan, Interrupt::new(), Ui::silent())
        .await
        .map_err(|e| format!("{e:#}"))
}

/// `&str` args to owned.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// `profile` flags for a streamed chat run of the simulator's `gpt2` at `url` into `dir`, then
/// `extra`.
pub fn chat_args(url: &str, dir: &std::path::Path, extra: &[&str]) -> Vec<String> {
    let mut a = args(&[
        "-m",
        "gpt2",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        url,
        "--artifact-dir",
        &dir.display().to_string(),
    ]);
    a.extend(args(extra));
    a
}

/// Every row of a level's `requests.jsonl`.
pub fn rows(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).expect("requests.jsonl exists");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

/// Measured rows only.
pub fn measured(dir: &Path) -> Vec<Value> {
    rows(dir)
        .into_iter()
        .filter(|r| r["phase"] == "measure")
        .collect()
}

/// The (Metric → avg, p99) of the CSV's first section, read the way the seeds' Python does.
pub fn csv_row(dir: &Path, metric: &str) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(dir.join("profile_export_genai_perf.csv")).ok()?;
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let headers = rdr.headers().ok()?.clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let (m, avg, p99) = (col("Metric")?, col("avg")?, col("p99")?);
    for r in rdr.records().flatten() {
        if r.get(m) == Some(metric) {
            return Some((r.get(avg)?.parse().ok()?, r.get(p99)?.parse().ok()?));
        }
    }
    None
}

/// Concatenated text of every file under `dir` (to check secrets never reach artifacts).
pub fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for entry in walk(dir) {
        if let Ok(s) = std::fs::read_to_string(&entry) {
            out.push_str(&s);
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A plain HTTP client for talking to the simulator directly (no proxy).
pub fn http_client() -> reqwest::Client {
    // reqwest is built with `rustls-no-provider`: it refuses to build a client, even for plain
    // http, until a process-wide crypto provider is installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("reqwest client")
}

/// The `data:` payloads of an SSE body, `[DONE]` included.
pub fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// Streams an OpenAI chat completion of `max_tokens` tokens for one user message; returns the
/// JSON chunks (without `[DONE]`). Panics unless the server answers 200.
pub async fn chat_stream(
    c: &reqwest::Client,
    base: &str,
    model: &str,
    prompt: &str,
    max_tokens: u32,
) -> Vec<Value> {
    let body = serde_json::json!({
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let r = c
        .post(format!("{base}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200, "chat answers");
    let text = r.text().await.expect("body");
    sse_data(&text)
        .into_iter()
        .filter(|d| d != "[DONE]")
        .map(|d| serde_json::from_str(&d).expect("chunk is JSON"))
        .collect()
}

/// GET `url` as text.
pub async fn get_text(c: &reqwest::Client, url: &str) -> String {
    c.get(url)
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body")
}

/// `model`'s engine sample from the simulator's `/metrics` (engine detected from the page) and
/// its GPUs from `/dcgm/metrics`.
pub async fn server_sample(
    c: &reqwest::Client,
    sim: &SimHandle,
    model: &str,
) -> (
    ttftbench::server_metrics::engines::EngineSample,
    Vec<ttftbench::server_metrics::gpu::GpuSample>,
) {
    use ttftbench::server_metrics::{engines, gpu, prometheus};
    let page = get_text(c, &sim.metrics_url()).await;
    let sample = engines::sample_from_text(&page, None, Some(model)).expect("an engine page");
    let dcgm = prometheus::parse(&get_text(c, &sim.dcgm_url()).await);
    (sample, gpu::read_gpus(&dcgm))
}

/// Runs `prompts` as concurrent streaming chat requests of `max_tokens` tokens against
/// `model`, sampling the server every 20 ms as a level engine would; returns the engine's and
/// the GPUs' view of that "level" and the chunks of every response.
pub async fn chat_level(
    sim: &SimHandle,
    model: &str,
    prompts: Vec<String>,
    max_tokens: u32,
) -> (
    ttftbench::server_metrics::level::EngineLevelView,
    Vec<ttftbench::server_metrics::gpu::GpuLevelView>,
    Vec<Vec<Value>>,
) {
    use ttftbench::server_metrics::{gpu::GpuLevel, level::EngineLevel};
    let c = http_client();
    let (start, gpus) = server_sample(&c, sim, model).await;
    let (mut level, mut gpu_level) = (EngineLevel::new(start), GpuLevel::new(gpus));
    let base = sim.http_url();
    let tasks: Vec<_> = prompts
        .into_iter()
        .map(|p| {
            let (c, base, model) = (c.clone(), base.clone(), model.to_string());
            tokio::spawn(async move { chat_stream(&c, &base, &model, &p, max_tokens).await })
        })
        .collect();
    while !tasks.iter().all(|t| t.is_finished()) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let (s, g) = server_sample(&c, sim, model).await;
        level.observe(&s);
        gpu_level.observe(&g);
    }
    let mut responses = Vec::new();
    for t in tasks {
        responses.push(t.await.expect("request task"));
    }
    let (end, gpus) = server_sample(&c, sim, model).await;
    (level.finish(&end), gpu_level.finish(&gpus), responses)
}

/// The Python of the GenAI-Perf venv (`scripts/genai_perf/setup.sh`: GenAI-Perf, pandas,
/// matplotlib): `$TTFTBENCH_GENAI_PERF_PYTHON`, else `.venv-gp/bin/python` in the repository.
/// `None`, with the reason printed, when it is missing or cannot import them — unless
/// `TTFTBENCH_REQUIRE_GENAI_PERF=1` (CI), where that fails the test.
pub fn genai_perf_python() -> Option<std::path::PathBuf> {
    let python = std::env::var_os("TTFTBENCH_GENAI_PERF_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-gp/bin/python"));
    let probe = std::process::Command::new(&python)
        .args(["-c", "import genai_perf, pandas, matplotlib"])
        .output();
    let why = match probe {
        Ok(o) if o.status.success() => return Some(python),
        Ok(o) => format!(
            "{} cannot import genai_perf, pandas, matplotlib: {}",
            python.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("no Python at {}: {e}", python.display()),
    };
    let msg = format!("{why} (run scripts/genai_perf/setup.sh)");
    if std::env::var("TTFTBENCH_REQUIRE_GENAI_PERF").as_deref() == Ok("1") {
        panic!("TTFTBENCH_REQUIRE_GENAI_PERF=1: {msg}");
    }
    eprintln!("skipping: {msg}");
    None
}

/// Runs a Python script of the repository with `python`; returns its stdout, panicking with
/// both streams when it fails.
pub fn run_python(python: &Path, script: &str, args: &[&Path]) -> String {
    let out = std::process::Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(script))
        .args(args)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The head of a streamed response that closes the connection after its events.
pub const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

/// Runs `profile` (streamed chat) with `n` requests at concurrency 1 against `addr`; returns the measured rows.
pub async fn stream_rows(addr: &str, n: u32, extra: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let n = n.to_string();
    let mut a = vec![
        "-m",
        "m",
        "--endpoint-type",
        "chat",
        "--streaming",
        "-u",
        addr,
        "--concurrency",
        "1",
        "--request-count",
        &n,
        "--request-timeout",
        "60",
        "--output-tokens-mean",
        "10",
        "--artifact-dir",
    ];
    let d = dir.path().to_str().unwrap().to_string();
    a.push(&d);
    a.extend_from_slice(extra);
    let out = profile(&args(&a)).await.expect("the run completes");
    measured(&out.levels[0].dir)
}

/// Writes `total` bytes of `fill` after `prefix`, in 64 KB writes (never 64 MB at once).
pub fn write_long(
    s: &mut std::net::TcpStream,
    prefix: &[u8],
    fill: u8,
    total: usize,
    suffix: &[u8],
) {
    use std::io::Write;
    if s.write_all(prefix).is_err() {
        return;
    }
    let piece = vec![fill; 64 * 1024];
    let mut left = total;
    while left > 0 {
        let n = left.min(piece.len());
        if s.write_all(&piece[..n]).is_err() {
            return;
        }
        left -= n;
    }
    let _ = s.write_all(suffix);
}

/// Each row's error kind, `ok` for the rows without one.
pub fn error_kinds(rows: &[serde_json::Value]) -> Vec<String> {
    rows.iter()
        .map(|r| r["error"].as_str().unwrap_or("ok").to_string())
        .collect()
}

/// What a raw test server does with one POST: writes its response to the socket (it may stop
/// early when the client goes away; write errors are the client closing).
pub type Respond = std::sync::Arc<dyn Fn(&mut std::net::TcpStream) + Send + Sync>;

/// A raw HTTP/1.1 server on a free loopback port, for servers that misbehave in ways the
/// simulator does not: GETs (discovery) get an empty 404, each POST gets `respond`, after which
/// the connection closes. One thread per connection; the threads end with the test process.
/// Returns `host:port`.
pub fn raw_http_server(respond: Respond) -> String {
    use std::io::{BufRead, BufReader, Read};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let respond = respond.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().expect("clone"));
                let mut conn = conn;
                loop {
                    let mut head = Vec::new();
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push(line);
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    if head.first().is_some_and(|l| l.starts_with("POST")) {
                        respond(&mut conn);
                        return;
                    }
                    use std::io::Write;
                    if conn
                        .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The process's peak resident set so far (VmHWM), in bytes.
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// A KServe v2 gRPC client.
pub type Grpc = GrpcInferenceServiceClient<tonic::transport::Channel>;

/// Connects a gRPC client to the simulator (image tensors need more than tonic's 4 MB default).
pub async fn grpc(h: &SimHandle) -> Grpc {
    GrpcInferenceServiceClient::connect(format!("http://{}", h.grpc_addr))
        .await
        .expect("grpc connect")
        .max_decoding_message_size(64 << 20)
}

/// A KServe v2 input tensor description with no contents (they go in `raw_input_contents`).
pub fn input(name: &str, dt: &str, shape: &[i64]) -> proto::model_infer_request::InferInputTensor {
    proto::model_infer_request::InferInputTensor {
        name: name.into(),
        datatype: dt.into(),
        shape: shape.to_vec(),
        parameters: HashMap::new(),
        contents: None,
    }
}

/// Builds the plan of `ttftbench perf <args>` exactly as the CLI does.
pub fn perf_plan(args: &[String]) -> Result<PerfPlan, String> {
    let mut argv = vec!["ttftbench".to_string(), "perf".to_string()];
    argv.extend(args.iter().cloned());
    let cli = Cli::try_parse_from(&argv).map_err(|e| e.to_string())?;
    match cli.command {
        Command::Perf(p) => p.plan(&argv).map_err(|e| e.0),
        other => Err(format!("not perf: {other:?}")),
    }
}

/// Runs `ttftbench perf <args>` in-process; errors (usage or run) as text.
pub async fn perf(args: &[String]) -> Result<PerfOutcome, String> {
    let p = perf_plan(args)?;
    // Bounded: a request that never ends must fail the test, not hang CI.
    match tokio::time::timeout(
        Duration::from_secs(120),
        ttftbench::perf::run(&p, Interrupt::new(), false),
    )
    .await
    {
        Ok(r) => r.map_err(|e| format!("{e:#}")),
        Err(_) => panic!("perf {args:?} did not finish within 120 s"),
    }
}

/// [`perf`] that must succeed.
pub async fn perf_ok(args: &[String]) -> PerfOutcome {
    perf(args)
        .await
        .unwrap_or_else(|e| panic!("perf {args:?} failed: {e}"))
}

/// Reads a CSV into (header, rows) and looks columns up by name, as pandas users do.
pub fn read_csv(text: &str) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rdr
        .headers()
        .expect("a CSV header")
        .iter()
        .map(str::to_string)
        .collect();
    let rows = rdr
        .records()
        .map(|r| {
            let r = r.expect("a CSV row");
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_string))
                .collect()
        })
        .collect();
    (header, rows)
}

/// A numeric CSV cell by column name.
pub fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row.get(col)
        .unwrap_or_else(|| panic!("no column {col:?} in {row:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("{col}: {e} in {row:?}"))
}

/// The built `ttftbench` binary, ready for arguments.
pub fn bin() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ttftbench"));
    // Tests must not append to a real GitHub job summary when CI runs on GitHub Actions.
    c.env_remove("GITHUB_STEP_SUMMARY");
    c
}

/// A JSON file's document; a missing or malformed file fails the test naming the file.
pub fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs the binary with `args` in `cwd`; returns (exit code, stdout, stderr).
pub fn run_in(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = bin()
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A TCP relay on a free loopback port in front of `upstream`, recording every byte clients
/// send through it and every byte the server sends back (one buffer per connection and
/// direction): what left the process for that port, and what came back. New connections can
/// be sent to another upstream ([`Tee::switch_to`]): a server that changes between runs.
pub struct Tee {
    /// `127.0.0.1:port` to point the client at.
    pub addr: String,
    sent: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
    received: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
    upstream: std::sync::Arc<std::sync::Mutex<std::net::SocketAddr>>,
}

impl Tee {
    /// Starts relaying to `upstream`; one thread per direction per connection, ending with the
    /// connection (the listener's thread ends with the test process).
    pub fn start(upstream: std::net::SocketAddr) -> Tee {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
        let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
        let (log, back_log) = (sent.clone(), received.clone());
        let upstream = std::sync::Arc::new(std::sync::Mutex::new(upstream));
        let target = upstream.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let to = *target.lock().unwrap();
                let Ok(server) = std::net::TcpStream::connect(to) else {
                    continue;
                };
                let index = {
                    let mut l = log.lock().unwrap();
                    l.push(Vec::new());
                    back_log.lock().unwrap().push(Vec::new());
                    l.len() - 1
                };
                let (mut c_read, mut s_write) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = c_read.read(&mut buf) {
                        if n == 0 || s_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        log.lock().unwrap()[index].extend_from_slice(&buf[..n]);
                    }
                    let _ = s_write.shutdown(std::net::Shutdown::Write);
                });
                let (mut s_read, mut c_write) = (server, client);
                let back_log = back_log.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = s_read.read(&mut buf) {
                        // Recorded before it is passed on: the client cannot have read a
                        // response the record does not hold yet.
                        back_log.lock().unwrap()[index].extend_from_slice(&buf[..n]);
                        if n == 0 || c_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = c_write.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Tee {
            addr,
            sent,
            received,
            upstream,
        }
    }

    /// Per connection, in order: each POST's body and the text the server streamed back for
    /// it (the `delta.content` of its OpenAI chat or `text` of its completion events, or a
    /// whole body's message content), HTTP/1.1 chunked or sized responses.
    pub fn exchanges(&self) -> Vec<Vec<(Vec<u8>, String)>> {
        let sent = self.sent.lock().unwrap().clone();
        let received = self.received.lock().unwrap().clone();
        sent.iter()
            .zip(&received)
            .map(|(out, back)| {
                let posts = posts_of(out);
                let mut rest: &[u8] = back;
                posts
                    .into_iter()
                    .map(|(_, body)| {
                        let (text, used) = http_response_text(rest);
                        rest = &rest[used..];
                        (body, text)
                    })
                    .collect()
            })
            .filter(|c: &Vec<(Vec<u8>, String)>| !c.is_empty())
            .collect()
    }

    /// Connections relayed so far.
    pub fn connections(&self) -> usize {
        self.sent.lock().unwrap().len()
    }

    /// Connections made from now on go to `upstream` (open ones stay where they are).
    pub fn switch_to(&self, upstream: std::net::SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
    }

    /// Every HTTP/1.1 request head sent so far (request line and headers), in order per
    /// connection.
    pub fn heads(&self) -> Vec<String> {
        let mut out = Vec::new();
        for conn in self.sent.lock().unwrap().iter() {
            let text = String::from_utf8_lossy(conn);
            let mut rest: &str = &text;
            while let Some(at) = ["GET /", "POST /"]
                .iter()
                .filter_map(|m| rest.find(m))
                .min()
            {
                let head = &rest[at..];
                let end = head.find("\r\n\r\n").unwrap_or(head.len());
                out.push(head[..end].to_string());
                rest = &head[end..];
            }
        }
        out
    }

    /// Every HTTP/1.1 POST sent so far (framed by `Content-Length`), in order per connection:
    /// its head (request line and headers) and its body.
    pub fn posts(&self) -> Vec<(String, Vec<u8>)> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .flat_map(|conn| posts_of(conn))
            .collect()
    }

    /// Every byte sent so far, lossily as text.
    pub fn all_sent(&self) -> String {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect()
    }
}

/// The POSTs of one connection's bytes (framed by `Content-Length`): head and body each.
fn posts_of(conn: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest: &[u8] = conn;
    while let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&rest[..end]).into_owned();
        let length = header(&head, "content-length")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        let body_end = (end + 4 + length).min(rest.len());
        let body = rest[end + 4..body_end].to_vec();
        if head.starts_with("POST ") {
            out.push((head, body));
        }
        rest = &rest[body_end..];
    }
    out
}

/// A header's value in an HTTP head (case-insensitive name).
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The first HTTP/1.1 response in `bytes`: the text it carried (see [`Tee::exchanges`]) and
/// how many bytes it took.
fn http_response_text(bytes: &[u8]) -> (String, usize) {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (String::new(), bytes.len());
    };
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let mut at = end + 4;
    let mut body = Vec::new();
    if header(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        while let Some(line_end) = bytes[at..].windows(2).position(|w| w == b"\r\n") {
            let size_text = String::from_utf8_lossy(&bytes[at..at + line_end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .unwrap_or(0);
            at += line_end + 2;
            if size == 0 {
                at += 2;
                break;
            }
            body.extend_from_slice(&bytes[at..at + size]);
            at += size + 2;
        }
    } else {
        let length = header(&head, "content-length")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(0);
        body.extend_from_slice(&bytes[at..at + length]);
        at += length;
    }
    let body = String::from_utf8_lossy(&body).into_owned();
    let content = |v: &Value| -> String {
        [
            "/choices/0/delta/content",
            "/choices/0/text",
            "/choices/0/message/content",
            "/text_output",
        ]
        .iter()
        .find_map(|p| v.pointer(p).and_then(Value::as_str))
        .unwrap_or("")
        .to_string()
    };
    let text = if body.trim_start().starts_with('{') {
        serde_json::from_str(&body).map_or(String::new(), |v| content(&v))
    } else {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .map(|v| content(&v))
            .collect()
    };
    (text, at)
}

/// Certificates for the TLS tests, generated fresh and written to a temporary directory: a
/// server CA and a server certificate it signed (for `localhost` and `127.0.0.1`), an expired
/// one and one for another name, and a client CA with a client certificate it signed.
pub struct TestPki {
    /// Holds the files; removed on drop.
    pub dir: tempfile::TempDir,
    /// The CA that signed the server certificates (what `--cacert` takes).
    pub ca: std::path::PathBuf,
    /// The server certificate and key.
    pub server_cert: std::path::PathBuf,
    /// The server key.
    pub server_key: std::path::PathBuf,
    /// An expired server certificate (same CA) and its key.
    pub expired_cert: std::path::PathBuf,
    /// Its key.
    pub expired_key: std::path::PathBuf,
    /// A server certificate for `other.invalid` only (same CA) and its key.
    pub wrong_name_cert: std::path::PathBuf,
    /// Its key.
    pub wrong_name_key: std::path::PathBuf,
    /// The CA the server trusts for client certificates.
    pub client_ca: std::path::PathBuf,
    /// A client certificate the client CA signed, and its key.
    pub client_cert: std::path::PathBuf,
    /// Its key.
    pub client_key: std::path::PathBuf,
}

fn test_ca(name: &str) -> rcgen::CertifiedIssuer<'static, rcgen::KeyPair> {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    p.distinguished_name
        .push(rcgen::DnType::CommonName, name.to_string());
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    rcgen::CertifiedIssuer::self_signed(p, rcgen::KeyPair::generate().expect("key"))
        .expect("CA signs itself")
}

fn test_leaf(
    issuer: &rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    cn: &str,
    names: &[&str],
    purpose: rcgen::ExtendedKeyUsagePurpose,
    expired: bool,
) -> (String, String) {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut p = rcgen::CertificateParams::new(names).expect("leaf params");
    p.distinguished_name
        .push(rcgen::DnType::CommonName, cn.to_string());
    p.extended_key_usages = vec![purpose];
    if expired {
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = p.signed_by(&key, issuer).expect("CA signs");
    (cert.pem(), key.serialize_pem())
}

/// Generates the certificates of [`TestPki`].
pub fn test_pki() -> TestPki {
    use rcgen::ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write PEM");
        p
    };
    let ca = test_ca("ttftbench test server CA");
    let here = ["localhost", "127.0.0.1"];
    let (cert, key) = test_leaf(&ca, "ttftbench sim", &here, ServerAuth, false);
    let (old_cert, old_key) = test_leaf(&ca, "ttftbench old sim", &here, ServerAuth, true);
    let (wrong_cert, wrong_key) =
        test_leaf(&ca, "elsewhere", &["other.invalid"], ServerAuth, false);
    let client_ca = test_ca("ttftbench test client CA");
    let (client_cert, client_key) = test_leaf(&client_ca, "bench client", &[], ClientAuth, false);
    TestPki {
        ca: write("ca.pem", &ca.pem()),
        server_cert: write("server.pem", &cert),
        server_key: write("server.key", &key),
        expired_cert: write("expired.pem", &old_cert),
        expired_key: write("expired.key", &old_key),
        wrong_name_cert: write("wrong.pem", &wrong_cert),
        wrong_name_key: write("wrong.key", &wrong_key),
        client_ca: write("client-ca.pem", &client_ca.pem()),
        client_cert: write("client.pem", &client_cert),
        client_key: write("client.key", &client_key),
        dir,
    }
}

/// The simulator over TLS with `cert`/`key`, requiring client certificates signed by
/// `client_ca` when given.
pub async fn start_tls(cert: &Path, key: &Path, client_ca: Option<&Path>) -> SimHandle {
    start(SimConfig {
        engine: EngineConfig::instant(),
        tls: Some(sim::SimTls {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            client_ca: client_ca.map(Path::to_path_buf),
        }),
        ..SimConfig::default()
    })
    .await
}

/// Runs the `ttftbench` binary with `args` and extra environment variables, off the async
/// runtime (an in-process simulator keeps serving meanwhile): (exit code, stdout, stderr).
pub async fn run_bin(args: &[String], envs: &[(&str, &Path)]) -> (i32, String, String) {
    let args = args.to_vec();
    let envs: Vec<(String, std::path::PathBuf)> = envs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_path_buf()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut cmd = bin();
        cmd.args(&args);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("the binary runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
    .await
    .expect("the child's thread ends")
}

/// A buffer that several owners write into (a live view drawn off the terminal), read back
/// as text.
#[derive(Clone, Default)]
pub struct SharedBuf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl SharedBuf {
    /// What was written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `ttftbench serve` as a child process of the built binary on free loopback ports (`extra`
/// flags after the port flags), as a reader starts it; killed when dropped.
pub struct ServeChild {
    child: std::process::Child,
    /// The HTTP (KServe v2 + OpenAI) address, `127.0.0.1:PORT`.
    pub http: String,
    /// The gRPC address.
    pub grpc: String,
    /// The metrics address.
    pub metrics: String,
    /// What it printed at start: its addresses and models.
    pub banner: String,
}

impl ServeChild {
    /// Starts `ttftbench serve --http-port 0 --grpc-port 0 --metrics-port 0 EXTRA...` and reads
    /// the addresses it prints; an error (with what it printed) if it does not start.
    pub fn start(extra: &[String]) -> Result<ServeChild, String> {
        ServeChild::start_in(extra, Path::new("."))
    }

    /// [`ServeChild::start`] in directory `dir` (relative paths among the flags, such as
    /// `--answer-key`, are read from there).
    pub fn start_in(extra: &[String], dir: &Path) -> Result<ServeChild, String> {
        use std::io::{BufRead, BufReader};
        let mut child = bin()
            .current_dir(dir)
            .args([
                "serve",
                "--http-port",
                "0",
                "--grpc-port",
                "0",
                "--metrics-port",
                "0",
            ])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run ttftbench serve: {e}"))?;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut http, mut grpc, mut metrics) = (None, None, None);
        let mut seen = String::new();
        while metrics.is_none() {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                let out = child.wait_with_output().ok();
                let err = out
                    .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                    .unwrap_or_default();
                return Err(format!(
                    "ttftbench serve {} did not start: {seen}{err}",
                    extra.join(" ")
                ));
            };
            seen.push_str(&line);
            seen.push('\n');
            let addr = || {
                line.trim()
                    .rsplit(' ')
                    .next()
                    .unwrap_or_default()
                    .to_string()
            };
            if line.starts_with("HTTP") {
                http = Some(addr());
            } else if line.starts_with("gRPC") {
                grpc = Some(addr());
            } else if line.starts_with("metrics") {
                metrics = Some(addr());
            }
        }
        // The line that names the models ends what it prints at start.
        for line in lines.by_ref() {
            let Ok(line) = line else { break };
            seen.push_str(&line);
            seen.push('\n');
            if line.starts_with("models:") {
                break;
            }
        }
        // Keep draining both streams so the server never writes into a closed pipe.
        std::thread::spawn(move || for _ in lines {});
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || for _ in BufReader::new(err).lines() {});
        Ok(ServeChild {
            child,
            http: http.unwrap_or_default(),
            grpc: grpc.unwrap_or_default(),
            metrics: metrics.unwrap_or_default(),
            banner: seen,
        })
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `PATH` with the directory of the test-built `ttftbench` first, so shell commands that name
/// `ttftbench` run the binary under test.
pub fn path_with_bin() -> std::ffi::OsString {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_ttftbench"));
    let mut dirs = vec![exe.parent().expect("the binary's directory").to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).expect("PATH entries without separators")
}

/// A real inference engine started by `scripts/engines/{vllm,llamacpp}/start.sh`, found through
/// the env file it writes.
#[derive(Debug, Clone)]
pub struct Engine {
    /// `vllm` or `llamacpp`.
    pub name: &'static str,
    /// `host:port` of its HTTP server (`TTFTBENCH_<NAME>_URL`).
    pub url: String,
    /// The model it serves (`TTFTBENCH_<NAME>_MODEL`).
    pub model: String,
    /// Every variable the env file exports.
    pub vars: HashMap<String, String>,
}

impl Engine {
    /// `http://host:port`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.url)
    }

    /// Its Prometheus page.
    pub fn metrics_url(&self) -> String {
        format!("{}/metrics", self.base_url())
    }
}

/// The variables an env file exports (`export KEY=VALUE`, the value optionally in single or
/// double quotes); comments and other lines are skipped.
pub fn read_env_file(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let v = v.trim();
            let unquoted = v
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .or_else(|| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
                .unwrap_or(v);
            (k.trim().to_string(), unquoted.to_string())
        })
        .collect()
}

/// The running engine `name` (`vllm`, `llamacpp`, or a variant: `vllm-embed`,
/// `llamacpp-rerank`): its env file is `TTFTBENCH_<NAME>_ENV`, else `target/<name>.env` in the
/// repository; it must answer `GET /health`. Without it, prints `skipped: <reason>` and returns
/// `None` — unless `TTFTBENCH_REQUIRE_ENGINES=1` (CI), where that fails the test (vLLM's pooling
/// variants, ~1 min and 4.5 GiB each: only with `TTFTBENCH_VLLM_POOLING=1` as well).
pub fn engine(name: &'static str) -> Option<Engine> {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    let start = match name.split_once('-') {
        Some((engine, variant)) => format!("scripts/engines/{engine}/start.sh --variant {variant}"),
        None => format!("scripts/engines/{name}/start.sh"),
    };
    let path = std::env::var_os(format!("TTFTBENCH_{upper}_ENV"))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/{name}.env"))
        });
    let found = std::fs::read_to_string(&path)
        .map_err(|e| {
            format!(
                "{}: {e} (start it with {start}, or point TTFTBENCH_{upper}_ENV at its env file)",
                path.display()
            )
        })
        .and_then(|text| {
            let vars = read_env_file(&text);
            let get = |k: &str| {
                vars.get(&format!("TTFTBENCH_{upper}_{k}"))
                    .cloned()
                    .ok_or_else(|| format!("{}: no TTFTBENCH_{upper}_{k}", path.display()))
            };
            let engine = Engine {
                name,
                url: get("URL")?,
                model: get("MODEL")?,
                vars: vars.clone(),
            };
            answers_health(&engine.url)
                .map_err(|e| format!("{name} at {} does not answer /health: {e}", engine.url))?;
            Ok(engine)
        });
    let on = |var: &str| std::env::var(var).as_deref() == Ok("1");
    let optional = name.starts_with("vllm-") && !on("TTFTBENCH_VLLM_POOLING");
    match found {
        Ok(e) => Some(e),
        Err(reason) if on("TTFTBENCH_REQUIRE_ENGINES") && !optional => {
            panic!("TTFTBENCH_REQUIRE_ENGINES=1: {reason}")
        }
        Err(reason) => {
            eprintln!("skipped: {reason}");
            None
        }
    }
}

/// `GET /health` answers 200 within 5 s (plain HTTP/1.1 on a socket: no runtime needed).
fn answers_health(addr: &str) -> Result<(), String> {
    use std::io::{Read, Write};
    let sock: std::net::SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut s = std::net::TcpStream::connect_timeout(&sock, Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).map_err(|e| e.to_string())?;
    let status = String::from_utf8_lossy(&head);
    status
        .ends_with("200")
        .then_some(())
        .ok_or_else(|| format!("answered {status:?}"))
}

/// How a keep-alive test server ([`keepalive_server`]) treats its connections: one way each
/// that real servers close them, and one that sends with Nagle's algorithm on.
#[derive(Clone, Copy, Debug)]
pub enum Closing {
    /// Answers with `Connection: close`, then closes.
    SaysClose,
    /// Answers as HTTP/1.0 (no keep-alive, body to the close), then closes.
    Http10,
    /// `Keep-Alive: timeout=5, max=M` with M the requests left of this many; closes after the
    /// last, saying nothing more on it.
    Max(u32),
    /// `Keep-Alive: timeout=1`, but closes an idle connection only after this long (so a
    /// client that ignores the header would still find it open).
    IdleTimeout(Duration),
    /// Closes a connection idle for this long and says nothing (vLLM's server after 5 s).
    SilentIdle(Duration),
    /// Announces `Keep-Alive: timeout=5, max=100`, then closes a few ms after every stream
    /// without a word (llama.cpp's server), whatever the client sent meanwhile.
    AfterStream,
    /// Keeps every connection and sends with Nagle's algorithm on: the head, then 10 ms later
    /// the first token, each in its own small write.
    Nagle,
}

/// A keep-alive HTTP/1.1 server streaming a 3-token chat answer to every POST ([`Closing`]
/// says how it ends connections); GETs get an empty 404. Counts the connections that served a
/// POST.
pub struct KeepAliveServer {
    /// `host:port`.
    pub addr: String,
    /// Connections that answered at least one POST.
    pub connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// Starts a [`KeepAliveServer`] on a free loopback port; its threads end with the test process.
pub fn keepalive_server(closing: Closing) -> KeepAliveServer {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let connections = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let counted = counted.clone();
            std::thread::spawn(move || {
                let mut served = 0u32;
                while let Some(post) = read_request(&conn, closing) {
                    if !post {
                        if write_all(
                            &conn,
                            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
                        ) {
                            continue;
                        }
                        return;
                    }
                    if served == 0 {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    served += 1;
                    if !answer(&conn, closing, served) {
                        return;
                    }
                }
            });
        }
    });
    KeepAliveServer { addr, connections }
}

/// Reads one request (head and sized body); `Some(true)` for a POST, `None` at the end of the
/// connection (EOF, an error, or the idle limit of `closing`).
fn read_request(conn: &std::net::TcpStream, closing: Closing) -> Option<bool> {
    use std::io::Read;
    let idle = match closing {
        Closing::IdleTimeout(d) | Closing::SilentIdle(d) => Some(d),
        _ => None,
    };
    conn.set_read_timeout(idle).ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    let mut c = conn;
    while !head.ends_with(b"\r\n\r\n") {
        if c.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    c.read_exact(&mut body).ok()?;
    Some(text.starts_with("post"))
}

fn write_all(mut conn: &std::net::TcpStream, b: &[u8]) -> bool {
    use std::io::Write;
    conn.write_all(b).is_ok()
}

/// Streams the answer; `false` when the connection ends here.
fn answer(conn: &std::net::TcpStream, closing: Closing, served: u32) -> bool {
    let chunk = |data: &str| {
        let event = format!("data: {data}\n\n");
        format!("{:x}\r\n{event}\r\n", event.len())
    };
    let tokens: Vec<String> = [" one", " two", " three"]
        .iter()
        .map(|t| format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"{t}"}}}}]}}"#))
        .collect();
    let keep = match closing {
        Closing::SaysClose => "Connection: close\r\n".to_string(),
        Closing::Max(m) => format!(
            "Keep-Alive: timeout=5, max={}\r\n",
            m.saturating_sub(served)
        ),
        Closing::IdleTimeout(_) => "Keep-Alive: timeout=1\r\n".to_string(),
        Closing::AfterStream => "Keep-Alive: timeout=5, max=100\r\n".to_string(),
        _ => String::new(),
    };
    if let Closing::Http10 = closing {
        let mut body = String::new();
        for t in tokens.iter().map(String::as_str).chain(["[DONE]"]) {
            body.push_str(&format!("data: {t}\n\n"));
        }
        write_all(
            conn,
            format!("HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n{body}").as_bytes(),
        );
        return false;
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n{keep}\r\n"
    );
    if let Closing::Nagle = closing {
        let _ = conn.set_nodelay(false);
        if !write_all(conn, head.as_bytes()) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
        for t in &tokens {
            if !write_all(conn, chunk(t).as_bytes()) {
                return false;
            }
        }
        return write_all(conn, format!("{}0\r\n\r\n", chunk("[DONE]")).as_bytes());
    }
    let mut all = head;
    for t in tokens.iter().map(String::as_str).chain(["[DONE]"]) {
        all.push_str(&chunk(t));
    }
    all.push_str("0\r\n\r\n");
    if !write_all(conn, all.as_bytes()) {
        return false;
    }
    match closing {
        Closing::SaysClose => false,
        Closing::Max(m) => served < m,
        Closing::AfterStream => {
            // Closed a moment later, as llama.cpp's server does: a request sent meanwhile is
            // left unread, and the close resets it.
            std::thread::sleep(Duration::from_millis(5));
            false
        }
        _ => true,
    }
}

/// Runs `profile` against the real engine `e` (its model and address, 40-token synthetic
/// prompts) with `flags`, into a fresh directory with a directory per level
/// (`c{concurrency}`); returns the directory and each level's directory and JSON, in order.
pub async fn profile_engine(
    e: &Engine,
    flags: &[&str],
) -> (tempfile::TempDir, Vec<(std::path::PathBuf, Value)>) {
    let tmp = tempfile::tempdir().unwrap();
    let mut a = args(&[
        "-m",
        &e.model,
        "-u",
        &e.url,
        "--synthetic-input-tokens-mean",
        "40",
        "--artifact-dir",
        &format!("{}/c{{concurrency}}", tmp.path().display()),
    ]);
    a.extend(args(flags));
    let out = profile(&a)
        .await
        .unwrap_or_else(|err| panic!("{}: {err}", e.name));
    let levels = out
        .levels
        .iter()
        .map(|l| {
            let doc = json_file(&l.dir.join("profile_export_genai_perf.json"));
            (l.dir.clone(), doc)
        })
        .collect();
    (tmp, levels)
}

/// The `avg` of a level JSON's `key` (`NaN` when absent): counts such as `error_count` sit there.
pub fn avg(doc: &Value, key: &str) -> f64 {
    doc[key]["avg"].as_f64().unwrap_or(f64::NAN)
}

/// Whether two figures agree to 1e-9 relative: one mean computed in seconds and another in
/// milliseconds differ in their last bits (31.36966666666667 vs 31.369666666666667).
pub fn same_figure(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        _ => false,
    }
}

/// A counter or gauge of an engine's `/metrics` (the sum over its label sets), 0 when absent.
pub async fn engine_metric(e: &Engine, name: &str) -> f64 {
    let text = get_text(&http_client(), &e.metrics_url()).await;
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            let metric = key.split('{').next()?;
            (metric == name)
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

/// A `--tools` file: one OpenAI tool definition, `search(query)`.
pub const TOOLS_JSON: &str = r#"[{"type": "function", "function": {"name": "search", "description": "Search the web", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]"#;

/// Starts the simulator as `ttftbench serve <flags>` configures it (engine timing, faults,
/// `--answer-key` and the scored answers' flags), on free ports.
pub async fn serve_with(flags: &[&str]) -> SimHandle {
    let mut argv = vec!["ttftbench", "serve"];
    argv.extend_from_slice(flags);
    let cli = Cli::try_parse_from(&argv).expect("serve flags parse");
    let Command::Serve(a) = cli.command else {
        panic!("not a serve command")
    };
    let cfg = SimConfig {
        answers: a.answers.config().expect("the answer key reads"),
        ..ttftbench::app::sim_config(a.address, (0, 0, 0), &a.engine).expect("serve flags")
    };
    start(cfg).await
}

/// `n` multiple-choice questions in MMLU's fields (`question`, `subject`, `choices`, `answer`),
/// written to `dir/name` as JSONL: question `i` has four options and answer `i % 4`, half of
/// them in each of two subjects.
pub fn mmlu_questions(dir: &Path, name: &str, n: usize) -> std::path::PathBuf {
    let rows: Vec<String> = (0..n)
        .map(|i| {
            serde_json::json!({
                "question": format!("Question {i}: which option is listed as number {}?", i % 4 + 1),
                "subject": if i % 2 == 0 { "counting" } else { "ordering" },
                "choices": ["the first", "the second", "the third", "the fourth"],
                "answer": i % 4,
            })
            .to_string()
        })
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, rows.join("\n") + "\n").expect("questions written");
    path
}
