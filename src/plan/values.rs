//! How flag values are written, parsed into typed values: durations with units, level lists
//! (`8`, `1:32`, `1:32:2`, `1,4,8`), rates, percentages, goodput objectives and extra request
//! fields. Each parser names the flag in its error and says what to write.

use std::time::Duration;

use crate::error::UsageError;
use crate::load::{Arrival, Stimulus};
use crate::metrics::{Metric, Objective};

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// A duration flag's value: `500ms`, `2s`, `1.5m`, `250us`, `1h`, or a bare number in the flag's
/// own unit (`unit`: milliseconds for `--measurement-interval`, seconds for `--request-timeout`).
pub fn parse_duration(flag: &str, raw: &str, unit: Duration) -> Result<Duration, UsageError> {
    let t = raw.trim();
    // Clap names the flag itself; the message then starts at the value.
    let flag = if flag.is_empty() {
        String::new()
    } else {
        format!("{flag} ")
    };
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let per = match suffix.trim() {
        "" => unit,
        "us" | "µs" => Duration::from_micros(1),
        "ms" => Duration::from_millis(1),
        "s" | "sec" => Duration::from_secs(1),
        "m" | "min" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        other => {
            return usage(format!(
                "{flag}{t}: unknown unit '{other}'; write e.g. 500ms, 2s or 1m (a bare number is in {})",
                unit_name(unit)
            ));
        }
    };
    let v: f64 = num.parse().map_err(|_| {
        UsageError(format!(
            "{flag}{t}: expected a duration such as 500ms, 2s or 1m (a bare number is in {})",
            unit_name(unit)
        ))
    })?;
    if !(v >= 0.0 && v.is_finite()) {
        return usage(format!("{flag}{t}: must not be negative"));
    }
    Ok(per.mul_f64(v))
}

fn unit_name(unit: Duration) -> &'static str {
    if unit >= Duration::from_secs(1) {
        "seconds"
    } else {
        "milliseconds"
    }
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

/// `--goodput time_to_first_token:500 inter_token_latency:20`.
pub fn parse_objectives(raw: &[String]) -> Result<Vec<Objective>, UsageError> {
    let valid = "time_to_first_token, time_to_second_token, inter_token_latency, request_latency, output_token_throughput_per_user";
    raw.iter()
        .flat_map(|s| s.split_whitespace())
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
        .collect()
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
            return usage(format!("{flag} {spec}: rates must be positive"));
        }
        Ok(v)
    };
    if spec.contains(',') {
        return spec
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(num)
            .collect();
    }
    let parts: Vec<&str> = spec.split(':').collect();
    let (start, end, step) = match parts.as_slice() {
        [one] => return Ok(vec![num(one)?]),
        [a, b] => (num(a)?, num(b)?, None),
        [a, b, c] => (num(a)?, num(b)?, Some(num(c)?)),
        _ => {
            return usage(format!(
                "{flag} {spec}: expected R, start:end[:step], or a list like 5,10,20"
            ));
        }
    };
    if end < start {
        return usage(format!(
            "{flag} {spec}: the end ({end}) is below the start ({start})"
        ));
    }
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

/// A percentage (`10%`) or a fraction (`0.1`) as a fraction, for `--knee-min-gain`.
pub fn parse_fraction(flag: &str, raw: &str) -> Result<f64, UsageError> {
    let t = raw.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| UsageError(format!("{flag} '{t}': expected a percentage such as 10%")))?;
    if !(v > 0.0 && v.is_finite()) {
        return usage(format!("{flag} '{t}': must be more than 0"));
    }
    Ok(v)
}

/// A share from 0 to 100 % (`50%` or `0.5`), for `--max-error-rate`.
pub fn parse_share(flag: &str, raw: &str) -> Result<f64, UsageError> {
    let t = raw.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| UsageError(format!("{flag} '{t}': expected a percentage such as 50%")))?;
    if !(0.0..=1.0).contains(&v) {
        return usage(format!("{flag} '{t}': must be from 0% to 100%"));
    }
    Ok(v)
}

/// `N`, `start:end[:step]` or `a,b,c`.
pub fn parse_concurrency(spec: &str) -> Result<Vec<Stimulus>, UsageError> {
    let values = parse_int_levels(spec, "--concurrency")?;
    Ok(values.into_iter().map(Stimulus::Concurrency).collect())
}

/// Parses a level list of positive integers. `start:end` without a step doubles from start
/// (GenAI-Perf's power-of-two sweep); with a step it counts linearly; both ends inclusive.
pub fn parse_int_levels(spec: &str, flag: &str) -> Result<Vec<u32>, UsageError> {
    let spec = spec.trim();
    let num = |s: &str| -> Result<u32, UsageError> {
        let v: u32 = s.trim().parse().map_err(|_| {
            UsageError(format!(
                "{flag} {spec}: '{s}' is not a positive whole number"
            ))
        })?;
        if v == 0 {
            return usage(format!("{flag} {spec}: levels must be at least 1"));
        }
        Ok(v)
    };
    if spec.contains(',') {
        return spec
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(num)
            .collect();
    }
    let parts: Vec<&str> = spec.split(':').collect();
    match parts.as_slice() {
        [one] => Ok(vec![num(one)?]),
        [start, end] | [start, end, _] => {
            let (start, end) = (num(start)?, num(end)?);
            if end < start {
                return usage(format!(
                    "{flag} {spec}: the end ({end}) is below the start ({start})"
                ));
            }
            let mut out = Vec::new();
            if let [_, _, step] = parts.as_slice() {
                let step = num(step)?;
                let mut v = start;
                while v <= end {
                    out.push(v);
                    v = match v.checked_add(step) {
                        Some(n) => n,
                        None => break,
                    };
                }
            } else {
                let mut v = start;
                while v <= end {
                    out.push(v);
                    v = match v.checked_mul(2) {
                        Some(n) => n,
                        None => break,
                    };
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Found by a new user: `--request-timeout 500ms` said "invalid float literal".
    #[test]
    fn durations_take_units_and_bare_numbers_keep_theirs() {
        let s = Duration::from_secs(1);
        let ms = Duration::from_millis(1);
        assert_eq!(
            parse_duration("--request-timeout", "500ms", s).unwrap(),
            ms * 500
        );
        assert_eq!(parse_duration("--request-timeout", "2", s).unwrap(), s * 2);
        assert_eq!(
            parse_duration("--request-timeout", "1.5m", s).unwrap(),
            s * 90
        );
        assert_eq!(parse_duration("-p", "10000", ms).unwrap(), s * 10);
        assert_eq!(parse_duration("-p", "2s", ms).unwrap(), s * 2);
        assert_eq!(
            parse_duration("-p", "250us", ms).unwrap(),
            Duration::from_micros(250)
        );
        assert_eq!(parse_duration("-l", "0", ms).unwrap(), Duration::ZERO);
        let e = parse_duration("--request-timeout", "5 parsecs", s).unwrap_err();
        assert!(
            e.0.contains("unknown unit 'parsecs'") && e.0.contains("seconds"),
            "{e}"
        );
        assert!(parse_duration("-p", "fast", ms).is_err());
        assert!(parse_duration("-p", "-3ms", ms).is_err());
    }

    #[test]
    fn goodput_fractions_and_extra_inputs() {
        let g =
            parse_objectives(&["time_to_first_token:500 inter_token_latency:20".into()]).unwrap();
        assert_eq!(
            g[1],
            Objective {
                metric: Metric::InterTokenLatency,
                bound: 20.0
            }
        );
        assert!(parse_objectives(&["bogus:1".into()]).is_err());
        assert_eq!(parse_fraction("--knee-min-gain", "10%").unwrap(), 0.1);
        assert_eq!(parse_fraction("--knee-min-gain", "0.25").unwrap(), 0.25);
        assert!(parse_fraction("--knee-min-gain", "0").is_err());
        assert!(parse_extra_input("x").is_err());
        assert!(check_burstiness(0.0).is_err());
    }
}
