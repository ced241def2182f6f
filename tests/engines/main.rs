//! The tests against servers this project did not write: real Triton (PyTriton), vLLM's CPU build,
//! llama.cpp's `llama-server`, and GenAI-Perf's own exports. `scripts/test.sh` starts the servers;
//! without one, its tests print `skipped: <reason>` and pass unless `TTFTBENCH_REQUIRE_TRITON=1` /
//! `TTFTBENCH_REQUIRE_ENGINES=1` (CI).

#[path = "../common/mod.rs"]
mod common;

/// One test at a time: the servers and the machine's 2 cores are shared, and the timing and
/// throughput assertions need them to themselves (as when each file was its own binary).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

mod engines_accuracy;
mod engines_apis;
mod engines_load;
mod genai_perf_crosscheck;
mod perf_guide_snippet;
mod real_engines;
mod triton_env;
mod triton_perf;
mod triton_real;
