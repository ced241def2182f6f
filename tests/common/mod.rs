//! Shared helpers for integration tests: start the simulator on port 0, build a plan from a
//! command line exactly as the CLI does, run it in-process, read the artifacts back.

#![allow(dead_code)]

use std::path::Path;

use clap::Parser;
use serde_json::Value;
use ttftbench::cli::{Cli, Command};
use ttftbench::load::Cancel;
use ttftbench::plan::RunPlan;
use ttftbench::run::{Outcome, Ui};
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

/// Parses `ttftbench profile <args>` into a plan.
pub fn plan(args: &[String]) -> Result<RunPlan, String> {
    let mut argv = vec!["ttftbench".to_string(), "profile".to_string()];
    argv.extend(args.iter().cloned());
    let cli = Cli::try_parse_from(&argv).map_err(|e| e.to_string())?;
    match cli.command {
        Command::Profile(p) => RunPlan::from_profile(&p, &argv).map_err(|e| e.0),
        other => Err(format!("not a profile command: {other:?}")),
    }
}

/// Runs `profile` in-process; errors are returned as their display text.
pub async fn profile(args: &[String]) -> Result<Outcome, String> {
    let plan = plan(args)?;
    ttftbench::run::profile(&plan, Cancel::new(), Ui::silent())
        .await
        .map_err(|e| format!("{e:#}"))
}

/// `&str` args to owned.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
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
