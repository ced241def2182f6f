//! `--push-gateway URL`: each finished level's key numbers pushed to a Prometheus Pushgateway in
//! its text exposition format (version 0.0.4), so runs show up on the servers' dashboards.
//!
//! Each level is one group, replaced by an HTTP `PUT` to
//! `URL/metrics/job/ttftbench/instance/<host>/model/<model>/level/<level>`: a later run of the
//! same level replaces it, other levels stay. A grouping value that is not plain
//! `[A-Za-z0-9._-]` (a model `org/name`) is sent as `label@base64/<base64url>`, as the
//! Pushgateway documents. The pushed metrics carry no grouping label themselves (the gateway adds
//! them). Times are in seconds, Prometheus' base unit:
//!
//! ```text
//! # HELP ttftbench_time_to_first_token_seconds Time to first token of the level's requests.
//! # TYPE ttftbench_time_to_first_token_seconds gauge
//! ttftbench_time_to_first_token_seconds{stat="avg"} 0.0251
//! ttftbench_time_to_first_token_seconds{stat="p99"} 0.0612
//! # HELP ttftbench_request_throughput Requests per second (perf: inferences per second).
//! # TYPE ttftbench_request_throughput gauge
//! ttftbench_request_throughput 16.5
//! # HELP ttftbench_valid 1 when every validity check passed, else 0.
//! # TYPE ttftbench_valid gauge
//! ttftbench_valid 1
//! ```
//!
//! Families: `ttftbench_{time_to_first_token,inter_token_latency,request_latency}_seconds`
//! (`stat` avg, p50, p90, p95, p99), `ttftbench_{request,output_token,total_token}_throughput`,
//! `ttftbench_requests`, `ttftbench_errors`, `ttftbench_error_ratio`, `ttftbench_valid`,
//! `ttftbench_load{kind}` (the concurrency or request rate), and
//! `ttftbench_level_info{mode,version} 1`. A number the level has none of (ITL without
//! streaming) is left out. Label values escape `\`, `"` and newlines.

use std::fmt::Write as _;
use std::time::Duration;

use base64::Engine as _;

use super::{Latencies, LevelReport, Mode};

/// One metric family: a gauge with its samples (label pairs, value).
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Metric name.
    pub name: &'static str,
    /// Its `# HELP` text.
    pub help: &'static str,
    /// Samples.
    pub samples: Vec<(Vec<(&'static str, String)>, f64)>,
}

impl Family {
    fn one(name: &'static str, help: &'static str, v: Option<f64>) -> Option<Family> {
        Some(Family {
            name,
            help,
            samples: vec![(vec![], v?)],
        })
    }

    fn latency(name: &'static str, help: &'static str, l: Option<Latencies>) -> Option<Family> {
        Some(Family {
            name,
            help,
            samples: l?
                .named()
                .iter()
                .map(|(stat, ms)| (vec![("stat", (*stat).to_string())], ms / 1e3))
                .collect(),
        })
    }
}

/// The families pushed for one level.
pub fn families(mode: Mode, l: &LevelReport) -> Vec<Family> {
    let k = &l.key;
    #[rustfmt::skip]
    let latencies = [
        ("ttftbench_time_to_first_token_seconds", "Time to first token of the level's requests.", k.ttft),
        ("ttftbench_inter_token_latency_seconds", "Inter-token latency of the level's requests.", k.itl),
        ("ttftbench_request_latency_seconds", "Request latency of the level's requests.", k.latency),
    ];
    let valid = if l.validity.trustworthy { 1.0 } else { 0.0 };
    #[rustfmt::skip]
    let numbers = [
        ("ttftbench_request_throughput", "Requests per second (perf: inferences per second).", k.request_throughput),
        ("ttftbench_output_token_throughput", "Output tokens per second.", k.output_token_throughput),
        ("ttftbench_total_token_throughput", "Input and output tokens per second.", k.total_token_throughput),
        ("ttftbench_requests", "Successful requests measured.", Some(k.requests as f64)),
        ("ttftbench_errors", "Failed requests.", Some(k.errors as f64)),
        ("ttftbench_error_ratio", "Failed share of all requests.", k.error_rate),
        ("ttftbench_valid", "1 when every validity check passed, else 0.", Some(valid)),
    ];
    let load = Family {
        name: "ttftbench_load",
        help: "The level's load: concurrency, or requests per second asked for.",
        samples: vec![(
            vec![("kind", l.stimulus.kind().to_string())],
            l.stimulus.value(),
        )],
    };
    let info = Family {
        name: "ttftbench_level_info",
        help: "The mode and ttftbench version of the level's run.",
        samples: vec![(
            vec![
                ("mode", mode.name().to_string()),
                ("version", crate::VERSION.to_string()),
            ],
            1.0,
        )],
    };
    let latencies = latencies.map(|(name, help, v)| Family::latency(name, help, v));
    let numbers = numbers.map(|(name, help, v)| Family::one(name, help, v));
    (latencies.into_iter().chain(numbers).flatten())
        .chain([load, info])
        .collect()
}

/// The text exposition format of `families` (non-finite values are left out).
pub fn encode(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} gauge", f.name);
        for (labels, v) in f.samples.iter().filter(|(_, v)| v.is_finite()) {
            out.push_str(f.name);
            if !labels.is_empty() {
                let inner: Vec<String> = labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                    .collect();
                let _ = write!(out, "{{{}}}", inner.join(","));
            }
            let _ = writeln!(out, " {v}");
        }
    }
    out
}

/// A label value in the exposition format: backslash, double quote and newline escaped.
pub fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The group's path after the gateway's URL: `/metrics/job/ttftbench/instance/...`.
pub fn group_path(instance: &str, model: &str, level: &str) -> String {
    let mut out = String::from("/metrics/job/ttftbench");
    for (k, v) in [("instance", instance), ("model", model), ("level", level)] {
        let plain = !v.is_empty()
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if plain {
            let _ = write!(out, "/{k}/{v}");
        } else if v.is_empty() {
            let _ = write!(out, "/{k}@base64/=");
        } else {
            let enc = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
            let _ = write!(out, "/{k}@base64/{enc}");
        }
    }
    out
}

/// Pushes levels to one gateway.
pub struct Pusher {
    url: String,
    instance: String,
    model: String,
    mode: Mode,
    client: Option<reqwest::Client>,
}

impl Pusher {
    /// A pusher to the gateway at `url` (validated by the plan).
    pub fn new(url: &str, model: &str, mode: Mode) -> Pusher {
        crate::client::http::install_tls_provider();
        Pusher {
            url: url.to_string(),
            instance: crate::context::host_name(),
            model: model.to_string(),
            mode,
            // A push must not hold up the run: a gateway that does not answer in 5 s is a
            // warning for that level.
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(5))
                .build()
                .ok(),
        }
    }

    /// The gateway's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Pushes one level.
    pub async fn push(&self, l: &LevelReport) -> Result<(), PushError> {
        let client = self.client.as_ref().ok_or(PushError::NoClient)?;
        let url = format!(
            "{}{}",
            self.url,
            group_path(&self.instance, &self.model, &l.name())
        );
        let resp = client
            .put(&url)
            .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
            .body(encode(&families(self.mode, l)))
            .send()
            .await
            .map_err(PushError::Send)?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let body = resp.text().await.unwrap_or_default();
        Err(PushError::Refused {
            status,
            body: body.chars().take(200).collect::<String>().trim().into(),
        })
    }
}

/// Why a level could not be pushed: a warning for that level (the run goes on, its files are
/// complete).
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// No HTTP client (the TLS provider could not be set up).
    #[error("the HTTP client could not be built")]
    NoClient,
    /// The gateway did not answer.
    #[error("{}", describe(.0))]
    Send(reqwest::Error),
    /// The gateway answered with an error.
    #[error("HTTP {status}: {body}")]
    Refused {
        /// Its status.
        status: reqwest::StatusCode,
        /// The start of its body.
        body: String,
    },
}

/// A send error with its causes (reqwest's own message omits "connection refused").
fn describe(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let _ = write!(out, ": {s}");
        src = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::tests::level;

    #[test]
    fn exposition_exact() {
        let mut l = level(8, 612.0, false);
        l.key.ttft = None;
        l.key.output_token_throughput = None;
        l.key.error_rate = Some(0.25);
        let text = encode(&families(Mode::Perf, &l));
        let expected = format!(
            "# HELP ttftbench_request_latency_seconds Request latency of the level's requests.
# TYPE ttftbench_request_latency_seconds gauge
ttftbench_request_latency_seconds{{stat=\"avg\"}} 0.5
ttftbench_request_latency_seconds{{stat=\"p50\"}} 0.5
ttftbench_request_latency_seconds{{stat=\"p90\"}} 0.8
ttftbench_request_latency_seconds{{stat=\"p95\"}} 0.9
ttftbench_request_latency_seconds{{stat=\"p99\"}} 1
# HELP ttftbench_request_throughput Requests per second (perf: inferences per second).
# TYPE ttftbench_request_throughput gauge
ttftbench_request_throughput 16.5
# HELP ttftbench_requests Successful requests measured.
# TYPE ttftbench_requests gauge
ttftbench_requests 10
# HELP ttftbench_errors Failed requests.
# TYPE ttftbench_errors gauge
ttftbench_errors 1
# HELP ttftbench_error_ratio Failed share of all requests.
# TYPE ttftbench_error_ratio gauge
ttftbench_error_ratio 0.25
# HELP ttftbench_valid 1 when every validity check passed, else 0.
# TYPE ttftbench_valid gauge
ttftbench_valid 0
# HELP ttftbench_load The level's load: concurrency, or requests per second asked for.
# TYPE ttftbench_load gauge
ttftbench_load{{kind=\"concurrency\"}} 8
# HELP ttftbench_level_info The mode and ttftbench version of the level's run.
# TYPE ttftbench_level_info gauge
ttftbench_level_info{{mode=\"perf\",version=\"{}\"}} 1
",
            crate::VERSION
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn labels_escaped_and_non_finite_left_out() {
        let f = Family {
            name: "x",
            help: "h",
            samples: vec![
                (vec![("a", "q\"b\\s\nn".to_string())], 1.5),
                (vec![], f64::INFINITY),
            ],
        };
        assert_eq!(
            encode(&[f]),
            "# HELP x h\n# TYPE x gauge\nx{a=\"q\\\"b\\\\s\\nn\"} 1.5\n"
        );
    }

    #[test]
    fn grouping_key_paths() {
        assert_eq!(
            group_path("host-1", "gpt2", "concurrency8"),
            "/metrics/job/ttftbench/instance/host-1/model/gpt2/level/concurrency8"
        );
        assert_eq!(
            group_path("h", "meta-llama/Llama-3.1-8B", "request_rate2.5"),
            "/metrics/job/ttftbench/instance/h/model@base64/bWV0YS1sbGFtYS9MbGFtYS0zLjEtOEI/level/request_rate2.5"
        );
        assert_eq!(
            group_path("", "m", "l"),
            "/metrics/job/ttftbench/instance@base64/=/model/m/level/l"
        );
    }
}
