//! Which flags `-h` shows: the ones most runs set, so the short help fits one screen; `--help`
//! lists every flag, those same ones first under each heading.

use clap::Arg;

/// `profile -h`: target, load, lengths, how long a level lasts, where files go, the pass mark.
/// (`no_streaming` is listed before it exists so that the flag shows beside `--streaming`
/// once it does; an id that matches no argument changes nothing.)
const PROFILE: &[&str] = &[
    "model",
    "url",
    "endpoint_type",
    "streaming",
    "no_streaming",
    "header",
    "api_key",
    "concurrency",
    "request_rate",
    "synthetic_input_tokens_mean",
    "output_tokens_mean",
    "input_file",
    "request_count",
    "measurement_interval",
    "artifact_dir",
    "slo",
];

/// `search -h`: `profile`'s target and workload, and the search's own bounds.
const SEARCH: &[&str] = &[
    "model",
    "url",
    "endpoint_type",
    "streaming",
    "no_streaming",
    "header",
    "api_key",
    "synthetic_input_tokens_mean",
    "output_tokens_mean",
    "input_file",
    "artifact_dir",
    "slo",
    "confidence",
    "over",
    "min",
    "max",
    "max_probe_requests",
    "max_probe_time",
];

/// `perf -h`: perf_analyzer's flags of the guide's commands.
const PERF: &[&str] = &[
    "model",
    "url",
    "protocol",
    "streaming",
    "header",
    "concurrency_range",
    "request_rate_range",
    "batch_size",
    "shape",
    "input_data",
    "measurement_interval",
    "request_count",
    "latency_report_file",
    "slo",
];

/// Pushed past the listed arguments in `--help`, keeping their own order among themselves.
const LATER: usize = 10_000;

/// Shows `arg` in `-h` when it is one of `first`, in that list's order; otherwise only in
/// `--help`, after them.
fn first(arg: Arg, first: &[&str]) -> Arg {
    match first.iter().position(|id| *id == arg.get_id().as_str()) {
        Some(i) => arg.display_order(i),
        None => {
            let order = arg.get_display_order();
            arg.hide_short_help(true).display_order(order + LATER)
        }
    }
}

/// `profile`'s arguments.
pub fn profile(arg: Arg) -> Arg {
    first(arg, PROFILE)
}

/// `search`'s arguments.
pub fn search(arg: Arg) -> Arg {
    first(arg, SEARCH)
}

/// `perf`'s arguments.
pub fn perf(arg: Arg) -> Arg {
    first(arg, PERF)
}
