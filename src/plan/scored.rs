//! A scored workload as asked for (`--accuracy-*`), resolved and checked alone: the dataset's
//! files found, every row read and checked (a row without an answer is refused with its file
//! and line), the grader fitted to the answers, and what a scored run implies for the rest of
//! the plan — chat or completions requests, temperature 0 unless `--extra-inputs` says
//! otherwise, and levels that send every question once unless their length is given.

use crate::error::{UsageError, usage};
use crate::load::{LevelLength, LevelLengthRule};
use crate::target::Api;
use crate::workload::scored::locate::{self, DatasetCaches, Want};
use crate::workload::scored::{self, Benchmark, Grader, ScoredSource, Selection};

/// Few-shot examples at most (AIPerf's bound).
pub const MAX_SHOTS: u32 = 32;

/// The `--accuracy-*` flags as given.
#[derive(Debug, Clone, Default)]
pub struct AccuracySpec {
    /// `--accuracy-benchmark`.
    pub benchmark: Option<Benchmark>,
    /// `--accuracy-dataset`.
    pub dataset: Option<String>,
    /// `--accuracy-config`.
    pub config: Option<String>,
    /// `--accuracy-split`.
    pub split: Option<String>,
    /// `--accuracy-n-shots`.
    pub n_shots: Option<u32>,
    /// `--accuracy-tasks`.
    pub tasks: Vec<String>,
    /// `--accuracy-grader`.
    pub grader: Option<Grader>,
    /// `--accuracy-system-prompt`.
    pub system_prompt: Option<String>,
    /// `--confidence` (0..1).
    pub confidence: f64,
}

impl AccuracySpec {
    /// Whether a flag that only a scored workload reads was given without one.
    fn stray_flag(&self) -> Option<&'static str> {
        [
            ("--accuracy-dataset", self.dataset.is_some()),
            ("--accuracy-config", self.config.is_some()),
            ("--accuracy-split", self.split.is_some()),
            ("--accuracy-n-shots", self.n_shots.is_some()),
            ("--accuracy-tasks", !self.tasks.is_empty()),
            ("--accuracy-grader", self.grader.is_some()),
            ("--accuracy-system-prompt", self.system_prompt.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}

/// The scored workload the flags ask for (`None` without `--accuracy-benchmark`), its rows read
/// and checked; `limit`: `--num-prompts`.
pub fn source(
    s: &AccuracySpec,
    limit: Option<u32>,
    caches: &DatasetCaches,
) -> Result<Option<ScoredSource>, UsageError> {
    let Some(benchmark) = s.benchmark else {
        return match s.stray_flag() {
            Some(flag) => usage(format!(
                "{flag} applies to a scored workload: add --accuracy-benchmark mmlu|gsm8k|hellaswag"
            )),
            None => Ok(None),
        };
    };
    let n_shots = s.n_shots.unwrap_or(0);
    if n_shots > MAX_SHOTS {
        return usage(format!(
            "--accuracy-n-shots {n_shots}: at most {MAX_SHOTS} worked examples fit before a question"
        ));
    }
    let spec = s.dataset.as_deref().unwrap_or(benchmark.hub_repo());
    let found = locate::locate(
        &Want {
            spec,
            config: s.config.as_deref().or(benchmark.default_config()),
            split: s.split.as_deref().unwrap_or(benchmark.graded_split()),
            shots_split: benchmark.shots_split(),
        },
        caches,
    )?;
    let set = scored::read_set(
        &Selection {
            benchmark,
            n_shots: n_shots as usize,
            tasks: &s.tasks,
            limit: limit.map(|n| n as usize),
        },
        &found,
    )?;
    let grader = s.grader.unwrap_or(benchmark.default_grader());
    if let Some(item) = set.items.iter().find(|i| !grader.accepts(&i.expected)) {
        let fits: Vec<&str> = <Grader as strum::VariantArray>::VARIANTS
            .iter()
            .copied()
            .filter(|g| g.accepts(&item.expected))
            .map(Grader::name)
            .collect();
        return usage(format!(
            "--accuracy-grader {}: cannot grade {}'s answers ({} expects {:?}); graders that can: {}",
            grader.name(),
            benchmark.name(),
            item.at,
            item.expected.text(),
            fits.join(", ")
        ));
    }
    Ok(Some(ScoredSource {
        benchmark,
        shot_files: if n_shots > 0 {
            found.shots.clone()
        } else {
            Vec::new()
        },
        files: found.graded,
        grader,
        n_shots,
        tasks: s.tasks.clone(),
        system_prompt: s.system_prompt.clone(),
        confidence: s.confidence,
        items: set.items.len(),
        set: std::sync::Arc::new(set),
    }))
}

/// Scored requests ask for greedy decoding unless `--extra-inputs` sets a temperature: the
/// determinism check compares temperature-0 outputs, and a grading run should not sample.
pub fn greedy_by_default(extra: &mut Vec<(String, serde_json::Value)>) {
    if !extra.iter().any(|(k, _)| k == "temperature") {
        extra.push(("temperature".into(), serde_json::json!(0)));
    }
}

/// A scored workload's levels send every question once unless `--request-count`, a
/// measurement interval or `--duration` says how long they last.
pub fn stop(src: &ScoredSource, stop: LevelLengthRule) -> LevelLengthRule {
    match stop {
        LevelLengthRule::Auto => LevelLengthRule::Fixed(LevelLength::Requests(src.items as u64)),
        other => other,
    }
}

/// Scored questions go to the chat or the completions API (few-shot examples as messages, or
/// as one text).
pub fn check_target(api: Api) -> Result<(), UsageError> {
    match api {
        Api::Chat | Api::Completions => Ok(()),
        other => usage(format!(
            "--accuracy-benchmark sends its questions to the chat or completions API; --endpoint-type {} is neither: give --endpoint-type chat or completions",
            other.name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caches() -> DatasetCaches {
        DatasetCaches::default()
    }

    #[test]
    fn flags_without_a_benchmark_are_refused() {
        let s = AccuracySpec {
            grader: Some(Grader::Numeric),
            ..Default::default()
        };
        let e = source(&s, None, &caches()).unwrap_err();
        assert!(
            e.0.starts_with("--accuracy-grader applies to a scored workload"),
            "{e}"
        );
        assert!(
            source(&AccuracySpec::default(), None, &caches())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn grader_must_fit_the_answers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mmlu.jsonl");
        std::fs::write(
            &p,
            "{\"question\": \"q\", \"choices\": [\"a\", \"b\"], \"answer\": 0}\n",
        )
        .unwrap();
        let s = AccuracySpec {
            benchmark: Some(Benchmark::Mmlu),
            dataset: Some(p.to_str().unwrap().into()),
            grader: Some(Grader::Numeric),
            confidence: 0.95,
            ..Default::default()
        };
        let e = source(&s, None, &caches()).unwrap_err();
        assert!(e.0.contains("cannot grade mmlu's answers"), "{e}");
        assert!(
            e.0.ends_with("graders that can: multiple_choice, exact_match"),
            "{e}"
        );
        let ok = source(&AccuracySpec { grader: None, ..s }, None, &caches())
            .unwrap()
            .unwrap();
        assert_eq!((ok.items, ok.grader), (1, Grader::MultipleChoice));
        assert_eq!(
            stop(&ok, LevelLengthRule::Auto),
            LevelLengthRule::Fixed(LevelLength::Requests(1))
        );
        let mut extra = vec![];
        greedy_by_default(&mut extra);
        assert_eq!(extra, [("temperature".to_string(), serde_json::json!(0))]);
        let mut warm = vec![("temperature".to_string(), serde_json::json!(0.7))];
        greedy_by_default(&mut warm);
        assert_eq!(warm.len(), 1);
        assert!(check_target(Api::Embeddings).is_err() && check_target(Api::Chat).is_ok());
    }
}
