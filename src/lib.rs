//! `ttftbench`: a load generator for LLM and tensor inference servers.
//!
//! Data flows one way: CLI (`cli`) → validated plan (`plan`) → scheduler (`load`) driving a
//! protocol client (`client`) → one flat record per request (`record`) → HDR-histogram
//! aggregation (`stats`, fed by `collector`) → files (`artifact`) and what a person sees
//! (`report`). The simulated inference server (`sim`) speaks the same protocols on real sockets
//! for demos and tests. `run` is the engine callable in-process; `app` holds the subcommands.

/// Generated KServe v2 / Triton gRPC protocol types (from `proto/kserve.proto`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("inference");
}

/// This build's version (from Cargo.toml), recorded in artifacts and reports.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit this binary was built from (`unknown` outside a git checkout).
pub const GIT_COMMIT: &str = env!("TTFTBENCH_GIT_COMMIT");

/// What `--version` prints after the name: the version and the commit.
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("TTFTBENCH_GIT_COMMIT"),
    ")"
);

pub mod analysis;
pub mod app;
pub mod artifact;
pub mod cli;
pub mod client;
pub mod context;
pub mod doctor;
pub mod engine;
pub mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod load;
pub mod merge;
pub mod metrics;
pub(crate) mod names;
pub mod perf;
pub mod plan;
pub mod profile;
pub mod publish;
pub mod record;
pub mod report;
pub mod search;
pub mod server_metrics;
pub mod sim;
pub mod stats;
pub mod target;
#[cfg(test)]
pub(crate) mod test_fixtures;
pub mod workload;
