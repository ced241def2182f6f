//! Finding the real Triton server the tests in `triton_real.rs` and `triton_perf.rs` run against:
//! the env file `scripts/triton/start.sh` writes (`TTFTBENCH_TRITON_ENV`, default
//! `target/triton.env`) or the same variables in the environment. Without a server a test prints
//! `skipped: <reason>` and passes, unless `TTFTBENCH_REQUIRE_TRITON=1` (CI), where it fails.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// TTFT (or time to first response) above the model's first-token delay allowed for Triton, PyTriton's proxy (ZeroMQ and
/// shared memory between the stub and the model process) and a busy 2-core machine.
pub const TTFT_MARGIN_MS: f64 = 75.0;

/// Where the real server is.
#[derive(Debug, Clone)]
pub struct Triton {
    pub http: String,
    pub grpc: String,
    pub metrics: String,
    pub token: String,
    pub first_token_ms: f64,
    pub itl_ms: f64,
}

const KEYS: [&str; 7] = [
    "TTFTBENCH_TRITON_HTTP",
    "TTFTBENCH_TRITON_GRPC",
    "TTFTBENCH_TRITON_METRICS",
    "TTFTBENCH_TRITON_TOKEN",
    "TTFTBENCH_TRITON_PID",
    "TTFTBENCH_TRITON_FIRST_TOKEN_DELAY_MS",
    "TTFTBENCH_TRITON_ITL_MS",
];

/// `export KEY=VALUE` lines (quotes around the value are removed).
pub fn parse_env_file(text: &str) -> HashMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.strip_prefix("export ").unwrap_or(l).split_once('=')?;
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            Some((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

fn find_triton() -> Result<Triton, String> {
    let default_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/triton.env");
    let vars = match std::env::var_os("TTFTBENCH_TRITON_ENV") {
        Some(f) => {
            let f = PathBuf::from(f);
            let text = std::fs::read_to_string(&f).map_err(|e| {
                format!(
                    "TTFTBENCH_TRITON_ENV={} cannot be read ({e}); did scripts/triton/start.sh fail?",
                    f.display()
                )
            })?;
            parse_env_file(&text)
        }
        None if std::env::var_os("TTFTBENCH_TRITON_GRPC").is_some() => KEYS
            .iter()
            .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
            .collect(),
        None if default_file.exists() => {
            parse_env_file(&std::fs::read_to_string(&default_file).unwrap_or_default())
        }
        None => {
            return Err(
                "no Triton server: run scripts/triton/start.sh (or scripts/test.sh), which writes \
                 target/triton.env"
                    .to_string(),
            );
        }
    };
    let get = |k: &str| {
        vars.get(k)
            .cloned()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("the Triton env has no {k}"))
    };
    if let Some(pid) = vars.get("TTFTBENCH_TRITON_PID").filter(|p| !p.is_empty())
        && !running(pid)
    {
        return Err(format!(
            "the Triton server of the env file (pid {pid}) is not running: start it again with \
             scripts/triton/start.sh"
        ));
    }
    let ms = |k: &str| -> Result<f64, String> {
        get(k)?
            .parse::<f64>()
            .map_err(|e| format!("{k} is not a number: {e}"))
    };
    Ok(Triton {
        http: get("TTFTBENCH_TRITON_HTTP")?,
        grpc: get("TTFTBENCH_TRITON_GRPC")?,
        metrics: get("TTFTBENCH_TRITON_METRICS")?,
        token: vars
            .get("TTFTBENCH_TRITON_TOKEN")
            .cloned()
            .unwrap_or_default(),
        first_token_ms: ms("TTFTBENCH_TRITON_FIRST_TOKEN_DELAY_MS")?,
        itl_ms: ms("TTFTBENCH_TRITON_ITL_MS")?,
    })
}

/// Whether process `pid` runs (and is not a zombie: the server start.sh left in the background
/// lingers as one after it exits, until init reaps it).
pub fn running(pid: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) S ...`: the state follows the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// The server, or `None` after printing why the test is skipped. With
/// `TTFTBENCH_REQUIRE_TRITON=1` a missing server fails the test instead.
pub fn triton() -> Option<Triton> {
    match find_triton() {
        Ok(t) => Some(t),
        Err(reason) => {
            if std::env::var("TTFTBENCH_REQUIRE_TRITON").is_ok_and(|v| v == "1") {
                panic!("TTFTBENCH_REQUIRE_TRITON=1 but {reason}");
            }
            println!("skipped: {reason}");
            None
        }
    }
}

pub fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}
