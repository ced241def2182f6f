//! How flag values are written, parsed into typed values: durations with units, level lists
//! (`8`, `1:32`, `1:32:2`, `1,4,8`), rates, percentages, goodput objectives and extra request
//! fields. Each parser names the flag in its error and says what to write.

use std::time::Duration;

use crate::error::{UsageError, usage};
use crate::load::{Arrival, Shard, Stimulus};
use crate::metrics::{Metric, Objective};

/// Parses each value of a repeatable flag, stopping at the first that fails.
pub fn parse_each<T>(
    raw: &[String],
    parse: impl Fn(&str) -> Result<T, UsageError>,
) -> Result<Vec<T>, UsageError> {
    raw.iter().map(|s| parse(s)).collect()
}

/// One `--slo` expression (repeatable), for `profile`, `search` and `perf` alike; its error
/// names the metric or operator at fault.
pub fn parse_slo(_flag: &str, raw: &str) -> Result<crate::metrics::Slo, UsageError> {
    crate::metrics::parse(raw).map_err(|e| UsageError(e.to_string()))
}

/// A duration flag's value: `500ms`, `2s`, `1.5m`, `250us`, `1h`, `1m30s` (jiff's friendly
/// format, or ISO 8601's `PT1M`), or a bare number in the flag's own unit (`unit`: milliseconds
/// for `--measurement-interval`, seconds for `--request-timeout`).
pub fn parse_duration(flag: &str, raw: &str, unit: Duration) -> Result<Duration, UsageError> {
    let t = raw.trim();
    // Clap names the flag itself; the message then starts at the value.
    let flag = if flag.is_empty() {
        String::new()
    } else {
        format!("{flag} ")
    };
    let unit_name = if unit >= Duration::from_secs(1) {
        "seconds"
    } else {
        "milliseconds"
    };
    let negative = || UsageError(format!("{flag}{t}: must not be negative"));
    if t.starts_with('-') {
        return Err(negative());
    }
    let bare = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let parsed = if bare {
        t.parse::<f64>()
            .ok()
            .and_then(|v| Duration::try_from_secs_f64(unit.as_secs_f64() * v).ok())
    } else {
        t.parse::<jiff::SignedDuration>()
            .ok()
            .map(|d| Duration::try_from(d).map_err(|_| negative()))
            .transpose()?
    };
    parsed.ok_or_else(|| {
        let number = t.trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ');
        let suffix = t[number.len()..].trim();
        let cause = if !suffix.is_empty() && number.trim().parse::<f64>().is_ok() {
            format!("unknown unit '{suffix}'; write e.g.")
        } else {
            "expected a duration such as".to_string()
        };
        UsageError(format!(
            "{flag}{t}: {cause} 500ms, 2s or 1m (a bare number is in {unit_name})"
        ))
    })
}

/// `name:value` (value parsed as JSON when it is JSON, else a string) or a JSON object.
pub fn parse_extra_input(raw: &str) -> Result<Vec<(String, serde_json::Value)>, UsageError> {
    let t = raw.trim();
    if t.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(t)
            .map_err(|e| UsageError(format!("--extra-inputs {t}: invalid JSON object ({e})")))?;
        return match v {
            serde_json::Value::Object(m) => Ok(m.into_iter().collect()),
            _ => usage(format!("--extra-inputs {t}: expected a JSON object")),
        };
    }
    match t.split_once(':') {
        Some((k, v)) if !k.trim().is_empty() => {
            let v = v.trim();
            let value = serde_json::from_str(v)
                .unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
            Ok(vec![(k.trim().to_string(), value)])
        }
        _ => usage(format!(
            "--extra-inputs '{t}': expected name:value or a JSON object"
        )),
    }
}

/// Gamma arrivals with shape `--burstiness` (which must be positive whatever the distribution,
/// so a typo is caught even when it is unused).
pub fn check_burstiness(burstiness: f64) -> Result<f64, UsageError> {
    if !(burstiness > 0.0 && burstiness.is_finite()) {
        return usage("--burstiness must be a positive number (1 = Poisson)");
    }
    Ok(burstiness)
}

/// The gamma arrival process of shape `burstiness`.
pub fn gamma(burstiness: f64) -> Result<Arrival, UsageError> {
    Ok(Arrival::Gamma {
        shape: check_burstiness(burstiness)?,
    })
}

/// `--isl-buckets`: whether and where TTFT is split by input length.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IslBuckets {
    /// Not split.
    #[default]
    Off,
    /// At the quartiles of the workload's input lengths.
    Auto,
    /// At these edges (ascending): `<e1`, `e1..e2`, ..., `>=en`.
    Edges(Vec<u32>),
}

impl IslBuckets {
    /// The edges for a workload whose prompts have these input lengths (`isls` is only
    /// called for `auto`).
    pub fn edges(&self, isls: impl FnOnce() -> Vec<u32>) -> Vec<u32> {
        match self {
            IslBuckets::Off => Vec::new(),
            IslBuckets::Auto => crate::metrics::buckets::quartile_edges(&isls()),
            IslBuckets::Edges(e) => e.clone(),
        }
    }
}

/// `--isl-buckets 128,512,2048` (input-length edges, rising) or `auto`.
pub fn parse_isl_buckets(raw: Option<&str>) -> Result<IslBuckets, UsageError> {
    let Some(raw) = raw.map(str::trim) else {
        return Ok(IslBuckets::Off);
    };
    if raw.eq_ignore_ascii_case("auto") {
        return Ok(IslBuckets::Auto);
    }
    let edges = raw
        .split(',')
        .map(|e| e.trim().parse::<u32>().ok().filter(|&n| n > 0))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| {
            UsageError(format!(
                "--isl-buckets '{raw}': give input-length edges in tokens, e.g. 128,512,2048, or auto"
            ))
        })?;
    match crate::metrics::buckets::edges_problem(&edges) {
        Some(why) => usage(format!("--isl-buckets '{raw}': {why}")),
        None => Ok(IslBuckets::Edges(edges)),
    }
}

/// The objectives of one `--goodput` value (several may be given in one, space-separated).
#[derive(Debug, Clone, PartialEq)]
pub struct Objectives(pub Vec<Objective>);

/// `--goodput time_to_first_token:500 inter_token_latency:20`: one value of the flag.
pub fn parse_goodput(_flag: &str, raw: &str) -> Result<Objectives, UsageError> {
    let valid = "time_to_first_token, time_to_first_output_token, time_to_second_token, inter_token_latency, request_latency, output_token_throughput_per_user";
    raw.split_whitespace()
        .map(|item| {
            let (k, v) = item
                .split_once(':')
                .or_else(|| item.split_once('='))
                .ok_or_else(|| {
                    UsageError(format!(
                        "--goodput '{item}': expected metric:value, e.g. time_to_first_token:500"
                    ))
                })?;
            let metric = Metric::from_key(k)
                .filter(|m| {
                    matches!(
                        m,
                        Metric::TimeToFirstToken
                            | Metric::TimeToSecondToken
                            | Metric::InterTokenLatency
                            | Metric::RequestLatency
                            | Metric::OutputTokenThroughputPerUser
                    )
                })
                .ok_or_else(|| {
                    UsageError(format!("--goodput: unknown metric '{k}'; valid: {valid}"))
                })?;
            let bound: f64 = v
                .trim_end_matches("ms")
                .parse()
                .map_err(|_| UsageError(format!("--goodput {item}: '{v}' is not a number")))?;
            if !(bound > 0.0 && bound.is_finite()) {
                return usage(format!("--goodput {item}: the value must be positive"));
            }
            Ok(Objective { metric, bound })
        })
        .collect::<Result<_, _>>()
        .map(Objectives)
}

/// The list form of a level flag (`a,b,c`), each item parsed by `num`; `None` when `spec` is
/// not a list. An empty item (`1,,4`, `1,4,`) is refused by its position: skipping it would run
/// a sweep other than the one typed.
fn comma_list<T>(
    flag: &str,
    spec: &str,
    num: impl Fn(&str) -> Result<T, UsageError>,
) -> Option<Result<Vec<T>, UsageError>> {
    spec.contains(',').then(|| {
        spec.split(',')
            .enumerate()
            .map(|(i, item)| {
                if item.trim().is_empty() {
                    return usage(format!(
                        "{flag} {spec}: item {} of the list is empty; separate the levels with single commas, e.g. 1,4,8",
                        i + 1
                    ));
                }
                num(item)
            })
            .collect()
    })
}

/// Whether a level that did not parse was written as a negative number (`-3`, `-0.5`).
fn negative(s: &str) -> bool {
    s.trim()
        .strip_prefix('-')
        .is_some_and(|r| r.parse::<f64>().is_ok())
}

/// Refuses a `start:end` range that runs backwards.
fn ordered<T: PartialOrd + std::fmt::Display>(
    flag: &str,
    spec: &str,
    start: T,
    end: T,
) -> Result<(), UsageError> {
    if end < start {
        return usage(format!(
            "{flag} {spec}: the end ({end}) is below the start ({start})"
        ));
    }
    Ok(())
}

/// Request rates: `R`, `start:end[:step]` (doubling without a step, both ends inclusive) or
/// `a,b,c`; positive numbers.
pub fn parse_float_levels(spec: &str, flag: &str) -> Result<Vec<f64>, UsageError> {
    let spec = spec.trim();
    let num = |s: &str| -> Result<f64, UsageError> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| UsageError(format!("{flag} {spec}: '{s}' is not a number")))?;
        if !(v > 0.0 && v.is_finite()) {
            return usage(format!(
                "{flag} {spec}: rates must be positive ('{s}' is not)"
            ));
        }
        Ok(v)
    };
    if let Some(list) = comma_list(flag, spec, num) {
        return list;
    }
    let step = |s: &str| -> Result<f64, UsageError> {
        num(s).map_err(|_| {
            UsageError(format!(
                "{flag} {spec}: the step is '{s}'; give a positive step, or leave it out to double from the start (start:end)"
            ))
        })
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let (start, end, step) = match parts.as_slice() {
        [one] => return Ok(vec![num(one)?]),
        [a, b] => (num(a)?, num(b)?, None),
        [a, b, c] => (num(a)?, num(b)?, Some(step(c)?)),
        _ => {
            return usage(format!(
                "{flag} {spec}: expected R, start:end[:step], or a list like 5,10,20"
            ));
        }
    };
    ordered(flag, spec, start, end)?;
    let mut out = Vec::new();
    let mut v = start;
    // A small tolerance keeps `0.1:0.3:0.1` from losing its last level to rounding.
    while v <= end * (1.0 + 1e-9) && out.len() <= 1000 {
        out.push(v);
        v = match step {
            Some(s) => start + s * out.len() as f64,
            None => v * 2.0,
        };
    }
    if out.len() > 1000 {
        return usage(format!("{flag} {spec}: too many levels (at most 1000)"));
    }
    Ok(out)
}

/// A trimmed percentage (`10%`) or fraction (`0.1`) as a fraction; `None` when it is neither.
fn percent_or_fraction(t: &str) -> Option<f64> {
    match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|v| v / 100.0),
        None => t.parse::<f64>().ok(),
    }
}

/// A percentage (`10%`) or a fraction (`0.1`) as a fraction, for `--knee-min-gain`.
pub fn parse_fraction(flag: &str, raw: &str) -> Result<f64, UsageError> {
    let t = raw.trim();
    let v = percent_or_fraction(t)
        .ok_or_else(|| UsageError(format!("{flag} '{t}': expected a percentage such as 10%")))?;
    if !(v > 0.0 && v.is_finite()) {
        return usage(format!("{flag} '{t}': must be more than 0"));
    }
    Ok(v)
}

/// A [`parse_fraction`] below 100 %; `why` ends the refusal of a larger one.
fn fraction_below_one(flag: &str, raw: &str, why: &str) -> Result<f64, UsageError> {
    let v = parse_fraction(flag, raw)?;
    if v >= 1.0 {
        return usage(format!("{flag} '{}': {why}", raw.trim()));
    }
    Ok(v)
}

/// `--target-moe`: a margin of error as a share of the estimate, more than 0 and below 100 %.
pub fn parse_margin(flag: &str, raw: &str) -> Result<f64, UsageError> {
    let why = "a margin of error is a share of the estimate below 100% (e.g. 5%)";
    fraction_below_one(flag, raw, why)
}

/// `--resolution`: how close a rate search gets to its answer, more than 0 and below 100 %.
pub fn parse_resolution(flag: &str, raw: &str) -> Result<f64, UsageError> {
    let why = "the search stops when the next rate is within this share of its answer; give less than 100% (e.g. 5%)";
    fraction_below_one(flag, raw, why)
}

/// `--moe-metric`: a percentile or the average of a per-request metric
/// (`time_to_first_token.p99`, `request_latency.avg`).
pub fn parse_moe_metric(flag: &str, raw: &str) -> Result<crate::metrics::MetricRef, UsageError> {
    use crate::metrics::{MetricRef, Stat};
    match MetricRef::parse(raw).map_err(|e| UsageError(format!("{flag}: {e}")))? {
        m @ MetricRef::Dist(_, stat) if stat.quantile().is_some() || stat == Stat::Avg => Ok(m),
        _ => usage(format!(
            "{flag} {raw}: a margin of error needs a percentile or the average of a per-request metric, e.g. time_to_first_token.p99 or request_latency.avg"
        )),
    }
}

/// `--confidence`: a share above 50 % and at most 99.9 %, as `95%` or `0.95`.
pub fn parse_confidence(raw: &str) -> Result<f64, UsageError> {
    let t = raw.trim();
    let v = percent_or_fraction(t).ok_or_else(|| {
        UsageError(format!(
            "--confidence '{t}': expected a percentage such as 95% (or a fraction such as 0.95)"
        ))
    })?;
    // Below one half an interval says less than a coin toss; above 99.9 % the widened per-look
    // intervals need more requests than any cap allows.
    if !(v > 0.5 && v <= 0.999 + 1e-12) {
        return usage(format!(
            "--confidence '{t}': must be more than 50% and at most 99.9% (e.g. --confidence 95%)"
        ));
    }
    Ok(v)
}

/// What GenAI-Perf's arguments after `--` (meant for perf_analyzer) mean here.
#[derive(Debug, Default, PartialEq)]
pub struct Passthrough {
    /// `--measurement-interval MS` / `-p MS`.
    pub measurement_interval: Option<Duration>,
    /// `-v` / `--verbose`.
    pub verbose: bool,
    /// What was left out, and why, one line each.
    pub ignored: Vec<String>,
}

/// Reads perf_analyzer arguments given after `--` to a GenAI-Perf command: those with a meaning
/// here are mapped (the measurement interval, `-v`), the rest are named as ignored, so a copied
/// script runs and says what it dropped. A value that does not parse is a usage error.
pub fn perf_analyzer_passthrough(args: &[String]) -> Result<Passthrough, UsageError> {
    let mut out = Passthrough::default();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next().cloned());
        match name {
            "--measurement-interval" | "-p" => {
                let raw = value().ok_or_else(|| {
                    UsageError(format!("-- {name}: give the interval (milliseconds)"))
                })?;
                out.measurement_interval = Some(parse_duration(
                    &format!("-- {name}"),
                    &raw,
                    Duration::from_millis(1),
                )?);
            }
            "-v" | "--verbose" | "--verbose-csv" => out.verbose = true,
            "--max-threads" => {
                let n = value().unwrap_or_default();
                out.ignored.push(format!(
                    "-- --max-threads {n}: ignored (ttftbench's requests are async tasks on all cores, not threads)"
                ));
            }
            other if other.starts_with('-') => {
                // A following value (not a flag) belongs to it.
                let takes_next = inline.is_none() && it.peek().is_some_and(|n| !n.starts_with('-'));
                let v = match (&inline, takes_next) {
                    (Some(v), _) => format!(" {v}"),
                    (None, true) => format!(" {}", it.next().map(String::as_str).unwrap_or("")),
                    (None, false) => String::new(),
                };
                out.ignored.push(format!(
                    "-- {other}{v}: a perf_analyzer argument with no meaning here, ignored"
                ));
            }
            other => out
                .ignored
                .push(format!("-- {other}: not a perf_analyzer flag, ignored")),
        }
    }
    Ok(out)
}

/// A share from 0 to 100 % (`50%` or `0.5`), for `--max-error-rate`.
pub fn parse_share(flag: &str, raw: &str) -> Result<f64, UsageError> {
    let t = raw.trim();
    let v = percent_or_fraction(t)
        .ok_or_else(|| UsageError(format!("{flag} '{t}': expected a percentage such as 50%")))?;
    if !(0.0..=1.0).contains(&v) {
        return usage(format!("{flag} '{t}': must be from 0% to 100%"));
    }
    Ok(v)
}

/// A percentage from 0 to 100 written as AIPerf writes it (`10`) or with its sign (`10%`),
/// returned as the percentage (10.0).
pub fn parse_percent(flag: &str, raw: &str) -> Result<f64, UsageError> {
    let t = raw.trim();
    let v: f64 = t
        .strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse()
        .map_err(|_| {
            UsageError(format!(
                "{flag} '{t}': expected a percentage from 0 to 100, such as 10 or 10%"
            ))
        })?;
    if !(0.0..=100.0).contains(&v) {
        return usage(format!(
            "{flag} '{t}': must be from 0 to 100 (a percentage of requests)"
        ));
    }
    Ok(v)
}

/// A level flag's value (`--concurrency`, `--request-rate`): the levels, and the text they were
/// read from, which a command line shown back to the user repeats as typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Levels<T> {
    /// The levels, in the order they run.
    pub values: Vec<T>,
    /// The value as given.
    pub text: String,
}

impl<T> std::fmt::Display for Levels<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// `--concurrency N`, `start:end[:step]` or `a,b,c`, for clap.
pub fn concurrency_flag(flag: &str, spec: &str) -> Result<Levels<u32>, UsageError> {
    let values = parse_int_levels(spec, flag)?;
    Ok(Levels {
        values,
        text: spec.into(),
    })
}

/// `--request-rate R`, `start:end[:step]` or `a,b,c`, for clap.
pub fn rate_flag(flag: &str, spec: &str) -> Result<Levels<f64>, UsageError> {
    let values = parse_float_levels(spec, flag)?;
    Ok(Levels {
        values,
        text: spec.into(),
    })
}

/// Closed-loop levels: `--concurrency`'s, concurrency 1 when it is not given.
pub fn concurrency_levels(levels: Option<&Levels<u32>>) -> Vec<Stimulus> {
    levels.map_or(vec![Stimulus::Concurrency(1)], |l| {
        l.values
            .iter()
            .copied()
            .map(Stimulus::Concurrency)
            .collect()
    })
}

/// Parses a level list of positive integers. `start:end` without a step doubles from start
/// (GenAI-Perf's power-of-two sweep); with a step it counts linearly; both ends inclusive.
pub fn parse_int_levels(spec: &str, flag: &str) -> Result<Vec<u32>, UsageError> {
    let spec = spec.trim();
    let num = |s: &str| -> Result<u32, UsageError> {
        let v: u32 = s.trim().parse().map_err(|_| {
            UsageError(if negative(s) {
                format!("{flag} {spec}: levels must be positive ('{s}' is not)")
            } else {
                format!("{flag} {spec}: '{s}' is not a positive whole number")
            })
        })?;
        if v == 0 {
            return usage(format!("{flag} {spec}: levels must be at least 1"));
        }
        Ok(v)
    };
    if let Some(list) = comma_list(flag, spec, num) {
        return list;
    }
    let parts: Vec<&str> = spec.split(':').collect();
    match parts.as_slice() {
        [one] => Ok(vec![num(one)?]),
        [start, end] | [start, end, _] => {
            let (start, end) = (num(start)?, num(end)?);
            ordered(flag, spec, start, end)?;
            let step = match parts.as_slice() {
                [_, _, step] => match step.trim().parse::<u32>() {
                    Ok(n) if n > 0 => Some(n),
                    _ => {
                        return usage(format!(
                            "{flag} {spec}: the step is '{}'; give a step of at least 1, or leave it out to double from the start (start:end)",
                            step.trim()
                        ));
                    }
                },
                _ => None,
            };
            let next = |v: &u32| step.map_or(v.checked_mul(2), |s| v.checked_add(s));
            let out: Vec<u32> = std::iter::successors(Some(start), next)
                .take_while(|&v| v <= end)
                .collect();
            if out.len() > 1000 {
                return usage(format!(
                    "{flag} {spec}: {} levels is too many (at most 1000)",
                    out.len()
                ));
            }
            Ok(out)
        }
        _ => usage(format!(
            "{flag} {spec}: expected N, start:end[:step], or a list like 1,4,8"
        )),
    }
}

/// `--shard I/N`: shard `I` (0-based, as Kubernetes' `JOB_COMPLETION_INDEX`) of `N`.
pub fn parse_shard(_flag: &str, raw: &str) -> Result<Shard, UsageError> {
    let t = raw.trim();
    let bad = || {
        UsageError(format!(
            "--shard {t}: expected I/N, the 0-based index of this process and the number of processes (e.g. 0/4 ... 3/4)"
        ))
    };
    let (i, n) = t.split_once('/').ok_or_else(bad)?;
    let index: u32 = i.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    shard(index, count, "--shard")
}

/// A shard from its index and count, checked: `flag` names where they came from.
pub fn shard(index: u32, count: u32, flag: &str) -> Result<Shard, UsageError> {
    if count == 0 {
        return usage(format!("{flag}: the number of shards must be at least 1"));
    }
    if index >= count {
        return usage(format!(
            "{flag}: index {index} is not below the number of shards {count} (indices run 0..{})",
            count - 1
        ));
    }
    Ok(Shard { index, count })
}

/// `--start-at`: Unix seconds (`1767225600`, fractions allowed) or an RFC 3339 time
/// (`2026-01-01T00:00:00Z`, `2026-01-01T01:00:00.5+01:00`), as Unix nanoseconds.
pub fn parse_start_at(_flag: &str, raw: &str) -> Result<u64, UsageError> {
    let t = raw.trim();
    let bad = || {
        UsageError(format!(
            "--start-at {t}: expected Unix seconds (e.g. 1767225600) or an RFC 3339 time (e.g. 2026-01-01T00:00:00Z)"
        ))
    };
    if t.starts_with(|c: char| c.is_ascii_digit()) && !t.contains(['-', ':']) {
        return unix_seconds_ns(t).ok_or_else(bad);
    }
    rfc3339_unix_ns(t).ok_or_else(bad)
}

/// `1767225600.25` as Unix ns, exactly (a float would round the nanoseconds).
fn unix_seconds_ns(t: &str) -> Option<u64> {
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 9 {
        return None;
    }
    let secs: u64 = whole
        .parse()
        .ok()
        .filter(|s| (1..100_000_000_000).contains(s))?;
    let frac_ns = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    Some(secs * 1_000_000_000 + frac_ns)
}

/// An RFC 3339 time (`2026-01-01T00:00:00Z`, `t` or a space between date and time) as Unix ns;
/// times before 1970 are none.
fn rfc3339_unix_ns(t: &str) -> Option<u64> {
    let at: jiff::Timestamp = t.parse().ok()?;
    u64::try_from(at.as_nanosecond()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_and_start_times() {
        assert_eq!(
            parse_shard("--shard", "2/4").unwrap(),
            Shard { index: 2, count: 4 }
        );
        assert_eq!(parse_shard("--shard", " 0 / 1 ").unwrap(), Shard::WHOLE);
        for bad in ["4/4", "1/0", "x/4", "2", "-1/4"] {
            assert!(parse_shard("--shard", bad).is_err(), "{bad}");
        }
        assert!(
            parse_shard("--shard", "4/4")
                .unwrap_err()
                .0
                .contains("indices run 0..3")
        );
        for (raw, want) in [
            ("1767225600", 1_767_225_600_000_000_000),
            ("1767225600.25", 1_767_225_600_250_000_000),
            ("2026-01-01T00:00:00Z", 1_767_225_600_000_000_000),
            ("2026-01-01T01:30:00.5+01:30", 1_767_225_600_500_000_000),
            (
                "2000-02-29 12:00:00.000000001-00:00",
                951_825_600_000_000_001,
            ),
        ] {
            assert_eq!(parse_start_at("--start-at", raw).unwrap(), want, "{raw}");
        }
        for bad in [
            "",
            "soon",
            "2026-13-01T00:00:00Z",
            "2026-01-01T00:00:00",
            "-5",
            "2026-01-01T00:00:00.Z",
        ] {
            assert!(parse_start_at("--start-at", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn concurrency_forms() {
        let v = |s: &str| parse_int_levels(s, "--concurrency").unwrap();
        assert_eq!(v("8"), [8]);
        assert_eq!(v("1:32"), [1, 2, 4, 8, 16, 32]);
        assert_eq!(v("1:20"), [1, 2, 4, 8, 16]);
        assert_eq!(
            v("1:32:2"),
            [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]
        );
        assert_eq!(v("1,4,8,16,32"), [1, 4, 8, 16, 32]);
        for bad in ["0", "8:4", "a", "1:2:3:4"] {
            assert!(parse_int_levels(bad, "--concurrency").is_err(), "{bad}");
        }
    }

    #[test]
    fn rate_forms() {
        let v = |s: &str| parse_float_levels(s, "--request-rate").unwrap();
        assert_eq!(v("10"), [10.0]);
        assert_eq!(v("2.5"), [2.5]);
        assert_eq!(v("1:8"), [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(v("10:50:20"), [10.0, 30.0, 50.0]);
        assert_eq!(v("0.1:0.3:0.1").len(), 3);
        assert_eq!(v("5,10,20"), [5.0, 10.0, 20.0]);
        for bad in ["0", "-1", "x"] {
            assert!(parse_float_levels(bad, "--request-rate").is_err(), "{bad}");
        }
    }

    /// Found by a new user: `1,,4` ran as 1,4, and `1:32:0` said "levels must be at least 1".
    #[test]
    fn empty_items_zero_steps_and_negatives_are_named() {
        let int = |s: &str| parse_int_levels(s, "--concurrency").unwrap_err().0;
        let rate = |s: &str| parse_float_levels(s, "--request-rate").unwrap_err().0;
        for (e, says) in [
            (
                int("1,,4"),
                "--concurrency 1,,4: item 2 of the list is empty",
            ),
            (int("1,4,"), "item 3 of the list is empty"),
            (int(",8"), "item 1 of the list is empty"),
            (int("1:32:0"), "--concurrency 1:32:0: the step is '0'"),
            (int("1:32:x"), "the step is 'x'"),
            (int("-3"), "levels must be positive ('-3' is not)"),
            (int("0"), "levels must be at least 1"),
            (
                rate("5,,20"),
                "--request-rate 5,,20: item 2 of the list is empty",
            ),
            (rate("1:8:0"), "--request-rate 1:8:0: the step is '0'"),
            (rate("1:8:-1"), "the step is '-1'"),
            (rate("-3"), "rates must be positive ('-3' is not)"),
        ] {
            assert!(e.contains(says), "{says}: {e}");
        }
        let e = int("1:32:0");
        assert!(!e.contains("levels must be at least 1"), "{e}");
        // The step may still be left out, and a list may have spaces.
        assert_eq!(
            parse_float_levels("5, 10", "--request-rate").unwrap(),
            [5.0, 10.0]
        );
        assert_eq!(parse_int_levels("1, 4", "--concurrency").unwrap(), [1, 4]);
    }

    /// Found by a new user: `--request-timeout 500ms` said "invalid float literal".
    #[test]
    fn durations_take_units_and_bare_numbers_keep_theirs() {
        let s = Duration::from_secs(1);
        let ms = Duration::from_millis(1);
        for (flag, raw, unit, want) in [
            ("--request-timeout", "500ms", s, ms * 500),
            ("--request-timeout", "2", s, s * 2),
            ("--request-timeout", "1.5m", s, s * 90),
            ("-p", "10000", ms, s * 10),
            ("-p", "2s", ms, s * 2),
            ("-p", "250us", ms, Duration::from_micros(250)),
            ("-l", "0", ms, Duration::ZERO),
            ("--request-timeout", "1m30s", s, s * 90),
            ("-p", "1.5 min", ms, s * 90),
            ("-p", "10µs", ms, ms / 100),
        ] {
            assert_eq!(parse_duration(flag, raw, unit).unwrap(), want, "{raw}");
        }
        let e = parse_duration("--request-timeout", "5 parsecs", s).unwrap_err();
        assert!(
            e.0.contains("unknown unit 'parsecs'") && e.0.contains("seconds"),
            "{e}"
        );
        let e = parse_duration("-p", "1e400", ms).unwrap_err();
        assert!(e.0.contains("expected a duration"), "{e}");
        assert!(parse_duration("-p", "fast", ms).is_err());
        for raw in ["-3ms", "-5"] {
            let e = parse_duration("-p", raw, ms).unwrap_err();
            assert!(e.0.contains("must not be negative"), "{e}");
        }
    }

    #[test]
    fn goodput_fractions_and_extra_inputs() {
        let Objectives(g) = parse_goodput(
            "--goodput",
            "time_to_first_token:500 inter_token_latency:20",
        )
        .unwrap();
        assert_eq!(
            g[1],
            Objective {
                metric: Metric::InterTokenLatency,
                bound: 20.0
            }
        );
        assert!(parse_goodput("--goodput", "bogus:1").is_err());
        assert_eq!(parse_fraction("--knee-min-gain", "10%").unwrap(), 0.1);
        assert_eq!(parse_fraction("--knee-min-gain", "0.25").unwrap(), 0.25);
        assert!(parse_fraction("--knee-min-gain", "0").is_err());
        assert!(parse_extra_input("x").is_err());
        assert!(check_burstiness(0.0).is_err());
    }

    #[test]
    fn perf_analyzer_arguments_after_the_double_dash() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let p = perf_analyzer_passthrough(&a(&[
            "--measurement-interval",
            "10000",
            "-v",
            "--max-threads=8",
            "--shared-memory",
            "system",
            "--collect-metrics",
        ]))
        .unwrap();
        assert_eq!(p.measurement_interval, Some(Duration::from_secs(10)));
        assert!(p.verbose);
        assert_eq!(p.ignored.len(), 3, "{:?}", p.ignored);
        assert!(p.ignored[0].contains("--max-threads 8"));
        assert!(p.ignored[1].contains("--shared-memory system"));
        assert!(p.ignored[2].contains("--collect-metrics"));
        let e = perf_analyzer_passthrough(&a(&["-p", "soon"])).unwrap_err();
        assert!(e.0.contains("-- -p"), "{e}");
        assert_eq!(
            perf_analyzer_passthrough(&[]).unwrap(),
            Passthrough::default()
        );
    }
}
