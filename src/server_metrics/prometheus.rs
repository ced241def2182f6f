//! What a Prometheus text page says: a lenient parser of the text exposition format (0.0.4, and
//! the OpenMetrics text that servers also send) into plain samples, with lookups for counters,
//! gauges and histograms (`_bucket{le=…}`, `_sum`, `_count`).
//!
//! Comments and lines that are not a well-formed sample are skipped, never an error: a
//! scrape of a live server may be cut off mid-line, and exporters differ in small ways
//! (timestamps after the value, `NaN`, `+Inf`, exponents, a trailing comma in the label set,
//! escaped label values `\\`, `\"`, `\n`, CRLF line ends, `# EOF`). The parser does not panic on
//! any input and allocates only per accepted sample.

/// One sample line: metric name, labels in page order, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name, suffix included (`x_bucket`, `x_total`).
    pub name: String,
    /// Label pairs with escapes resolved.
    pub labels: Vec<(String, String)>,
    /// The value (`NaN` and infinities allowed).
    pub value: f64,
}

impl Sample {
    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A parsed page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    /// Every accepted sample, in page order.
    pub samples: Vec<Sample>,
}

/// A histogram read from a page (possibly several label sets added up). In JSON the `+Inf`
/// bound becomes `null`.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Histogram {
    /// `(le, cumulative count)` ascending by `le`; the last is `+Inf` when the page had it.
    pub buckets: Vec<(f64, f64)>,
    /// `_sum`.
    pub sum: f64,
    /// `_count` (or the `+Inf` bucket when `_count` is missing).
    pub count: f64,
}

/// Parses a page; comments and junk lines are skipped (neither starts with a name).
pub fn parse(text: &str) -> Exposition {
    Exposition {
        samples: text
            .lines()
            .map(str::trim)
            .filter_map(sample_line)
            .collect(),
    }
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_name_char(c: u8) -> bool {
    is_name_start(c) || c.is_ascii_digit()
}

/// `name{labels} value [timestamp]`, or `None` when the line is not one.
fn sample_line(line: &str) -> Option<Sample> {
    let b = line.as_bytes();
    if !b.first().copied().is_some_and(is_name_start) {
        return None;
    }
    let end = b.iter().position(|&c| !is_name_char(c)).unwrap_or(b.len());
    let name = &line[..end];
    let mut rest = &line[end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, tail) = label_set(after)?;
        labels = parsed;
        rest = tail;
    }
    // The value must be separated from the name or label set by whitespace.
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let value = number(rest.split_whitespace().next()?)?;
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// The labels after `{` up to the closing `}`, and what follows it.
fn label_set(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start_matches([' ', '\t']);
        if let Some(tail) = s.strip_prefix('}') {
            return Some((labels, tail));
        }
        let b = s.as_bytes();
        if !b.first().copied().is_some_and(is_name_start) {
            return None;
        }
        let end = b.iter().position(|&c| !is_name_char(c)).unwrap_or(b.len());
        let key = &s[..end];
        s = s[end..].trim_start_matches([' ', '\t']);
        s = s.strip_prefix('=')?.trim_start_matches([' ', '\t']);
        s = s.strip_prefix('"')?;
        let (value, tail) = quoted(s)?;
        labels.push((key.to_string(), value));
        s = tail.trim_start_matches([' ', '\t']);
        if let Some(tail) = s.strip_prefix(',') {
            s = tail;
        } else if !s.starts_with('}') {
            return None;
        }
    }
}

/// A label value after its opening quote, unescaped, and what follows the closing quote.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                other => out.push(other), // `\\`, `\"`, and lenient for anything else
            },
            c => out.push(c),
        }
    }
    None
}

/// A sample value: a float, `NaN`, `+Inf`/`-Inf`/`Inf` (any case).
fn number(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "+inf" | "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => {
            // Rust also accepts "infinity" and the like; the format's words are handled above.
            let first = s.as_bytes().first()?;
            if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
                return None;
            }
            s.parse::<f64>().ok()
        }
    }
}

impl Exposition {
    /// True when any sample's name starts with `prefix`.
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.samples.iter().any(|s| s.name.starts_with(prefix))
    }

    /// Samples named exactly `name`.
    pub fn series<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }

    /// Sum of the values of samples named `name` that pass `keep`; `None` when none does.
    pub fn sum(&self, name: &str, keep: impl Fn(&Sample) -> bool) -> Option<f64> {
        self.series(name)
            .filter(|s| keep(s))
            .map(|s| s.value)
            .reduce(|a, b| a + b)
    }

    /// Histogram `family` over the label sets that pass `keep` (ignoring `le`), added bucket by
    /// bucket; `None` without any `_bucket`, `_sum` or `_count` sample.
    pub fn histogram(&self, family: &str, keep: impl Fn(&Sample) -> bool) -> Option<Histogram> {
        let bucket = format!("{family}_bucket");
        let mut buckets: Vec<(f64, f64)> = Vec::new();
        for s in self.series(&bucket).filter(|s| keep(s)) {
            let Some(le) = s.label("le").and_then(number) else {
                continue;
            };
            match buckets.iter_mut().find(|(b, _)| *b == le) {
                Some((_, c)) => *c += s.value,
                None => buckets.push((le, s.value)),
            }
        }
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let sum = self.sum(&format!("{family}_sum"), &keep);
        let count = self.sum(&format!("{family}_count"), &keep);
        if buckets.is_empty() && sum.is_none() && count.is_none() {
            return None;
        }
        let inf = buckets
            .last()
            .filter(|(le, _)| le.is_infinite())
            .map(|b| b.1);
        Some(Histogram {
            count: count.or(inf).unwrap_or(0.0),
            sum: sum.unwrap_or(0.0),
            buckets,
        })
    }
}

impl Histogram {
    /// This histogram minus an earlier one of the same series (a level's share of a cumulative
    /// histogram); buckets are matched by `le`, and counts never go below zero (a restarted
    /// server).
    pub fn since(&self, before: &Histogram) -> Histogram {
        let prior = |le: f64| {
            before
                .buckets
                .iter()
                .find(|(b, _)| *b == le)
                .map_or(0.0, |b| b.1)
        };
        Histogram {
            buckets: self
                .buckets
                .iter()
                .map(|&(le, c)| (le, (c - prior(le)).max(0.0)))
                .collect(),
            sum: (self.sum - before.sum).max(0.0),
            count: (self.count - before.count).max(0.0),
        }
    }

    /// Mean observation (`sum / count`), `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// The `q`-quantile (0–1) interpolated linearly inside its bucket, as Prometheus'
    /// `histogram_quantile` does: the lower edge of the first bucket is 0 (or its bound when
    /// that is negative), and a rank in the `+Inf` bucket gives the highest finite bound.
    /// `None` when empty or without finite buckets.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.buckets.last().map(|b| b.1).filter(|&t| t > 0.0)?;
        let rank = q.clamp(0.0, 1.0) * total;
        let mut lower = (0.0f64, 0.0f64); // (bound, cumulative count) below the current bucket
        for &(le, cum) in &self.buckets {
            if cum >= rank && cum > lower.1 {
                if le.is_infinite() {
                    return (lower.0 != 0.0 || lower.1 > 0.0).then_some(lower.0);
                }
                let lo = if lower.1 == 0.0 && lower.0 == 0.0 {
                    le.min(0.0)
                } else {
                    lower.0
                };
                let frac = (rank - lower.1) / (cum - lower.1);
                return Some(lo + (le - lo) * frac);
            }
            lower = (le, cum);
        }
        self.buckets
            .iter()
            .rev()
            .find(|b| b.0.is_finite())
            .map(|b| b.0)
    }

    /// The same histogram with bounds and sum multiplied by `k` (unit conversion: ms → s).
    pub fn scaled(mut self, k: f64) -> Histogram {
        for b in &mut self.buckets {
            b.0 *= k;
        }
        self.sum *= k;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_labels_escapes_and_junk() {
        let page = "# HELP a_total Things.\r\n# TYPE a_total counter\r\n\
            a_total{x=\"1\",y=\"q\\\"uo\\\\te\\nnl\",} 3 1700000000000\n\
            b 4.5e2\n\
            c{} NaN\n\
            d{le=\"+Inf\"} +Inf\n\
            garbage here\n{x=\"1\"} 2\ne{x=\"unterminated} 1\nf{x=\"1\" 2\ng 1x\nh{x=\"1\"}3\n# EOF\n";
        let e = parse(page);
        let names: Vec<&str> = e.samples.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["a_total", "b", "c", "d"]);
        assert_eq!(e.samples[0].label("y"), Some("q\"uo\\te\nnl"));
        assert_eq!(e.samples[0].value, 3.0);
        assert_eq!(e.samples[1].value, 450.0);
        assert!(e.samples[2].value.is_nan());
        assert_eq!(e.samples[3].value, f64::INFINITY);
    }

    #[test]
    fn histograms_merge_label_sets_and_interpolate() {
        let page = "\
x_bucket{m=\"a\",le=\"0.1\"} 2
x_bucket{m=\"a\",le=\"0.5\"} 6
x_bucket{m=\"a\",le=\"+Inf\"} 8
x_sum{m=\"a\"} 2.0
x_count{m=\"a\"} 8
x_bucket{m=\"b\",le=\"0.1\"} 0
x_bucket{m=\"b\",le=\"0.5\"} 0
x_bucket{m=\"b\",le=\"+Inf\"} 2
x_sum{m=\"b\"} 3.0
x_count{m=\"b\"} 2
";
        let e = parse(page);
        let a = e.histogram("x", |s| s.label("m") == Some("a")).unwrap();
        assert_eq!(
            a.buckets,
            vec![(0.1, 2.0), (0.5, 6.0), (f64::INFINITY, 8.0)]
        );
        assert_eq!((a.sum, a.count), (2.0, 8.0));
        assert_eq!(a.mean(), Some(0.25));
        // Rank 4 of 8 lies halfway through the (0.1, 0.5] bucket.
        assert!((a.quantile(0.5).unwrap() - 0.3).abs() < 1e-12);
        assert!((a.quantile(0.25).unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(
            a.quantile(0.99),
            Some(0.5),
            "the +Inf bucket answers its lower bound"
        );
        let all = e.histogram("x", |_| true).unwrap();
        assert_eq!(all.buckets[2], (f64::INFINITY, 10.0));
        assert_eq!(all.count, 10.0);
        let d = all.since(&a);
        assert_eq!(
            d.buckets,
            vec![(0.1, 0.0), (0.5, 0.0), (f64::INFINITY, 2.0)]
        );
        assert_eq!((d.sum, d.count), (3.0, 2.0));
        assert!(e.histogram("nope", |_| true).is_none());
        assert_eq!(Histogram::default().quantile(0.5), None);
    }

    #[test]
    fn never_panics_on_random_or_cut_input() {
        use rand::{RngExt, SeedableRng};
        let real = "# TYPE vllm:x histogram\nvllm:x_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\\\"q\"} 1.0\nvllm:x_sum{engine=\"0\"} 0.5\n";
        for cut in 0..=real.len() {
            if real.is_char_boundary(cut) {
                let _ = parse(&real[..cut]);
            }
        }
        let alphabet = b"{}=\",\\ \n\t#+-.eE019aZ_:lequantileInfNaN";
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..2000 {
            let len = rng.random_range(0..80);
            let bytes: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.random_range(0..alphabet.len())])
                .collect();
            let text = String::from_utf8_lossy(&bytes);
            let e = parse(&text);
            let _ = e.histogram("a", |_| true).map(|h| h.quantile(0.5));
        }
    }
}
