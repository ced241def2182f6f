//! `search`'s flags converted into a [`SearchPlan`]: `profile`'s conversion for the run it
//! shares (target, workload, objectives, outputs), then the search's own checks — objectives a
//! probe can settle, bounds in order, a confidence the caps can reach. The clap types end here.

use super::{SearchArgs, SearchOverArg};
use crate::analysis::sequential::{self, Looks, Rule};
use crate::error::UsageError;
use crate::metrics::{MetricRef, Objective, Op, Slo};
use crate::plan::search::{Axis, DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_RATE, SearchPlan};

/// Where a search's files go without `--artifact-dir`: one directory per search.
pub const DEFAULT_ARTIFACT_DIR: &str = "artifacts/{model}-search-{timestamp}";

/// The largest `--max-probe-requests`: the boundaries are computed for each count up to it.
const MAX_PROBE_REQUESTS: u64 = 200_000;

impl SearchArgs {
    /// The validated search of these flags; `argv` is the command line, kept (redacted).
    pub fn plan(&self, argv: &[String]) -> Result<SearchPlan, UsageError> {
        // --confidence is the search's here, not --target-moe's.
        let mut shared = self.run.clone();
        shared.measure.confidence = None;
        let mut run = super::ProfileArgs::with_defaults(shared).plan(argv)?;
        let axis = self.axis()?;
        let (min, max) = self.bounds(&axis)?;
        if self.max_probe_requests > MAX_PROBE_REQUESTS {
            return Err(UsageError(format!(
                "--max-probe-requests {}: at most {MAX_PROBE_REQUESTS} (a probe's boundaries are computed for every request up to it)",
                self.max_probe_requests
            )));
        }
        let rule = Rule::new(
            run.slos.clone(),
            None,
            self.run.measure.confidence(),
            Looks::new(self.max_probe_requests),
            self.max_probe_time,
        );
        check_objectives(&rule, run.target.streaming)?;
        if run.goodput.is_empty() {
            run.goodput = goodput_from(&run.slos);
        }
        let dir = self.run.artifacts.artifact_dir.clone();
        run.artifact_dir = Some(dir.unwrap_or_else(|| DEFAULT_ARTIFACT_DIR.into()));
        // The layout gives every probe a directory of its own below the search's.
        run.levels = vec![axis.stimulus(min), axis.stimulus(max.0)];
        let resolution = match axis {
            Axis::Concurrency => 1.0,
            Axis::RequestRate { .. } => self.resolution,
        };
        Ok(SearchPlan {
            run,
            axis,
            min,
            max: max.0,
            max_given: max.1,
            resolution,
            rule,
            max_time: self.max_time,
        })
    }

    fn axis(&self) -> Result<Axis, UsageError> {
        let (w, open_loop) = (&self.run.workload, &self.run.arrival);
        Ok(match self.over {
            SearchOverArg::Concurrency => Axis::Concurrency,
            SearchOverArg::RequestRate => {
                if w.num_sessions.is_some() || w.session_turns_mean.is_some() {
                    return Err(UsageError(
                        "--over request-rate: sessions run at a concurrency (sessions in flight); search them with --over concurrency".into(),
                    ));
                }
                Axis::RequestRate {
                    arrival: super::profile::arrival(
                        open_loop.request_distribution,
                        open_loop.burstiness,
                    )?,
                    max_inflight: open_loop.max_inflight,
                }
            }
        })
    }

    /// `--min` and `--max` (and whether `--max` was given), checked against each other.
    fn bounds(&self, axis: &Axis) -> Result<(f64, (f64, bool)), UsageError> {
        let min = self.min.unwrap_or(1.0);
        let (max, given) = match (self.max, axis) {
            (Some(m), _) => (m, true),
            (None, Axis::Concurrency) => (DEFAULT_MAX_CONCURRENCY.max(min), false),
            (None, Axis::RequestRate { .. }) => (DEFAULT_MAX_RATE.max(min), false),
        };
        for (flag, v) in [("--min", min), ("--max", max)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(UsageError(format!("{flag} {v}: a load is more than 0")));
            }
            if axis.is_concurrency() && v.fract() != 0.0 {
                return Err(UsageError(format!(
                    "{flag} {v}: concurrency is a whole number of requests in flight (e.g. {flag} {})",
                    v.round().max(1.0)
                )));
            }
        }
        if min > max {
            return Err(UsageError(format!(
                "--min {} is above --max {}: the search runs from --min up to --max; give --min at most --max",
                crate::analysis::text::load_text(min),
                crate::analysis::text::load_text(max)
            )));
        }
        Ok((min, (max, given)))
    }
}

/// What a search says to a flag of `profile` that it does not take: the groups that fix the
/// levels or their length, each with what a search uses instead. `None` for any other flag.
pub fn not_in_search(given: &str) -> Option<String> {
    use super::{FixedScheduleArgs, LevelArgs, MoeArgs, RepeatArgs, ShardArgs, StopArgs};
    let flag = given.split('=').next().unwrap_or(given);
    let groups = [
        (
            flags_of::<LevelArgs>(),
            "--over concurrency|request-rate with --min/--max",
        ),
        (
            flags_of::<StopArgs>(),
            "--max-probe-requests and --max-probe-time",
        ),
        (flags_of::<MoeArgs>(), "--confidence"),
        (flags_of::<FixedScheduleArgs>(), "profile --fixed-schedule"),
        (flags_of::<ShardArgs>(), "one process"),
        (
            flags_of::<RepeatArgs>(),
            "search once; compare with `ttftbench compare`",
        ),
    ];
    let (_, instead) = groups.iter().find(|(cmd, _)| {
        cmd.get_arguments().any(|a| {
            let long = a.get_long().map(|l| format!("--{l}"));
            let short = a.get_short().map(|s| format!("-{s}"));
            let aliases = a.get_all_aliases().unwrap_or_default();
            long.as_deref() == Some(flag)
                || short.as_deref() == Some(flag)
                || aliases.iter().any(|l| flag.strip_prefix("--") == Some(*l))
        })
    })?;
    Some(format!(
        "search chooses each probe's load and length itself: {flag} does not apply (use {instead})"
    ))
}

/// The flags of one group, as clap declares them.
fn flags_of<T: clap::Args>() -> clap::Command {
    T::augment_args(clap::Command::new("group"))
}

/// The objectives a search can settle: at least one with an interval, every streamed metric
/// streamed, each one provable within the probe cap at the asked confidence.
fn check_objectives(rule: &Rule, streaming: bool) -> Result<(), UsageError> {
    if rule.objectives.is_empty() {
        return Err(UsageError(
            "search needs objectives: add --slo, e.g. --slo 'time_to_first_token.p99<=500ms' --slo 'inter_token_latency.p99<=50ms'".into(),
        ));
    }
    if !rule.objectives.iter().any(sequential::has_interval) {
        return Err(UsageError(format!(
            "search settles each probe on a percentile or on error_rate, whose intervals need no assumption about the distribution; {} has none: add one, e.g. --slo 'time_to_first_token.p99<=500ms'",
            rule.objectives
                .iter()
                .map(Slo::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    for slo in &rule.objectives {
        if let MetricRef::Dist(m, _) = slo.metric
            && m.streaming_only()
            && !streaming
        {
            return Err(UsageError(format!(
                "--slo {slo}: {} is measured only on streamed responses: add --streaming",
                m.key()
            )));
        }
        if sequential::has_interval(slo) && rule.fewest_to_meet(slo).is_none() {
            return Err(UsageError(too_few(rule, slo)));
        }
    }
    Ok(())
}

/// Why the probe cap is too small for `slo`, with the cap that would do: the fewest requests a
/// meets needs under a cap twice what one look would need (then a cap of that many suffices:
/// a smaller cap means fewer looks, so no more requests).
fn too_few(rule: &Rule, slo: &Slo) -> String {
    let confidence = crate::metrics::trim_num(rule.confidence * 100.0);
    let one_look = sequential::null_share(slo)
        .filter(|&p0| p0 > 0.0)
        .map(|p0| ((1.0 - rule.confidence) / 2.0).ln() / (1.0 - p0).ln())
        .filter(|n| n.is_finite() && *n < MAX_PROBE_REQUESTS as f64 / 2.0);
    let needed = one_look.and_then(|n| {
        let cap = (2.0 * n).ceil() as u64;
        let bigger = Rule::new(vec![*slo], None, rule.confidence, Looks::new(cap), None);
        bigger.fewest_to_meet(slo)
    });
    match needed {
        Some(n) => format!(
            "--max-probe-requests {}: too few to show {slo} at {confidence} % confidence (it needs at least {n} successful requests per probe); raise --max-probe-requests to {n} or more, or lower --confidence",
            rule.looks.cap,
        ),
        None => format!("{slo} cannot be shown to hold at this confidence: lower --confidence"),
    }
}

/// Goodput's per-request bounds from the objectives: a request is good when its own TTFT, ITL,
/// latency ... is within every bound the objectives put on that metric (the tightest, where
/// several do).
fn goodput_from(slos: &[Slo]) -> Vec<Objective> {
    let mut out: Vec<Objective> = Vec::new();
    for slo in slos {
        let MetricRef::Dist(metric, _) = slo.metric else {
            continue;
        };
        let lower_better = slo.metric.lower_is_better();
        let fits = match slo.op {
            Op::Le | Op::Lt => lower_better,
            Op::Ge | Op::Gt => !lower_better,
        };
        if !fits {
            continue;
        }
        match out.iter_mut().find(|o| o.metric == metric) {
            Some(o) if lower_better => o.bound = o.bound.min(slo.bound),
            Some(o) => o.bound = o.bound.max(slo.bound),
            None => out.push(Objective {
                metric,
                bound: slo.bound,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::cli::Command;
    use crate::error::UsageError;
    use crate::plan::search::SearchPlan;

    fn plan(args: &[&str]) -> Result<SearchPlan, UsageError> {
        let mut argv = vec!["ttftbench", "search", "-m", "gpt2", "--streaming"];
        argv.extend_from_slice(args);
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let cli = crate::cli::parse(&argv).map_err(|e| UsageError(e.render().to_string()))?;
        match cli.command {
            Command::Search(s) => s.plan(&argv),
            other => panic!("expected search, got {other:?}"),
        }
    }

    fn refused(args: &[&str]) -> String {
        plan(args).unwrap_err().0
    }

    #[test]
    fn a_plain_search() {
        let p = plan(&["--slo", "ttft.p90<=15ms", "--slo", "error_rate<1%"]).unwrap();
        assert_eq!((p.min, p.max, p.max_given), (1.0, 4096.0, false));
        assert_eq!(p.rule.confidence, 0.95);
        assert_eq!(p.rule.looks.cap, 1000);
        assert_eq!(p.run.goodput.len(), 1);
        assert_eq!(p.run.goodput[0].bound, 15.0);
        let rate = "--slo ttft.p90<=15ms --over request-rate --min 2.5 --max 40";
        let rate = plan(&rate.split_whitespace().collect::<Vec<_>>()).unwrap();
        assert_eq!((rate.min, rate.max, rate.resolution), (2.5, 40.0, 0.05));
    }

    #[test]
    fn bad_input_says_the_fix() {
        let unknown = refused(&["--slo", "time_to_first_tokn.p99<=500ms"]);
        assert!(
            unknown.contains("unknown metric 'time_to_first_tokn'"),
            "{unknown}"
        );
        assert_eq!(
            refused(&["--slo", "ttft.p90<=15ms", "--min", "8", "--max", "4"]),
            "--min 8 is above --max 4: the search runs from --min up to --max; give --min at most --max"
        );
        for c in ["50%", "99.95%", "1.5", "abc"] {
            // Refused as it is parsed, in the parser's own words.
            let e = refused(&["--slo", "ttft.p90<=15ms", "--confidence", c]);
            assert!(e.starts_with(&format!("error: --confidence '{c}'")), "{e}");
        }
        assert!(refused(&[]).starts_with("search needs objectives"));
        assert!(
            refused(&["--slo", "request_throughput>=10"]).contains("percentile or on error_rate")
        );
        // profile's flags that fix the levels or their length are not search's; the error says
        // what to use instead.
        let (levels, length) = (
            "--over concurrency|request-rate with --min/--max",
            "--max-probe-requests and --max-probe-time",
        );
        for (flag, instead) in [
            ("--concurrency", levels),
            ("--request-rate", levels),
            ("--num-requests", length),
            ("-p", length),
            ("--duration", length),
            ("--target-moe", "--confidence"),
            ("--fixed-schedule-speedup", "profile --fixed-schedule"),
            ("--start-at", "one process"),
            ("--level-slot", "one process"),
            ("--repeat", "search once"),
        ] {
            let e = refused(&["--slo", "ttft.p90<=15ms", flag, "4"]);
            assert!(
                e.contains(&format!("unexpected argument '{flag}'"))
                    && e.contains(&format!("{flag} does not apply (use {instead}")),
                "{e}"
            );
        }
        let e = refused(&["--slo", "ttft.p90<=15ms", "--sloo", "x"]);
        assert!(!e.contains("does not apply"), "{e}");
        // What the search reports with (the knee of its probes) is its to set.
        assert!(plan(&["--slo", "ttft.p90<=15ms", "--knee-min-gain", "20%"]).is_ok());
        assert!(refused(&["--slo", "ttft.p90<=15ms", "--min", "1.5"]).contains("whole number"));
        let cap = refused(&["--slo", "ttft.p99.9<=15ms"]);
        assert!(cap.starts_with("--max-probe-requests 1000: too few to show time_to_first_token.p99.9<=15ms at 95 % confidence"), "{cap}");
    }
}
