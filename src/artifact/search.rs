//! `search.json`, next to a search's `summary.json`: what was searched, the answer with its
//! confidence, which verdicts were proven and which loads they cover, every probe (load,
//! requests, verdict, why it stopped, each objective's estimate and interval), what a proof
//! costs, and the requests spent against the equivalent ladder. `report` reads it back to draw
//! the search's section.
//!
//! Keys: `over` (`concurrency` or `request_rate`), `objectives` (the `--slo` expressions),
//! `confidence`, `look_confidence` (the lowest confidence of an objective's interval at one
//! look, see `analysis::sequential`), `method` (the method in one sentence), `order` (`from_max`:
//! the first probe at `--max`; `climb`: doubling from `--min` with scouts), `min`, `max`,
//! `resolution` (1 concurrency step, or a rate's relative step), `max_probe_requests`,
//! `max_probe_time_s`, `max_time_s` (`--max-time`), `answer` (`load`, `level`, `dir`,
//! `request_throughput`, `output_token_throughput`, `request_goodput`,
//! `output_token_throughput_per_user`; null when no load was proven to meet the objectives),
//! `next` (the lowest load above the answer that did not meet them: `load`, `level`,
//! `verdict`), `statement` (the answer in words, with its confidence), `monotonicity` (what the
//! proven verdicts cover: `meets_up_to`, every load up to the answer; `fails_from`, every load
//! from the lowest one proven to fail), `cost` (`objectives`: per objective `objective`,
//! `fewest_requests_to_meet`, `meets_level` and `fails_level`, the per-look levels of its two
//! ends; `first_probe_rate`, requests/s; `estimated_s`, the search's time estimated after the
//! first probe), `probes` (in the order made: `index`, `load`, `level`, `dir`, `kind` — `proof`
//! or `scout` — `verdict` — `meets`, `fails`, `undecided`, `saturated`, `scouted` or
//! `interrupted` — `proof` — `proven`, `covered` (its verdict follows from a proven one) or
//! `unproven` — `stopped`, `why`, `measured`, `sent`, `elapsed_s`, `objectives`: `objective`,
//! `estimate`, `lower`, `upper`, `unit`, `decision`, `interval`), `requests_spent` (sent by
//! every probe, warm-up included), `elapsed_s`, `ladder` (`loads`: the same resolution from
//! `min` to the next load, `requests_per_level`, `requests`, `share_spent`: `requests_spent /
//! requests`), `exit_code`, `interrupted`, `timed_out` (`--max-time` ran out), `schema_version`.

use std::path::Path;

use serde::{Deserialize, Serialize};
use strum::{EnumString, IntoStaticStr, VariantArray, VariantNames};

use crate::analysis::sequential::Stopped;

/// File name.
pub const SEARCH_FILE: &str = "search.json";

/// Requests per level of the ladder a search is compared with.
pub const LADDER_REQUESTS: u64 = 200;

/// How a probe ended, for the search. Written and read back by its `strum` name (the tables'
/// word too).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, IntoStaticStr, EnumString, VariantArray, VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum ProbeVerdict {
    /// Every objective's interval on the good side (and every point objective held).
    Meets,
    /// An objective's interval on the bad side (or a point objective missed).
    Fails,
    /// A cap came first with an objective still open: not guessed.
    Undecided,
    /// The server could not absorb the load.
    Saturated,
    /// A scout that did not fail within its first look: no verdict.
    Scouted,
    /// Ctrl-C.
    Interrupted,
}

crate::names::serde_by_name!(ProbeVerdict);
crate::names::serde_by_name!(ProbeKind);
crate::names::serde_by_name!(Proof);

impl ProbeVerdict {
    /// `meets`, `fails`, ...
    pub fn word(self) -> &'static str {
        self.into()
    }
}

/// How a probe was run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, IntoStaticStr, EnumString, VariantArray, VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum ProbeKind {
    /// Measured until its verdict is settled (or a cap).
    Proof,
    /// Cut at its first look: a fail is proven, anything else only says it did not fail
    /// quickly.
    Scout,
}

/// Whether a probe's verdict is proven.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, IntoStaticStr, EnumString, VariantArray, VariantNames,
)]
#[strum(serialize_all = "snake_case")]
pub enum Proof {
    /// Its own interval settled its verdict.
    Proven,
    /// Its verdict follows from a proven one by monotonicity (a load at or below the answer
    /// meets, one at or above a proven fail fails).
    Covered,
    /// Neither.
    Unproven,
}

/// One objective of one probe at its last look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveDoc {
    /// The `--slo` expression.
    pub objective: String,
    /// The point estimate.
    pub estimate: Option<f64>,
    /// Lower end of its interval.
    pub lower: Option<f64>,
    /// Upper end.
    pub upper: Option<f64>,
    /// The unit of the three.
    pub unit: String,
    /// `meets`, `fails`, `open`.
    pub decision: String,
    /// Whether it has an interval (else it was checked on its value).
    pub interval: bool,
}

impl ObjectiveDoc {
    /// `7.21 [6.10, 7.90]` (an interval) or `7.21 (meets)` (a value), fractions as percent;
    /// `with_unit` puts the unit after the numbers (`7.21 [6.10, 7.90] ms`).
    pub fn shown(&self, with_unit: bool) -> String {
        let frac = self.unit == "fraction";
        let v = |x: Option<f64>| match x {
            Some(x) if frac => format!("{:.2}%", x * 100.0),
            Some(x) => format!("{x:.2}"),
            None => "open".into(),
        };
        let unit = if frac || !with_unit {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        if self.interval {
            format!(
                "{} [{}, {}]{unit}",
                v(self.estimate),
                v(self.lower),
                v(self.upper)
            )
        } else {
            format!("{}{unit} ({})", v(self.estimate), self.decision)
        }
    }
}

/// One probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeDoc {
    /// 1-based, in the order made.
    pub index: u32,
    /// The load.
    pub load: f64,
    /// The level's name (`concurrency8`).
    pub level: String,
    /// Its directory.
    pub dir: String,
    /// `proof` (measured until settled) or `scout` (cut at its first look).
    pub kind: ProbeKind,
    /// How it ended for the search.
    pub verdict: ProbeVerdict,
    /// `proven` (its own interval settled it), `covered` (its verdict follows from a proven
    /// one by monotonicity) or `unproven`.
    pub proof: Proof,
    /// Why its measurement stopped (`settled`, `request_cap`, `saturated`, ...).
    pub stopped: Stopped,
    /// The same in words, with the signal that fired for a saturated probe.
    pub why: String,
    /// Successful requests the decision was made on.
    pub measured: u64,
    /// Requests sent, warm-up included.
    pub sent: u64,
    /// Seconds it took, warm-up included.
    pub elapsed_s: f64,
    /// Each objective at the last look.
    pub objectives: Vec<ObjectiveDoc>,
}

/// What the proven verdicts cover, given that a load no higher than one meeting the objectives
/// meets them too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonotonicityDoc {
    /// Every load up to this one meets (the answer's proof).
    pub meets_up_to: Option<f64>,
    /// Every load from this one fails (the lowest proven fail).
    pub fails_from: Option<f64>,
}

/// What a proof costs for one objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveCostDoc {
    /// The `--slo` expression.
    pub objective: String,
    /// The fewest successful requests with which a probe can show it met.
    pub fewest_requests_to_meet: Option<u64>,
    /// The per-look level of its meets end.
    pub meets_level: f64,
    /// The per-look level of its fails end.
    pub fails_level: f64,
}

/// What the search costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostDoc {
    /// Per objective with an interval.
    pub objectives: Vec<ObjectiveCostDoc>,
    /// The first probe's successful requests per second.
    pub first_probe_rate: Option<f64>,
    /// The search's time as estimated after the first probe (s).
    pub estimated_s: Option<f64>,
}

/// The answer: the highest load that met every objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerDoc {
    /// The load.
    pub load: f64,
    /// Its level's name.
    pub level: String,
    /// Its directory.
    pub dir: String,
    /// Successful requests per second there.
    pub request_throughput: f64,
    /// Output tokens per second there.
    pub output_token_throughput: f64,
    /// Requests per second whose own metrics met every per-request bound of the objectives.
    pub request_goodput: Option<f64>,
    /// Output tokens per second per user there.
    pub output_token_throughput_per_user: Option<f64>,
}

/// The lowest load above the answer that did not meet the objectives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextDoc {
    /// The load.
    pub load: f64,
    /// Its level's name.
    pub level: String,
    /// How it ended.
    pub verdict: ProbeVerdict,
}

/// The ladder the search is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderDoc {
    /// Its loads: the search's resolution from `min` up to the next load.
    pub loads: Vec<f64>,
    /// Requests per level.
    pub requests_per_level: u64,
    /// Requests it sends.
    pub requests: u64,
    /// The search's requests as a share of the ladder's.
    pub share_spent: f64,
}

/// The whole of `search.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchDoc {
    /// `concurrency` or `request_rate`.
    pub over: String,
    /// The `--slo` expressions.
    pub objectives: Vec<String>,
    /// The asked confidence.
    pub confidence: f64,
    /// Each interval's confidence at one look.
    pub look_confidence: f64,
    /// The method, in one sentence.
    pub method: String,
    /// `from_max` or `climb`.
    pub order: String,
    /// The lowest load tried.
    pub min: f64,
    /// The highest load allowed.
    pub max: Option<f64>,
    /// The step the bisection stops at (1 concurrency step, or a rate's relative step).
    pub resolution: f64,
    /// Requests a probe measures at most.
    pub max_probe_requests: u64,
    /// Seconds a probe measures at most.
    pub max_probe_time_s: Option<f64>,
    /// Seconds the whole search runs at most.
    pub max_time_s: Option<f64>,
    /// The highest load that met the objectives.
    pub answer: Option<AnswerDoc>,
    /// The next load, which did not.
    pub next: Option<NextDoc>,
    /// The answer in words.
    pub statement: String,
    /// What the proven verdicts cover.
    pub monotonicity: MonotonicityDoc,
    /// What a proof costs, and the search's estimated time.
    pub cost: CostDoc,
    /// Every probe, in the order made.
    pub probes: Vec<ProbeDoc>,
    /// Requests sent by all probes, warm-up included.
    pub requests_spent: u64,
    /// Seconds the search took.
    pub elapsed_s: f64,
    /// The equivalent ladder.
    pub ladder: LadderDoc,
    /// The run's exit code (0: a load was proven to meet the objectives; 1: none was).
    pub exit_code: u8,
    /// Whether Ctrl-C ended the search.
    pub interrupted: bool,
    /// Whether `--max-time` ran out before the search was over.
    pub timed_out: bool,
}

/// The file's text.
pub fn json(doc: &SearchDoc) -> String {
    let mut v = serde_json::to_value(doc).unwrap_or_default();
    super::stamp(&mut v);
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// The search in `dir`, when it holds one.
pub fn read(dir: &Path) -> Option<SearchDoc> {
    let text = std::fs::read_to_string(dir.join(SEARCH_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The loads of the ladder with the search's resolution from `min` to `top` (inclusive):
/// every concurrency, or rates growing by `1 + resolution` (the last one `top`).
pub fn ladder_loads(concurrency: bool, min: f64, top: f64, resolution: f64) -> Vec<f64> {
    let mut out = Vec::new();
    if concurrency {
        let (a, b) = (min.round() as u64, top.round() as u64);
        out.extend((a..=b.max(a)).map(|c| c as f64));
        return out;
    }
    let mut r = min;
    while r < top * (1.0 - 1e-9) && out.len() < 10_000 {
        out.push(r);
        r *= 1.0 + resolution;
    }
    out.push(top.max(min));
    out
}

/// A search of two probes, the answer at concurrency 8: the example the encoders' tests share.
#[cfg(test)]
pub(crate) fn example() -> SearchDoc {
    let objective = |estimate: f64, lower: f64, upper: Option<f64>, decision: &str| ObjectiveDoc {
        objective: "time_to_first_token.p75<=25ms".into(),
        estimate: Some(estimate),
        lower: Some(lower),
        upper,
        unit: "ms".into(),
        decision: decision.into(),
        interval: true,
    };
    let probe = |index: u32, load: f64, verdict, stopped: Stopped, measured, o| ProbeDoc {
        index,
        load,
        level: format!("concurrency{load}"),
        dir: format!("s/concurrency{load}"),
        kind: ProbeKind::Proof,
        verdict,
        proof: Proof::Proven,
        stopped,
        why: <&str>::from(stopped).into(),
        measured,
        sent: measured + 10,
        elapsed_s: 1.5,
        objectives: vec![o],
    };
    SearchDoc {
        over: "concurrency".into(),
        objectives: vec!["time_to_first_token.p75<=25ms".into()],
        confidence: 0.95,
        look_confidence: 0.9975,
        method: "m".into(),
        order: "from_max".into(),
        min: 8.0,
        max: Some(9.0),
        resolution: 1.0,
        max_probe_requests: 1000,
        max_probe_time_s: None,
        max_time_s: None,
        answer: Some(AnswerDoc {
            load: 8.0,
            level: "concurrency8".into(),
            dir: "s/concurrency8".into(),
            request_throughput: 25.52,
            output_token_throughput: 962.7,
            request_goodput: Some(25.52),
            output_token_throughput_per_user: Some(140.5),
        }),
        next: Some(NextDoc {
            load: 9.0,
            level: "concurrency9".into(),
            verdict: ProbeVerdict::Fails,
        }),
        statement: "concurrency 8 meets time_to_first_token.p75<=25ms; concurrency 9 does not (fails): the highest concurrency meeting them is 8, at 95 % confidence".into(),
        monotonicity: MonotonicityDoc {
            meets_up_to: Some(8.0),
            fails_from: Some(9.0),
        },
        cost: CostDoc {
            objectives: vec![ObjectiveCostDoc {
                objective: "time_to_first_token.p75<=25ms".into(),
                fewest_requests_to_meet: Some(24),
                meets_level: 0.0049,
                fails_level: 0.0049,
            }],
            first_probe_rate: Some(9.0),
            estimated_s: Some(4.0),
        },
        probes: vec![
            probe(1, 9.0, ProbeVerdict::Fails, Stopped::Settled, 20, objective(95.39, 81.36, None, "fails")),
            probe(2, 8.0, ProbeVerdict::Meets, Stopped::Settled, 25, objective(23.24, 14.81, Some(23.85), "meets")),
        ],
        requests_spent: 65,
        elapsed_s: 3.0,
        ladder: LadderDoc {
            loads: vec![8.0, 9.0],
            requests_per_level: LADDER_REQUESTS,
            requests: 400,
            share_spent: 65.0 / 400.0,
        },
        exit_code: 0,
        interrupted: false,
        timed_out: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every enum of the file reads back from what it writes.
    #[test]
    fn probe_enums_round_trip() {
        crate::names::assert_serde_round_trip::<ProbeVerdict>();
        crate::names::assert_serde_round_trip::<ProbeKind>();
        crate::names::assert_serde_round_trip::<Proof>();
        crate::names::assert_serde_round_trip::<Stopped>();
    }

    #[test]
    fn ladders() {
        assert_eq!(ladder_loads(true, 1.0, 5.0, 1.0), [1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(ladder_loads(true, 4.0, 4.0, 1.0), [4.0]);
        let r = ladder_loads(false, 10.0, 12.0, 0.05);
        assert_eq!(r.len(), 5);
        assert_eq!(r[0], 10.0);
        assert_eq!(r[4], 12.0);
    }

    #[test]
    fn round_trip() {
        let doc = SearchDoc {
            over: "concurrency".into(),
            objectives: vec!["time_to_first_token.p90<=15ms".into()],
            confidence: 0.95,
            look_confidence: 0.9987,
            method: "m".into(),
            order: "climb".into(),
            min: 1.0,
            max: None,
            resolution: 1.0,
            max_probe_requests: 1000,
            max_probe_time_s: None,
            max_time_s: Some(600.0),
            answer: None,
            next: Some(NextDoc {
                load: 1.0,
                level: "concurrency1".into(),
                verdict: ProbeVerdict::Fails,
            }),
            statement: "s".into(),
            monotonicity: MonotonicityDoc {
                meets_up_to: None,
                fails_from: Some(1.0),
            },
            cost: CostDoc {
                objectives: Vec::new(),
                first_probe_rate: None,
                estimated_s: None,
            },
            probes: Vec::new(),
            requests_spent: 20,
            elapsed_s: 2.0,
            ladder: LadderDoc {
                loads: vec![1.0],
                requests_per_level: LADDER_REQUESTS,
                requests: 200,
                share_spent: 0.1,
            },
            exit_code: 1,
            interrupted: false,
            timed_out: true,
        };
        let text = json(&doc);
        assert!(text.contains("\"verdict\": \"fails\""));
        assert!(text.contains("\"schema_version\""));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SEARCH_FILE), &text).unwrap();
        assert_eq!(read(dir.path()), Some(doc));
        let full = example();
        std::fs::write(dir.path().join(SEARCH_FILE), json(&full)).unwrap();
        assert_eq!(read(dir.path()), Some(full));
    }
}
