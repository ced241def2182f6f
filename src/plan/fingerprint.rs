//! Whether two runs measured the same thing: the workload fingerprint stored in every level's
//! JSON (`workload_fingerprint`) and the differences `compare` refuses.
//!
//! The fingerprint holds what changes the numbers independently of the server: where requests
//! go (endpoint type and path, model, streaming), what they carry (prompt source with its
//! input-length distribution, output-length distribution, extra request fields), how tokens are
//! counted (tokenizer, server counts or not) and when a level's measurement ends (stop rule).
//! The prompt salt counts only as its mode, and only when it is not the default `auto`: two runs
//! salted afresh measured the same thing, whatever their salts were.
//! Load levels are not part of it: `compare` matches levels by load itself. Values are short
//! strings, so a difference reads as `output: 200±0 tokens → 10±0 tokens`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RunPlan;
use crate::load::{LevelLength, LevelLengthRule};
use crate::workload::{PromptSalt, PromptSource, TraceSource};

/// The key of the fingerprint in a level's JSON.
pub const FINGERPRINT_KEY: &str = "workload_fingerprint";

/// A run's workload, field by field (names are stable: they are written to disk).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(pub BTreeMap<String, String>);

impl RunPlan {
    /// This plan's workload fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        let t = &self.target;
        let w = &self.workload;
        let prompts = match (&w.prompts, w.prefix_prompts) {
            (PromptSource::Synthetic { mean, stddev }, None) => {
                format!("synthetic, {mean}±{stddev} tokens")
            }
            (PromptSource::Synthetic { mean, stddev }, Some(p)) => format!(
                "synthetic, {mean}±{stddev} tokens after 1 of {} prefixes of {} tokens",
                p.count, p.length
            ),
            (PromptSource::File(p), _) => format!("file {}", p.display()),
            (PromptSource::Trace(t), _) => trace_text(t),
            (PromptSource::Rankings(r), _) => format!("rankings {}", r.path.display()),
            (PromptSource::Scored(s), _) => format!(
                "{} ({} questions, {}-shot, graded {}) from {}",
                s.benchmark.name(),
                s.items,
                s.n_shots,
                s.grader.name(),
                s.files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let output = w.output.map_or("left to the server".to_string(), |o| {
            let exact = if o.deterministic { ", exact" } else { "" };
            format!("{}±{} tokens{exact}", o.mean, o.stddev)
        });
        let stop = match self.stop {
            LevelLengthRule::Auto => "max(100, 2 × concurrency) requests or 25 s".to_string(),
            LevelLengthRule::Fixed(LevelLength::Requests(n)) => format!("{n} requests"),
            LevelLengthRule::Fixed(LevelLength::Window(d)) => {
                format!("{} ms window", d.as_millis())
            }
            LevelLengthRule::Fixed(LevelLength::RequestsOrTime { requests, time }) => {
                format!("{requests} requests or {} ms", time.as_millis())
            }
        };
        let extra = w
            .extra_inputs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let tokens = match (self.use_server_token_count, self.tokenizer_from_server) {
            (true, _) => "server usage",
            (false, true) => "tokenizer, inputs by the server's /tokenize",
            (false, false) => "tokenizer",
        };
        let fields = [
            ("endpoint", format!("{} {}", t.api.name(), t.endpoint)),
            ("model", t.model.clone()),
            ("streaming", t.streaming.to_string()),
            ("prompts", prompts),
            ("output", output),
            ("extra_inputs", extra),
            (
                "tokenizer",
                w.tokenizer.clone().unwrap_or("gpt2 (built-in)".into()),
            ),
            ("token_count", tokens.to_string()),
            ("stop", stop),
        ];
        let mut print: BTreeMap<String, String> = fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        // Runs salted afresh (the default) measure the same thing whatever their salts; runs
        // whose prompts may meet an earlier run's cache do not. Absent means `auto`, as in runs
        // recorded before the salt existed, so their baselines stay comparable.
        let salt = match &w.prompt_salt {
            PromptSalt::Auto => None,
            PromptSalt::None => Some("none (same text every run)"),
            PromptSalt::Text(_) => Some("fixed (shared with runs of the same salt)"),
        };
        if let Some(salt) = salt {
            print.insert(SALT_KEY.into(), salt.into());
        }
        // Multi-turn sessions send histories, not single prompts; a run without them has no
        // key, like the runs recorded before they existed.
        if let Some(sessions) = &w.sessions {
            print.insert(SESSIONS_KEY.into(), sessions_text(sessions));
        }
        // Cancelling requests changes what the server does and what is measured; a run without
        // it has no key, like the runs recorded before it existed.
        if self.cancellation().is_some() {
            print.insert(
                CANCEL_KEY.into(),
                format!(
                    "{}% after {} ms",
                    self.request_cancellation.rate_pct,
                    self.request_cancellation.delay.as_millis()
                ),
            );
        }
        // What the newer APIs' requests carry besides the prompt; a run without them has no
        // key, like the runs recorded before they existed.
        for (key, value) in api_parts(&t.api, w) {
            print.insert(key.into(), value);
        }
        Fingerprint(print)
    }
}

/// The fingerprint's entries for texts per request (embeddings, rankings), images and tools.
fn api_parts(
    api: &crate::target::Api,
    w: &crate::workload::WorkloadPlan,
) -> Vec<(&'static str, String)> {
    use crate::workload::images::ImageSource;
    use crate::workload::tools::ToolChoice;
    let mut out = Vec::new();
    if !api.generates() {
        out.push((BATCH_KEY, w.batch_size_text.to_string()));
    }
    if let Some(i) = &w.images {
        let source = match &i.source {
            ImageSource::Synthetic {
                width,
                height,
                format,
            } => format!(
                "synthetic {}±{} x {}±{} px, {}",
                width.0,
                width.1,
                height.0,
                height.1,
                format.map_or("png or jpeg", |f| f.mime())
            ),
            ImageSource::Dir { path, .. } => format!("directory {}", path.display()),
        };
        out.push((IMAGES_KEY, format!("{} a request, {source}", i.per_request)));
    }
    if let Some(t) = &w.tools {
        let choice = match &t.choice {
            ToolChoice::Auto => "auto".to_string(),
            ToolChoice::None => "none".to_string(),
            ToolChoice::Required => "required".to_string(),
            ToolChoice::Named(n) => n.clone(),
        };
        out.push((TOOLS_KEY, format!("{}, choice {choice}", t.path.display())));
    }
    out
}

/// The fingerprint's key for the texts a request sends (embeddings, rankings).
const BATCH_KEY: &str = "batch_size_text";
/// The fingerprint's key for the images a request sends.
const IMAGES_KEY: &str = "images";
/// The fingerprint's key for the tools a request offers.
const TOOLS_KEY: &str = "tools";

/// The fingerprint's key for a prompt salt other than `auto`.
const SALT_KEY: &str = "prompt_salt";

/// The fingerprint's key for multi-turn sessions.
const SESSIONS_KEY: &str = "sessions";

/// Sessions as the fingerprint shows them: how many, their turns and think time.
fn sessions_text(s: &crate::workload::conversation::SessionPlan) -> String {
    use crate::workload::conversation::ConversationSource;
    let turns = match &s.source {
        ConversationSource::Synthetic {
            turns_mean,
            turns_stddev,
        } => format!("{turns_mean}±{turns_stddev} turns"),
        ConversationSource::File { path } => format!("turns of {}", path.display()),
    };
    // Recorded answers make different histories than live ones: runs of each compare apart.
    let replies = if s.replies.is_live() {
        ""
    } else {
        ", recorded replies"
    };
    format!(
        "{} sessions, {turns} ({} in all), think {}±{} ms{replies}",
        s.sessions, s.total_turns, s.delay_mean_ms, s.delay_stddev_ms
    )
}

/// The fingerprint's key for `--request-cancellation-rate` above 0.
const CANCEL_KEY: &str = "request_cancellation";

/// A trace as the fingerprint shows it: file, rows, block size and window.
fn trace_text(t: &TraceSource) -> String {
    let window = match (t.start_ms, t.end_ms) {
        (None, None) => String::new(),
        (s, e) => format!(
            ", window {}–{} ms",
            s.map_or("start".into(), |s| s.to_string()),
            e.map_or("end".into(), |e| e.to_string())
        ),
    };
    format!(
        "trace {} ({} requests, {}-token blocks{window})",
        t.path.display(),
        t.requests,
        t.block_size
    )
}

impl Fingerprint {
    /// `field: base → current` for every field that differs (a field only one side has counts
    /// as differing).
    pub fn differences(&self, current: &Fingerprint) -> Vec<String> {
        let keys: std::collections::BTreeSet<&String> =
            self.0.keys().chain(current.0.keys()).collect();
        let shown = |v: Option<&String>| v.map_or("(not recorded)".to_string(), |v| v.clone());
        keys.into_iter()
            .filter(|k| self.0.get(*k) != current.0.get(*k))
            .map(|k| {
                format!(
                    "{k}: {} → {}",
                    shown(self.0.get(k)),
                    shown(current.0.get(k))
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::resolve::{TargetSpec, target};
    use crate::workload::OutputLength;

    fn plan() -> RunPlan {
        RunPlan::new(
            target(&TargetSpec {
                model: "gpt2".into(),
                ..TargetSpec::default()
            })
            .unwrap(),
        )
    }

    #[test]
    fn same_plan_same_fingerprint_and_differences_named() {
        let a = plan();
        assert_eq!(
            a.fingerprint().differences(&plan().fingerprint()),
            Vec::<String>::new()
        );
        let mut b = plan();
        b.workload.output = Some(OutputLength {
            mean: 10,
            stddev: 0,
            deterministic: false,
        });
        b.stop = LevelLengthRule::Fixed(LevelLength::Requests(50));
        assert_eq!(
            a.fingerprint().differences(&b.fingerprint()),
            vec![
                "output: left to the server → 10±0 tokens".to_string(),
                "stop: max(100, 2 × concurrency) requests or 25 s → 50 requests".to_string(),
            ]
        );
    }

    /// Auto salts never make two runs incomparable; a run that may meet a cache does.
    #[test]
    fn salt_mode_counts_only_when_not_auto() {
        let a = plan();
        assert!(!a.fingerprint().0.contains_key(SALT_KEY));
        let mut b = plan();
        b.workload.prompt_salt = PromptSalt::None;
        assert_eq!(
            a.fingerprint().differences(&b.fingerprint()),
            vec!["prompt_salt: (not recorded) → none (same text every run)".to_string()]
        );
        b.workload.prompt_salt = PromptSalt::Text("x".into());
        b.workload.prefix_prompts = Some(crate::workload::PrefixPool {
            count: 4,
            length: 64,
        });
        let f = b.fingerprint();
        assert_eq!(
            f.0["prompts"],
            "synthetic, 550±0 tokens after 1 of 4 prefixes of 64 tokens"
        );
        assert!(f.0[SALT_KEY].starts_with("fixed"));
    }

    /// Runs that cancel requests are not compared with runs that do not; rate 0 adds nothing.
    #[test]
    fn cancellation_counts_only_when_on() {
        let a = plan();
        let mut b = plan();
        b.request_cancellation.delay = std::time::Duration::from_millis(200);
        assert_eq!(a.fingerprint(), b.fingerprint());
        b.request_cancellation.rate_pct = 25.0;
        assert_eq!(
            a.fingerprint().differences(&b.fingerprint()),
            vec!["request_cancellation: (not recorded) → 25% after 200 ms".to_string()]
        );
    }

    #[test]
    fn round_trips_through_json() {
        let f = plan().fingerprint();
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["model"], "gpt2");
        assert_eq!(serde_json::from_value::<Fingerprint>(v).unwrap(), f);
    }
}
