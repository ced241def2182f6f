//! The llama.cpp page, from `tools/server/server-task.cpp` (`server_task_result_metrics::
//! to_metrics`) of the `llama-cpp-python==0.3.36` sdist's `llama-server`, and its real page
//! (`tests/fixtures/engines/llamacpp/metrics_after.http`).
//!
//! No labels, no histograms, no `_created` samples: every family is one line, `llamacpp:` then
//! the name, numbers printed as C++'s `std::stringstream` prints a `double` (`%g`, six
//! significant digits: `0.130939`, `427.68`, `256`). Counters, in the server's order:
//! `prompt_tokens_total` (prefilled, cached excluded), `prompt_tokens_cached_total`,
//! `prompt_seconds_total` (busy time of the steps that prefilled), `tokens_predicted_total`,
//! `tokens_predicted_seconds_total` (each finished request's first-to-last-token time, added
//! up), `n_decode_total` (engine steps), `n_tokens_max`, the three `spec_decode_num_*` (0: the
//! simulator does not speculate); gauges `prompt_tokens_seconds`, `predicted_tokens_seconds`
//! (tokens per second of those times), `requests_processing` (sequences in a slot),
//! `requests_deferred` (queued for a slot), `n_busy_slots_per_decode`. llama-server serves one
//! model; with several the simulator adds them up.

use super::{family, sample};
use crate::sim::counters::get;
use crate::sim::metrics::ModelMetrics;

/// The `llamacpp:*` families of every LLM model, added up.
pub(super) fn render(out: &mut String, models: &[&ModelMetrics]) {
    let total = |f: &dyn Fn(&ModelMetrics) -> f64| models.iter().map(|m| f(m)).sum::<f64>();
    let prefilled = total(&|m| get(&m.engine.prefilled_tokens) as f64);
    let prompt_s = total(&|m| get(&m.engine.prefill_steps_ns) as f64 / 1e9);
    let predicted = total(&|m| get(&m.engine.generation_tokens) as f64);
    let predicted_s = total(&|m| m.times.decode.snapshot().sum);
    let steps = total(&|m| get(&m.engine.iterations) as f64);
    let per_second = |n: f64, s: f64| if s > 0.0 { n / s } else { 0.0 };
    let max_seq = models
        .iter()
        .map(|m| get(&m.engine.max_sequence))
        .max()
        .unwrap_or(0);
    #[rustfmt::skip]
    let counters: [(&str, &str, f64); 10] = [
        ("prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens", prefilled),
        ("prompt_tokens_cached_total", "Number of prompt tokens reused from the cache", total(&|m| get(&m.engine.prefix_hit_tokens) as f64)),
        ("prompt_seconds_total", "Total time spent processing prompts", prompt_s),
        ("tokens_predicted_total", "Number of generation tokens processed", predicted),
        ("tokens_predicted_seconds_total", "Total time spent generating tokens", predicted_s),
        ("n_decode_total", "Total number of llama_decode() calls, excluding speculative decoding and multimodal decoding", steps),
        ("n_tokens_max", "Largest observed sequence length (prompt + generation)", max_seq as f64),
        ("spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated", 0.0),
        ("spec_decode_num_accepted_tokens_total", "Speculative: Total draft tokens accepted by the target model", 0.0),
        ("spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps", 0.0),
    ];
    #[rustfmt::skip]
    let gauges: [(&str, &str, f64); 5] = [
        ("prompt_tokens_seconds", "Average prompt throughput in tokens/s", per_second(prefilled, prompt_s)),
        ("predicted_tokens_seconds", "Average generation throughput in tokens/s", per_second(predicted, predicted_s)),
        ("requests_processing", "Number of requests processing", total(&|m| m.running_now() as f64)),
        ("requests_deferred", "Number of requests deferred", total(&|m| m.pending_now() as f64)),
        ("n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", total(&|m| get(&m.engine.busy_slot_steps) as f64) / steps.max(1.0)),
    ];
    for (kind, items) in [("counter", &counters[..]), ("gauge", &gauges[..])] {
        for (name, help, value) in items {
            let name = format!("llamacpp:{name}");
            family(out, &name, help, kind);
            sample(out, &name, "", &cpp_double(*value));
        }
    }
}

/// A `double` as `std::ostream << v` prints it by default (`%g` with precision 6): six
/// significant digits, trailing zeros dropped, an exponent below 1e-4 and from 1e6 on.
pub(crate) fn cpp_double(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // Rounded to six significant digits first: the exponent is the rounded value's.
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa.to_string()), exp.abs());
    }
    let decimals = usize::try_from(5 - exp).unwrap_or(0);
    trim(format!("{v:.decimals$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_llama_server_prints_them() {
        // Values from the real page (metrics_after.http).
        for (v, text) in [
            (0.0, "0"),
            (56.0, "56"),
            (0.130939, "0.130939"),
            (427.68, "427.68"),
            (318.568, "318.568"),
            (0.700008, "0.700008"),
            (1.0, "1"),
            (1_234_567.0, "1.23457e+06"),
            (999_999.5, "1e+06"),
            (0.00001234, "1.234e-05"),
            (0.0001, "0.0001"),
        ] {
            assert_eq!(cpp_double(v), text, "{v}");
        }
    }
}
