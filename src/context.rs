//! Where and against what a run was measured: its id and `--label` tags, the client machine
//! (host, OS, CPU, cores), the server's identity and model as the server describes them, and
//! the GPUs it reported. Recorded as `context` in every level's JSON and in `summary.json`,
//! shown in report.html's header, and read back by `compare` to say when the server changed.
//!
//! JSON (`context`):
//! ```text
//! {"run_id": "20261201T205610Z-4f1a9c",
//!  "labels": {"release": "v2.3", "team": "serving"},
//!  "client": {"host": "bench-1", "os": "linux", "arch": "x86_64", "kernel": "6.1.0-18-amd64",
//!             "cpu": "AMD EPYC 7B13", "cores": 2},
//!  "server": {"name": "triton", "version": "2.51.0", "extensions": [...], "source": "GET /v2"},
//!  "model": {"name": "gpt2", "platform": "python", ...},      <- null when the server says nothing
//!  "gpus": ["NVIDIA H100 80GB HBM3"]}                          <- empty when none were reported
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::server_metrics::identity::ServerIdentity;

/// The machine the client ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientHost {
    /// Host name.
    pub host: String,
    /// Operating system (`linux`).
    pub os: String,
    /// CPU architecture (`x86_64`).
    pub arch: String,
    /// Kernel release, when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// CPU model name, when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Cores this process may use.
    pub cores: usize,
}

impl ClientHost {
    /// This machine.
    pub fn this_machine() -> ClientHost {
        ClientHost {
            host: host_name(),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
            cpu: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|s| cpu_model(&s)),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
        }
    }

    /// "bench-1 (linux x86_64, AMD EPYC 7B13, 2 cores)".
    pub fn describe(&self) -> String {
        let cpu = self
            .cpu
            .as_deref()
            .map_or(String::new(), |c| format!(", {c}"));
        format!(
            "{} ({} {}{cpu}, {} cores)",
            self.host, self.os, self.arch, self.cores
        )
    }
}

/// The CPU model from `/proc/cpuinfo` (`model name` on x86, `Model`/`CPU part` elsewhere).
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let k = k.trim();
        (k == "model name" || k == "Model")
            .then(|| v.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

/// This machine's host name, or `unknown`.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(s) if rc == 0 && !s.is_empty() => s.to_string(),
        _ => "unknown".to_string(),
    }
}

/// A run's context (see the module doc for its JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    /// This run's id: its UTC start and a random suffix.
    pub run_id: String,
    /// The `--label key=value` tags.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The client machine.
    #[serde(default)]
    pub client: ClientHost,
    /// What the server says it is.
    #[serde(default)]
    pub server: ServerIdentity,
    /// What the server says about the model, when it says.
    #[serde(default)]
    pub model: Option<serde_json::Value>,
    /// GPU names the server's (or DCGM's) metrics reported over the run.
    #[serde(default)]
    pub gpus: Vec<String>,
}

impl RunContext {
    /// A new run on this machine with these labels, started at `unix_ns`, against `server`.
    pub fn new(
        labels: BTreeMap<String, String>,
        server: ServerIdentity,
        model: Option<serde_json::Value>,
        unix_ns: u64,
    ) -> RunContext {
        RunContext {
            run_id: run_id(unix_ns, rand::random::<u32>()),
            labels,
            client: ClientHost::this_machine(),
            server,
            model,
            gpus: Vec::new(),
        }
    }

    /// Adds the GPU names not yet listed (in order of first appearance).
    pub fn add_gpus<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        for n in names {
            if !self.gpus.iter().any(|g| g == n) {
                self.gpus.push(n.to_string());
            }
        }
    }

    /// The lines a report header shows: run id and labels, server and model, GPUs, client.
    pub fn header_lines(&self) -> Vec<String> {
        let mut run = format!("run {}", self.run_id);
        if !self.labels.is_empty() {
            run.push_str(&format!(" · labels {}", self.labels_line()));
        }
        let mut server = format!(
            "server {} (from {})",
            self.server.describe(),
            self.server.source
        );
        if let Some(m) = &self.model {
            server.push_str(&format!(" · model {}", model_line(m)));
        }
        let mut lines = vec![run, server];
        if !self.gpus.is_empty() {
            lines.push(format!("GPUs {}", self.gpus.join(", ")));
        }
        lines.push(format!("client {}", self.client.describe()));
        lines
    }

    /// "release=v2.3 team=serving" (empty without labels).
    pub fn labels_line(&self) -> String {
        self.labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// "gpt2: platform python, backend python, max batch 8, decoupled" from Triton's model
/// description, or "gpt2: owned by vllm, max_model_len 1024" from an OpenAI listing.
fn model_line(m: &serde_json::Value) -> String {
    let s = |k: &str| {
        m.get(k)
            .and_then(serde_json::Value::as_str)
            .filter(|v| !v.is_empty())
    };
    let name = s("name").or(s("id")).unwrap_or("?");
    use serde_json::Value;
    let parts: Vec<String> = [
        s("platform").map(|p| format!("platform {p}")),
        s("backend").map(|b| format!("backend {b}")),
        (m.get("max_batch_size").and_then(Value::as_i64)).map(|n| format!("max batch {n}")),
        (m.get("decoupled").and_then(Value::as_bool) == Some(true)).then(|| "decoupled".into()),
        s("owned_by").map(|o| format!("owned by {o}")),
        (m.get("max_model_len").and_then(Value::as_u64)).map(|n| format!("max_model_len {n}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {}", parts.join(", "))
    }
}

/// `20261201T205610Z-4f1a9c`: sortable by start, unique enough for one team's runs.
pub fn run_id(unix_ns: u64, random: u32) -> String {
    format!(
        "{}-{:06x}",
        utc_strftime(unix_ns, "%Y%m%dT%H%M%SZ"),
        random & 0xff_ffff
    )
}

/// A Unix time (ns) in UTC, formatted by `strftime` directives; whole seconds (the epoch for a
/// time past the calendar's end, which a `u64` of nanoseconds never reaches).
pub fn utc_strftime(unix_ns: u64, format: &str) -> String {
    let secs = i64::try_from(unix_ns / 1_000_000_000).unwrap_or(0);
    let t = jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    t.strftime(format).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_sort_by_time() {
        assert_eq!(run_id(0, 0xabc), "19700101T000000Z-000abc");
        assert_eq!(
            run_id(1_796_158_570_000_000_000, 0xff4f_1a9c),
            "20261201T205610Z-4f1a9c"
        );
        assert!(run_id(1, 0) < run_id(86_400_000_000_000, 0));
    }

    #[test]
    fn cpu_model_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu_model(x86).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(
            cpu_model("Model\t: Raspberry Pi 4\n").as_deref(),
            Some("Raspberry Pi 4")
        );
        assert_eq!(cpu_model("processor: 0\n"), None);
    }

    #[test]
    fn context_round_trips_and_describes() {
        let mut c = RunContext::new(
            BTreeMap::from([
                ("team".into(), "serving".into()),
                ("release".into(), "v2".into()),
            ]),
            ServerIdentity::default(),
            None,
            0,
        );
        c.add_gpus(["H100", "H100", "A10"]);
        assert_eq!(c.gpus, vec!["H100", "A10"]);
        assert_eq!(c.labels_line(), "release=v2 team=serving");
        c.run_id = "r1".into();
        c.server = crate::server_metrics::identity::from_kserve_json(
            &serde_json::json!({"name": "triton", "version": "2.51.0"}),
            "GET /v2",
        )
        .unwrap();
        c.model = Some(
            serde_json::json!({"name": "gpt2", "platform": "python", "backend": "python", "max_batch_size": 0, "decoupled": true}),
        );
        c.client = ClientHost {
            host: "bench-1".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            kernel: None,
            cpu: Some("AMD EPYC 7B13".into()),
            cores: 2,
        };
        assert_eq!(
            c.header_lines(),
            [
                "run r1 · labels release=v2 team=serving",
                "server triton 2.51.0 (from GET /v2) · model gpt2: platform python, backend python, max batch 0, decoupled",
                "GPUs H100, A10",
                "client bench-1 (linux x86_64, AMD EPYC 7B13, 2 cores)",
            ]
        );
        assert!(c.client.cores >= 1 && !c.client.host.is_empty());
        let back: RunContext = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        let old: RunContext = serde_json::from_str(r#"{"run_id": "x"}"#).unwrap();
        assert_eq!(old.run_id, "x");
    }
}
