//! The tests that need no server but the built-in simulator (started on port 0 by each test) or
//! none at all: the CLI, the load engine, every artifact and report, the module graph. One test
//! binary, one module per subject: a binary links the whole dependency tree (~170 MB each), and
//! 35 of them filled a CI machine's disk.

#[path = "../common/mod.rs"]
mod common;

mod accuracy_sim;
mod agentic;
mod apis_sim;
mod backpressure;
mod cancellation;
mod ci_reports;
mod cli;
mod compare_cli;
mod config_file;
mod connection_reuse;
mod doctor_sim;
mod engine_view;
mod fuzz_regressions;
mod hostile_streams;
mod isl_buckets;
mod live_view;
mod module_graph;
mod perf_shards;
mod perf_sim;
mod profile_sim;
mod repeat;
mod report_html;
mod request_ids;
mod run_context;
mod search_error_rate;
mod search_sim;
mod sessions;
mod shards;
mod sim_engines;
mod sim_protocols;
mod sim_restart;
mod sim_tensor;
mod tls;
mod traffic;
mod typed_errors;
