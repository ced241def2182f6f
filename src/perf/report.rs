//! perf_analyzer's console report and `-f` latency-report CSV, as pure functions of the levels.
//!
//! CSV (`-f FILE`): header, then one row per level sorted by ascending Inferences/Second.
//! Columns, in order (bracketed ones are conditional, as in perf_analyzer):
//! `Concurrency` or `Request Rate`, `Inferences/Second`, [`Response Throughput` — streaming],
//! `Client Send`, [`Network+Server Send/Recv`, `Server Queue`, `Server Compute Input`,
//! `Server Compute Infer`, `Server Compute Output` — when the server's statistics were read],
//! `Client Recv`, `p50 latency`, `p90 latency`, `p95 latency`, `p99 latency`, [`pN latency` —
//! `--percentile N` other than 50/90/95/99], then with `--verbose-csv`: [`Avg latency` — without
//! `--percentile`], `request/response`, `response wait`; and last, always, two columns
//! perf_analyzer does not write: `Throughput` (the value of `Inferences/Second`) and
//! `p99 Latency` (the value of `p99 latency`, µs). They are what the perf_analyzer guide's pandas
//! snippet plots (`df['Throughput']`, `df['p99 Latency']`); appended after every perf_analyzer
//! column, they leave positional scripts (`awk -F, '{print $3}'`) reading what they read from
//! perf_analyzer's file. After them, only when a level cancelled requests on purpose
//! (`--request-cancellation-rate`), `Cancelled Requests`: how many, in no other column; then,
//! only when a second Ctrl-C abandoned requests in flight, `Abandoned Requests`, likewise.
//! Readers of this file (`compare`, `report`) go by column name.
//! Time columns are integer microseconds
//! (ns / 1000, truncated); Inferences/Second uses C++ stream formatting (6 significant digits).
//! Network+Server Send/Recv = max(0, avg latency − send − recv − server queue − server compute).

use super::{PerfLevel, ServerView};
use crate::load::Stimulus;
use std::fmt::Write;

/// C++ `ostream << double` default formatting: 6 significant digits, no trailing zeros.
pub fn g6(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{:.5e}", v);
        let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mant = mant.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn us(ns: f64) -> u64 {
    (ns.max(0.0) / 1000.0) as u64
}

/// perf_analyzer's server overhead: success time minus the accounted phases, floored at 0.
fn overhead_ns(s: &ServerView) -> f64 {
    (s.avg_request_ns
        - s.avg_queue_ns
        - s.avg_compute_input_ns
        - s.avg_compute_infer_ns
        - s.avg_compute_output_ns)
        .max(0.0)
}

/// The level's load as perf_analyzer prints it: the concurrency, or the rate in C++ formatting.
fn load_value(s: &Stimulus) -> String {
    match s {
        Stimulus::Concurrency(n) => n.to_string(),
        Stimulus::RequestRate { rate, .. } => g6(*rate),
        // perf never replays a trace; a speed-up reads like a rate.
        Stimulus::FixedSchedule { speedup, .. } => g6(*speedup),
    }
}

/// The kind of load as the summary names it.
fn load_kind(s: &Stimulus) -> &'static str {
    match s {
        Stimulus::Concurrency(_) => "Concurrency",
        Stimulus::RequestRate { .. } => "Request Rate",
        Stimulus::FixedSchedule { .. } => "Fixed schedule",
    }
}

/// What the client waited for beyond sending and receiving (ns), floored at 0.
fn response_wait_ns(l: &PerfLevel) -> f64 {
    (l.latency.avg - l.avg_send_ns - l.avg_recv_ns).max(0.0)
}

fn stimulus_label(s: &Stimulus) -> String {
    let v = load_value(s);
    match s {
        Stimulus::Concurrency(_) => format!("Request concurrency: {v}"),
        Stimulus::RequestRate { .. } => format!("Request Rate: {v} inference requests per seconds"),
        Stimulus::FixedSchedule { .. } => format!("Fixed schedule: speed-up {v}"),
    }
}

/// The `*** Measurement Settings ***` block.
pub fn settings(plan: &super::plan::PerfPlan, protocol: &str) -> String {
    let mut out = String::from("*** Measurement Settings ***\n");
    let _ = writeln!(out, "  Batch size: {}", plan.batch);
    out.push_str("  Service Kind: Triton\n");
    let _ = match plan.windows {
        crate::load::WindowRule::Time(d) => {
            out.push_str("  Using \"time_windows\" mode for stabilization\n");
            // The flag's value; windows last 1.2 × this.
            let flag = (d.as_millis() as f64 / 1.2).round() as u64;
            writeln!(out, "  Measurement window: {flag} msec")
        }
        crate::load::WindowRule::Count(n) => {
            out.push_str("  Using \"count_windows\" mode for stabilization\n");
            writeln!(out, "  Minimum number of samples in each window: {n}")
        }
        crate::load::WindowRule::Requests(n) => {
            writeln!(out, "  Measuring {n} requests in one window")
        }
        crate::load::WindowRule::Once(d) => writeln!(
            out,
            "  Measuring one window of {} msec (no stability trials)",
            d.as_millis()
        ),
        crate::load::WindowRule::Looks(l) => writeln!(
            out,
            "  Measuring until the decision is settled, at most {} requests",
            l.cap
        ),
    };
    if plan.latency_threshold_ms > 0 {
        let _ = writeln!(out, "  Latency limit: {} msec", plan.latency_threshold_ms);
    }
    let _ = writeln!(
        out,
        "  Using asynchronous calls for inference over {protocol}"
    );
    if plan.target.streaming {
        out.push_str("  Streaming responses (ModelStreamInfer)\n");
    }
    let which = plan
        .percentile
        .map_or("average".into(), |p| format!("p{p}"));
    let _ = writeln!(out, "  Stabilizing using {which} latency and throughput");
    out.push('\n');
    out
}

/// One level's client and server blocks.
pub fn level(l: &PerfLevel, protocol: &str, percentile: Option<u32>) -> String {
    let mut out = format!("{}\n", stimulus_label(&l.stimulus));
    out.push_str("  Client: \n");
    let _ = writeln!(out, "    Request count: {}", l.request_count);
    let _ = writeln!(out, "    Throughput: {} infer/sec", g6(l.throughput));
    if l.streaming {
        let rt = g6(l.response_throughput);
        let _ = writeln!(out, "    Response Throughput: {rt} responses/sec");
        if let Some(f) = &l.first_response {
            let _ = writeln!(out, "    Avg time to first response: {} usec", us(f.avg));
        }
        if l.whole_responses {
            out.push_str(WHOLE_LINE);
        }
    }
    if percentile.is_none() {
        let _ = writeln!(
            out,
            "    Avg latency: {} usec (standard deviation {} usec)",
            us(l.latency.avg),
            us(l.latency.std)
        );
    }
    let ps = [
        (50, l.latency.p50),
        (90, l.latency.p90),
        (95, l.latency.p95),
        (99, l.latency.p99),
    ];
    for (p, v) in ps.into_iter().chain(l.extra_percentile) {
        let _ = writeln!(out, "    p{p} latency: {} usec", us(v));
    }
    let wait = response_wait_ns(l);
    if l.streaming {
        // perf_analyzer omits client-library times for decoupled models.
    } else {
        let io = match protocol {
            "gRPC" => "(un)marshal request/response",
            _ => "send/recv",
        };
        let _ = writeln!(
            out,
            "    Avg {protocol} time: {} usec ({io} {} usec + response wait {} usec)",
            us(l.latency.avg),
            us(l.avg_send_ns + l.avg_recv_ns),
            us(wait)
        );
    }
    out.push_str(&failed_and_cancelled(l));
    if let Some(s) = &l.server {
        out.push_str("  Server: \n");
        let _ = writeln!(out, "    Inference count: {}", s.inference_count);
        let _ = writeln!(out, "    Execution count: {}", s.execution_count);
        let _ = writeln!(out, "    Successful request count: {}", s.success_count);
        let _ = writeln!(
            out,
            "    Avg request latency: {} usec (overhead {} usec + queue {} usec + compute input {} usec + compute infer {} usec + compute output {} usec)",
            us(s.avg_request_ns),
            us(overhead_ns(s)),
            us(s.avg_queue_ns),
            us(s.avg_compute_input_ns),
            us(s.avg_compute_infer_ns),
            us(s.avg_compute_output_ns)
        );
    }
    if l.interrupted {
        out.push_str(
            "  Interrupted: these numbers cover the partial measurement window before the signal.\n",
        );
    } else if !l.stable {
        let _ = writeln!(
            out,
            "  Failed to obtain stable measurement within {} measurement windows for {} {}. Please try to increase the --measurement-interval.",
            l.windows,
            load_kind(&l.stimulus).to_lowercase(),
            load_value(&l.stimulus)
        );
    }
    out.push('\n');
    out
}

pub use crate::engine::outcome::short_error;

/// The client block's line for a level asked to stream whose responses each came in one piece.
const WHOLE_LINE: &str = "    Responses not streamed: each request's response came in one piece, so time to first response is its latency and is not reported\n";

/// The run's one line on how to make a model stream whose responses came whole under
/// `--streaming`: set its `stream` input when it has one (TensorRT-LLM's and vLLM's backends
/// stream only when asked), else say that the model answers once.
pub fn whole_responses_hint(model: &str, stream_input: bool) -> String {
    if stream_input {
        format!(
            "{model} answered every request in one piece although --streaming was given: its responses stream only when its `stream` input is true; add \"stream\": [true] to each entry of --input-data (a JSON file) to measure time to first response"
        )
    } else {
        format!(
            "{model} answered every request in one piece although --streaming was given: it sends one response per request, so there is no time to first response to measure"
        )
    }
}

/// The client block's failed requests by kind (with the server's words and a hint), then the
/// requests cancelled on purpose (`--request-cancellation-rate`) and those a second Ctrl-C
/// abandoned, which are in neither the request count nor any latency above: nothing when there
/// are none of these.
fn failed_and_cancelled(l: &PerfLevel) -> String {
    let mut out = String::new();
    if l.error_count > 0 {
        let _ = writeln!(out, "    Failed requests: {}", l.error_count);
        for e in &l.errors {
            let example = short_error(&e.example);
            let _ = writeln!(out, "      {} × {}: {example}", e.count, e.kind);
            if let Some(h) = &e.hint {
                let _ = writeln!(out, "        hint: {h}");
            }
        }
    }
    if l.cancelled_count > 0 {
        let n = l.cancelled_count;
        let _ = writeln!(
            out,
            "    Cancelled requests: {n} (left out of the statistics)"
        );
    }
    if l.abandoned_count > 0 {
        let _ = writeln!(
            out,
            "    Abandoned requests: {} (in flight at the second Ctrl-C; left out of the statistics)",
            l.abandoned_count
        );
    }
    out
}

/// The closing summary lines.
pub fn summary(levels: &[PerfLevel], percentile: Option<u32>) -> String {
    let which = percentile.map_or("Average".to_string(), |p| format!("p{p}"));
    let mut out = format!("Inferences/Second vs. Client {which} Batch Latency\n");
    for l in levels {
        let lat = match (percentile, l.extra_percentile) {
            (Some(_), Some((_, v))) => v,
            (Some(50), None) => l.latency.p50,
            (Some(90), None) => l.latency.p90,
            (Some(95), None) => l.latency.p95,
            (Some(99), None) => l.latency.p99,
            _ => l.latency.avg,
        };
        let _ = writeln!(
            out,
            "{}: {}, throughput: {} infer/sec, latency {} usec",
            load_kind(&l.stimulus),
            load_value(&l.stimulus),
            g6(l.throughput),
            us(lat)
        );
    }
    out
}

/// One level as a JSON object (perf's line of `--output json`; perf writes no per-level JSON
/// file, so these are the `-f` CSV's numbers by name). Times in µs as perf_analyzer prints them;
/// `first_response_us`, `server` and `extra_percentile` are null when the level has none;
/// `whole_responses` says a level asked to stream got each response in one piece (its
/// `first_response_us` is null: it would be the latency); `abandoned_count` counts requests a
/// second Ctrl-C abandoned in flight, in no other number.
///
/// ```text
/// {"level":"concurrency4","load":{"kind":"concurrency","value":4.0},"request_count":100,
///  "error_count":0,"cancelled_count":0,"abandoned_count":0,"throughput_infer_per_sec":812.5,
///  "response_throughput":0.0,
///  "latency_us":{"avg":..,"min":..,"max":..,"std":..,"p50":..,"p90":..,"p95":..,"p99":..},
///  "first_response_us":null,"extra_percentile":null,"client_send_us":12.0,
///  "client_recv_us":30.0,"streaming":false,"whole_responses":false,"stable":true,"windows":3,
///  "server":{...},
///  "errors":[],"slo":[...],"validity":{...},"ttftbench_version":"..."}
/// ```
pub fn json(l: &PerfLevel) -> serde_json::Value {
    use serde_json::json;
    let us_stats = |s: &crate::metrics::Stats| {
        json!({
            "avg": s.avg / 1e3, "min": s.min / 1e3, "max": s.max / 1e3, "std": s.std / 1e3,
            "p50": s.p50 / 1e3, "p90": s.p90 / 1e3, "p95": s.p95 / 1e3, "p99": s.p99 / 1e3,
        })
    };
    json!({
        "level": l.stimulus.name(),
        "load": {"kind": l.stimulus.kind(), "value": l.stimulus.value()},
        "request_count": l.request_count,
        "error_count": l.error_count,
        "cancelled_count": l.cancelled_count,
        "abandoned_count": l.abandoned_count,
        "throughput_infer_per_sec": l.throughput,
        "response_throughput": l.response_throughput,
        "latency_us": us_stats(&l.latency),
        "first_response_us": l.first_response.as_ref().map(us_stats),
        "extra_percentile": l.extra_percentile.map(|(p, v)| json!({"percentile": p, "us": v / 1e3})),
        "client_send_us": l.avg_send_ns / 1e3,
        "client_recv_us": l.avg_recv_ns / 1e3,
        "streaming": l.streaming,
        "whole_responses": l.whole_responses,
        "stable": l.stable,
        "windows": l.windows,
        "server": l.server.as_ref().map(|v| json!({
            "inference_count": v.inference_count,
            "execution_count": v.execution_count,
            "success_count": v.success_count,
            "avg_request_us": v.avg_request_ns / 1e3,
            "avg_queue_us": v.avg_queue_ns / 1e3,
            "avg_compute_input_us": v.avg_compute_input_ns / 1e3,
            "avg_compute_infer_us": v.avg_compute_infer_ns / 1e3,
            "avg_compute_output_us": v.avg_compute_output_ns / 1e3,
        })),
        "errors": l.errors,
        "slo": crate::analysis::slo::json(&l.slo),
        "validity": l.validity,
        "ttftbench_version": crate::VERSION,
    })
}

/// Options that shape the CSV.
#[derive(Debug, Clone, Copy)]
pub struct CsvOptions {
    /// `--percentile`.
    pub percentile: Option<u32>,
    /// `--verbose-csv`.
    pub verbose: bool,
}

/// The `-f` CSV's column of requests cancelled on purpose (`--request-cancellation-rate`).
pub const CANCELLED_COLUMN: &str = "Cancelled Requests";

/// The `-f` CSV's column of requests a second Ctrl-C abandoned in flight.
pub const ABANDONED_COLUMN: &str = "Abandoned Requests";

/// perf_analyzer's `-f` CSV.
pub fn csv(levels: &[PerfLevel], o: CsvOptions) -> String {
    let rate = levels.first().is_some_and(|l| l.stimulus.open_loop());
    let streaming = levels.iter().any(|l| l.streaming);
    let server = !levels.is_empty() && levels.iter().all(|l| l.server.is_some());
    let extra_p = o.percentile.filter(|p| ![50, 90, 95, 99].contains(p));
    let mut head: Vec<String> = vec![
        if rate { "Request Rate" } else { "Concurrency" }.into(),
        "Inferences/Second".into(),
    ];
    if streaming {
        head.push("Response Throughput".into());
    }
    head.push("Client Send".into());
    if server {
        head.extend(
            [
                "Network+Server Send/Recv",
                "Server Queue",
                "Server Compute Input",
                "Server Compute Infer",
                "Server Compute Output",
            ]
            .map(String::from),
        );
    }
    head.push("Client Recv".into());
    let ps = [50, 90, 95, 99].into_iter().chain(extra_p);
    head.extend(ps.map(|p| format!("p{p} latency")));
    if o.verbose {
        if o.percentile.is_none() {
            head.push("Avg latency".into());
        }
        head.push("request/response".into());
        head.push("response wait".into());
    }
    head.push("Throughput".into());
    head.push("p99 Latency".into());
    // Only a run that cancelled requests gets the column, so other runs' files stay as before.
    let cancelled = levels.iter().any(|l| l.cancelled_count > 0);
    if cancelled {
        head.push(CANCELLED_COLUMN.into());
    }
    let abandoned = levels.iter().any(|l| l.abandoned_count > 0);
    if abandoned {
        head.push(ABANDONED_COLUMN.into());
    }
    let mut rows: Vec<&PerfLevel> = levels.iter().collect();
    rows.sort_by(|a, b| {
        a.throughput
            .partial_cmp(&b.throughput)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut out = head.join(",");
    out.push('\n');
    for l in rows {
        let mut r: Vec<String> = vec![load_value(&l.stimulus), g6(l.throughput)];
        if streaming {
            r.push(g6(l.response_throughput));
        }
        r.push(us(l.avg_send_ns).to_string());
        if server && let Some(s) = &l.server {
            let accounted = s.avg_queue_ns
                + s.avg_compute_input_ns
                + s.avg_compute_infer_ns
                + s.avg_compute_output_ns;
            let network = (l.latency.avg - l.avg_send_ns - l.avg_recv_ns - accounted).max(0.0);
            let server_ns = [
                network,
                s.avg_queue_ns,
                s.avg_compute_input_ns,
                s.avg_compute_infer_ns,
                s.avg_compute_output_ns,
            ];
            r.extend(server_ns.map(|v| us(v).to_string()));
        }
        r.push(us(l.avg_recv_ns).to_string());
        let extra = extra_p.map(|_| l.extra_percentile.map_or(0.0, |(_, v)| v));
        let ps = [l.latency.p50, l.latency.p90, l.latency.p95, l.latency.p99];
        r.extend(ps.into_iter().chain(extra).map(|v| us(v).to_string()));
        if o.verbose {
            if o.percentile.is_none() {
                r.push(us(l.latency.avg).to_string());
            }
            r.push(us(l.avg_send_ns + l.avg_recv_ns).to_string());
            r.push(us(response_wait_ns(l)).to_string());
        }
        r.push(g6(l.throughput));
        r.push(us(l.latency.p99).to_string());
        if cancelled {
            r.push(l.cancelled_count.to_string());
        }
        if abandoned {
            r.push(l.abandoned_count.to_string());
        }
        out.push_str(&r.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Stats;

    /// perf_analyzer's CSV without `--percentile` or `--verbose-csv`.
    const PLAIN: CsvOptions = CsvOptions {
        percentile: None,
        verbose: false,
    };

    #[test]
    fn g6_like_cpp() {
        assert_eq!(g6(168.604_12), "168.604");
        assert_eq!(g6(8556.0), "8556");
        assert_eq!(g6(2608.5), "2608.5");
        assert_eq!(g6(11.6), "11.6");
        assert_eq!(g6(122.21123), "122.211");
        assert_eq!(g6(1234567.0), "1.23457e+06");
        assert_eq!(g6(0.000_012_345_6), "1.23456e-05");
        assert_eq!(g6(0.5), "0.5");
        assert_eq!(g6(0.0), "0");
    }

    fn ns_stats(avg_us: f64) -> Stats {
        let ns = |x: f64| x * 1000.0;
        Stats {
            count: 100,
            avg: ns(avg_us),
            min: ns(avg_us * 0.5),
            max: ns(avg_us * 3.0),
            std: ns(avg_us * 0.1),
            p50: ns(avg_us * 0.98),
            p90: ns(avg_us * 1.2),
            p95: ns(avg_us * 1.3),
            p99: ns(avg_us * 1.7),
            ..Stats::default()
        }
    }

    fn lvl(c: u32, tput: f64, lat_us: f64, server: bool) -> PerfLevel {
        PerfLevel {
            stimulus: Stimulus::Concurrency(c),
            request_count: 1000,
            error_count: 0,
            cancelled_count: 0,
            abandoned_count: 0,
            throughput: tput,
            response_throughput: tput,
            latency: ns_stats(lat_us),
            first_response: None,
            extra_percentile: None,
            avg_send_ns: 4_500.0,
            avg_recv_ns: 1_200.0,
            streaming: false,
            whole_responses: false,
            stable: true,
            interrupted: false,
            windows: 3,
            engine: None,
            errors: Vec::new(),
            server: server.then_some(ServerView {
                inference_count: 1000,
                execution_count: 250,
                success_count: 1000,
                avg_request_ns: lat_us * 1000.0 * 0.8,
                avg_queue_ns: 342_000.0,
                avg_compute_input_ns: 21_000.0,
                avg_compute_infer_ns: 431_000.0,
                avg_compute_output_ns: 10_000.0,
            }),
            slo: Vec::new(),
            validity: crate::metrics::Validity::default(),
        }
    }

    #[test]
    fn level_json_exact() {
        let v = json(&lvl(4, 4100.5, 900.0, true));
        let expected = r#"{"level":"concurrency4","load":{"kind":"concurrency","value":4.0},"request_count":1000,"error_count":0,"cancelled_count":0,"abandoned_count":0,"throughput_infer_per_sec":4100.5,"response_throughput":4100.5,"latency_us":{"avg":900.0,"min":450.0,"max":2700.0,"std":90.0,"p50":882.0,"p90":1080.0,"p95":1170.0,"p99":1530.0},"first_response_us":null,"extra_percentile":null,"client_send_us":4.5,"client_recv_us":1.2,"streaming":false,"whole_responses":false,"stable":true,"windows":3,"server":{"inference_count":1000,"execution_count":250,"success_count":1000,"avg_request_us":720.0,"avg_queue_us":342.0,"avg_compute_input_us":21.0,"avg_compute_infer_us":431.0,"avg_compute_output_us":10.0},"errors":[],"slo":[],"validity":{"trustworthy":true,"reasons":[],"cpu_share":null,"cores":0,"send_lag_p99_ms":null,"requested_rate":null,"achieved_rate":null,"delayed_by_cap":0,"max_stall_ms":null,"held_back_ms":null,"held_back_sends":0},"ttftbench_version":"VERSION"}"#;
        assert_eq!(v.to_string(), expected.replace("VERSION", crate::VERSION));
    }

    #[test]
    fn csv_exact_with_server_columns_sorted_by_throughput() {
        let text = csv(
            &[lvl(8, 8556.0, 934.0, true), lvl(4, 4100.5, 900.0, true)],
            PLAIN,
        );
        assert_eq!(
            text,
            "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Throughput,p99 Latency
4,4100.5,4,90,342,21,431,10,1,882,1080,1170,1530,4100.5,1530
8,8556,4,124,342,21,431,10,1,915,1120,1214,1587,8556,1587
"
        );
    }

    /// Cancelled requests get a console line and, only in a run that had some, a last CSV column
    /// after every perf_analyzer column and the two plotting ones (whose places stay).
    #[test]
    fn cancelled_requests_console_line_and_last_csv_column() {
        let mut cut = lvl(4, 4100.5, 900.0, true);
        cut.cancelled_count = 12;
        let text = level(&cut, "gRPC", None);
        assert!(
            text.contains("    Request count: 1000\n")
                && text.contains("    Cancelled requests: 12 (left out of the statistics)\n"),
            "{text}"
        );
        assert!(!level(&lvl(4, 4100.5, 900.0, true), "gRPC", None).contains("Cancelled"));
        let with = csv(&[lvl(8, 8556.0, 934.0, true), cut], PLAIN);
        let without = csv(
            &[lvl(8, 8556.0, 934.0, true), lvl(4, 4100.5, 900.0, true)],
            PLAIN,
        );
        for (a, b) in with.lines().zip(without.lines()) {
            assert!(a.starts_with(&format!("{b},")), "{a} / {b}");
        }
        let last: Vec<&str> = with
            .lines()
            .map(|l| l.rsplit(',').next().unwrap_or(""))
            .collect();
        assert_eq!(last, [CANCELLED_COLUMN, "12", "0"]);
    }

    /// Asked to stream, a level whose responses came whole prints no time to first response
    /// and says why; a streamed one prints it. Requests abandoned by a second Ctrl-C get their
    /// own line and, only in a run that had some, a last CSV column.
    #[test]
    fn whole_responses_and_abandoned_requests_exact() {
        let mut streamed = lvl(1, 3.5, 276_366.0, false);
        streamed.streaming = true;
        streamed.response_throughput = 899.0;
        streamed.first_response = Some(ns_stats(8_447.0));
        let whole = PerfLevel {
            first_response: None,
            whole_responses: true,
            abandoned_count: 2,
            response_throughput: 3.5,
            ..streamed.clone()
        };
        let client = |l: &PerfLevel| {
            level(l, "gRPC", None)
                .lines()
                .take(7)
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            client(&streamed),
            "Request concurrency: 1
  Client: 
    Request count: 1000
    Throughput: 3.5 infer/sec
    Response Throughput: 899 responses/sec
    Avg time to first response: 8447 usec
    Avg latency: 276366 usec (standard deviation 27636 usec)"
        );
        assert_eq!(
            client(&whole),
            "Request concurrency: 1
  Client: 
    Request count: 1000
    Throughput: 3.5 infer/sec
    Response Throughput: 3.5 responses/sec
    Responses not streamed: each request's response came in one piece, so time to first response is its latency and is not reported
    Avg latency: 276366 usec (standard deviation 27636 usec)"
        );
        assert!(
            level(&whole, "gRPC", None).contains(
                "    p99 latency: 469822 usec\n    Abandoned requests: 2 (in flight at the second Ctrl-C; left out of the statistics)\n"
            ),
            "{}",
            level(&whole, "gRPC", None)
        );
        assert_eq!(
            csv(&[streamed, whole], PLAIN),
            "Concurrency,Inferences/Second,Response Throughput,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Throughput,p99 Latency,Abandoned Requests
1,3.5,899,4,1,270838,331639,359275,469822,3.5,469822,0
1,3.5,3.5,4,1,270838,331639,359275,469822,3.5,469822,2
"
        );
        assert_eq!(
            whole_responses_hint("llama3", true),
            "llama3 answered every request in one piece although --streaming was given: its responses stream only when its `stream` input is true; add \"stream\": [true] to each entry of --input-data (a JSON file) to measure time to first response"
        );
        assert_eq!(
            whole_responses_hint("bert", false),
            "bert answered every request in one piece although --streaming was given: it sends one response per request, so there is no time to first response to measure"
        );
    }

    #[test]
    fn csv_without_server_stats_verbose_and_percentile() {
        let mut l = lvl(2, 100.0, 1000.0, false);
        l.extra_percentile = Some((75, 1_100_000.0));
        let text = csv(
            &[l],
            CsvOptions {
                percentile: Some(75),
                verbose: true,
            },
        );
        assert_eq!(
            text,
            "Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,p75 latency,request/response,response wait,Throughput,p99 Latency
2,100,4,1,980,1200,1300,1700,1100,5,994,100,1700
"
        );
        let text = csv(
            &[lvl(2, 100.0, 1000.0, false)],
            CsvOptions {
                percentile: None,
                verbose: true,
            },
        );
        assert!(text.starts_with("Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,request/response,response wait,Throughput,p99 Latency\n"));
    }

    #[test]
    fn csv_request_rate_and_streaming() {
        let mut l = lvl(1, 99.5, 2000.0, false);
        l.stimulus = Stimulus::RequestRate {
            rate: 100.0,
            arrival: crate::load::Arrival::Constant,
            max_inflight: 8,
        };
        l.streaming = true;
        l.response_throughput = 1990.0;
        let text = csv(&[l], PLAIN);
        assert_eq!(
            text,
            "Request Rate,Inferences/Second,Response Throughput,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Throughput,p99 Latency\n100,99.5,1990,4,1,1960,2400,2600,3400,99.5,3400\n"
        );
    }

    #[test]
    fn console_blocks_exact() {
        let text = level(&lvl(8, 8556.0, 934.0, true), "gRPC", None);
        assert_eq!(
            text,
            "Request concurrency: 8
  Client: 
    Request count: 1000
    Throughput: 8556 infer/sec
    Avg latency: 934 usec (standard deviation 93 usec)
    p50 latency: 915 usec
    p90 latency: 1120 usec
    p95 latency: 1214 usec
    p99 latency: 1587 usec
    Avg gRPC time: 934 usec ((un)marshal request/response 5 usec + response wait 928 usec)
  Server: 
    Inference count: 1000
    Execution count: 250
    Successful request count: 1000
    Avg request latency: 747 usec (overhead 0 usec + queue 342 usec + compute input 21 usec + compute infer 431 usec + compute output 10 usec)

"
        );
        // Failed requests say what the server answered (found against real Triton: a run
        // where every request failed showed only zeros and "Failed requests: 20").
        let mut failing = lvl(1, 0.0, 0.0, false);
        failing.error_count = 20;
        failing.errors = vec![crate::stats::ErrorCount {
            kind: "grpc_not_found".into(),
            count: 20,
            example: "Request for unknown model: 'm' version 7 is not found".into(),
            hint: None,
        }];
        let text = level(&failing, "gRPC", None);
        assert!(
            text.contains("    Failed requests: 20\n      20 × grpc_not_found: Request for unknown model: 'm' version 7 is not found\n"),
            "{text}"
        );
        assert_eq!(
            short_error(
                "Traceback (most recent call last):\n  File \"x.py\", line 1, in parse\n    json.loads(s)\njson.decoder.JSONDecodeError: Extra data: line 1 column 2 (char 1)\n\n"
            ),
            "json.decoder.JSONDecodeError: Extra data: line 1 column 2 (char 1)"
        );
        assert_eq!(short_error(" a\n  b "), "a b");
        assert_eq!(short_error(&"é".repeat(400)).chars().count(), 301);
        let s = summary(&[lvl(1, 168.604, 5694.0, false)], None);
        assert_eq!(
            s,
            "Inferences/Second vs. Client Average Batch Latency\nConcurrency: 1, throughput: 168.604 infer/sec, latency 5694 usec\n"
        );
    }
}
