//! What the metrics port says, per metrics style: the page `/metrics` serves for
//! `serve --metrics-style triton|trtllm|vllm|sglang|tgi|llamacpp`, and the DCGM exporter's page
//! on `/dcgm/metrics`.
//!
//! Every style renders the engine's real metric families (names, types, labels, units and help
//! texts from each project's source, cited in its module) from the simulator's state: the
//! queue and batch of each engine, its KV cache and prefix cache, its preemptions, and
//! per-request latency histograms in the engine's own buckets. Triton styles add Triton's GPU
//! families; every style keeps the simulator's own `ttftbench_sim_*` families at the end (a
//! real server does not have them; readers ignore what they do not know).
//!
//! | style | families |
//! |---|---|
//! | `triton` | `nv_inference_*` (core), `nv_gpu_*`, `nv_energy_consumption` |
//! | `trtllm` | the same, plus `nv_trt_llm_request_metrics`, `nv_trt_llm_kv_cache_block_metrics`, `nv_trt_llm_inflight_batcher_metrics`, `nv_trt_llm_general_metrics`; Triton's queue counter and pending gauge stay at zero for LLMs (the backend queues) |
//! | `vllm` | `vllm:*` ([`vllm`]) |
//! | `sglang` | `sglang:*` ([`sglang`]) |
//! | `tgi` | `tgi_*` ([`tgi`]) |
//! | `llamacpp` | `llamacpp:*` ([`llamacpp`]) |

pub(crate) mod llamacpp;
mod sglang;
mod tgi;
mod trtllm;
mod vllm;

use std::fmt::Write as _;

use super::counters::{Hist, HistSnapshot};
use super::gpu;
use super::metrics::{ModelMetrics, escape_label, render_prometheus};
use super::state::SimState;
use crate::server_metrics::ServerKind;

/// The `/metrics` page in `style`.
pub(crate) fn render(style: ServerKind, st: &SimState) -> String {
    let all: Vec<&ModelMetrics> = st.models.iter().map(|m| &*m.metrics).collect();
    let llms: Vec<&ModelMetrics> = st
        .models
        .iter()
        .filter(|m| m.is_llm())
        .map(|m| &*m.metrics)
        .collect();
    let mut out = String::with_capacity(16 * 1024);
    match style {
        ServerKind::Triton | ServerKind::TrtLlm => {
            out.push_str(&render_prometheus(&all));
            if style == ServerKind::TrtLlm {
                trtllm::render(&mut out, &llms);
            }
            gpu::render_triton(&mut out, &st.gpu_reading());
        }
        ServerKind::Vllm => vllm::render(&mut out, &llms, st.started_unix),
        ServerKind::Sglang => sglang::render(&mut out, &llms),
        ServerKind::Tgi => tgi::render(&mut out, &llms),
        ServerKind::LlamaCpp => llamacpp::render(&mut out, &llms),
    }
    if style != ServerKind::Triton && style != ServerKind::TrtLlm {
        super::metrics::render_sim_own(&mut out, &all);
    }
    out
}

/// The DCGM exporter's page for the simulated GPU.
pub(crate) fn render_dcgm(st: &SimState) -> String {
    gpu::render_dcgm(&st.gpu_reading())
}

/// A family of one series a model: name, help text, and each model's value.
type Family<T> = (&'static str, &'static str, fn(&ModelMetrics) -> T);

/// A histogram family: name, help text, and where each model keeps it.
type HistFamily = (&'static str, &'static str, fn(&ModelMetrics) -> &Hist);

/// `# HELP` and `# TYPE` of a family.
fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// One sample line.
fn sample(out: &mut String, name: &str, labels: &str, value: &str) {
    let _ = writeln!(out, "{name}{labels} {value}");
}

/// `{k="v",...}` with escaped values, in the given order (`""` without labels).
fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// How a client library prints label sets and numbers.
#[derive(Debug, Clone, Copy)]
enum Dialect {
    /// Python `prometheus_client`: labels sorted by name (`le` among them), floats printed as
    /// Python does (`3.0`, `8.128902e+06`).
    Python,
    /// Rust `metrics-exporter-prometheus` (TGI): labels in declaration order with `le` last,
    /// numbers printed by Rust's `Display` (`3`, `0.00015000000000000001`).
    Rust,
}

impl Dialect {
    fn num(self, v: f64) -> String {
        match self {
            Dialect::Python => py_float(v),
            Dialect::Rust => v.to_string(),
        }
    }

    /// `base` labels plus `le`, placed where this client puts it.
    fn with_le<'a>(self, base: &[(&'a str, &'a str)], le: &'a str) -> String {
        let mut pairs: Vec<(&str, &str)> = base.to_vec();
        pairs.push(("le", le));
        if let Dialect::Python = self {
            pairs.sort_by(|a, b| a.0.cmp(b.0));
        }
        labels(&pairs)
    }
}

/// A number as Python's `prometheus_client` prints it (`floatToGoString`): the shortest
/// round-trip form with `.0` on integers, and an exponent once the integer part has more than
/// six digits.
fn py_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let s = format!("{v:?}");
    if v > 0.0
        && let Some(dot) = s.find('.')
        && dot > 6
    {
        let mantissa = format!("{}.{}{}", &s[..1], &s[1..dot], &s[dot + 1..]);
        let mantissa = mantissa.trim_end_matches(['0', '.']);
        return format!("{mantissa}e+0{}", dot - 1);
    }
    s
}

/// Histogram families as Python's client prints them, one histogram a model, labelled with
/// `fixed` (label names sorting before `model_name`) and then the model's `model_name`.
fn python_histograms(
    out: &mut String,
    models: &[&ModelMetrics],
    families: &[HistFamily],
    fixed: &[(&str, &str)],
) {
    for (name, help, hist) in families {
        family(out, name, help, "histogram");
        for m in models {
            let mut base = fixed.to_vec();
            base.push(("model_name", m.name()));
            histogram(out, Dialect::Python, name, &base, &hist(m).snapshot());
        }
    }
}

/// The sample lines of histogram `name` with labels `base`: `_sum`, the cumulative buckets
/// (`+Inf` last), `_count`.
fn histogram(
    out: &mut String,
    dialect: Dialect,
    name: &str,
    base: &[(&str, &str)],
    h: &HistSnapshot,
) {
    let plain = labels(base);
    sample(out, &format!("{name}_sum"), &plain, &dialect.num(h.sum));
    let bucket = format!("{name}_bucket");
    // The last cumulative count is the `+Inf` bucket's.
    let les = h.bounds.iter().map(|&b| dialect.num(b));
    for (le, &n) in les.chain(["+Inf".to_owned()]).zip(&h.cumulative) {
        let l = dialect.with_le(base, &le);
        sample(out, &bucket, &l, &dialect.num(n as f64));
    }
    let count = dialect.num(h.count as f64);
    sample(out, &format!("{name}_count"), &plain, &count);
}

/// Histograms of several models added bucket by bucket (engines that label nothing).
fn merged(hists: impl Iterator<Item = HistSnapshot>) -> Option<HistSnapshot> {
    hists.reduce(|mut a, b| {
        for (x, y) in a.cumulative.iter_mut().zip(&b.cumulative) {
            *x += y;
        }
        a.sum += b.sum;
        a.count += b.count;
        a
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_floats() {
        assert_eq!(py_float(3.0), "3.0");
        assert_eq!(py_float(0.28), "0.28");
        assert_eq!(py_float(8_128_902.0), "8.128902e+06");
        assert_eq!(py_float(1_700_000_000.5), "1.7000000005e+09");
        assert_eq!(py_float(123_456.0), "123456.0");
        assert_eq!(py_float(f64::INFINITY), "+Inf");
    }

    #[test]
    fn histogram_lines_in_both_dialects() {
        static B: &[f64] = &[0.5, 1.0];
        let h = HistSnapshot {
            bounds: B,
            cumulative: vec![1, 2, 3],
            sum: 2.25,
            count: 3,
        };
        let mut out = String::new();
        histogram(
            &mut out,
            Dialect::Python,
            "x:t",
            &[("engine", "0"), ("model_name", "m")],
            &h,
        );
        assert_eq!(
            out,
            "x:t_sum{engine=\"0\",model_name=\"m\"} 2.25\n\
             x:t_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 1.0\n\
             x:t_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 2.0\n\
             x:t_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 3.0\n\
             x:t_count{engine=\"0\",model_name=\"m\"} 3.0\n"
        );
        let mut out = String::new();
        histogram(&mut out, Dialect::Rust, "t", &[("method", "prefill")], &h);
        assert_eq!(
            out,
            "t_sum{method=\"prefill\"} 2.25\n\
             t_bucket{method=\"prefill\",le=\"0.5\"} 1\n\
             t_bucket{method=\"prefill\",le=\"1\"} 2\n\
             t_bucket{method=\"prefill\",le=\"+Inf\"} 3\n\
             t_count{method=\"prefill\"} 3\n"
        );
    }
}
