//! `ttftbench`: a load generator for LLM and tensor inference servers.
//!
//! Data flows one way: CLI (`cli`) → validated plan (`plan`) → scheduler (`load`) driving a
//! protocol client (`client`) → one flat record per request (`record`) → HDR-histogram
//! aggregation (`stats`) → files (`artifact`) and what a person sees (`report`). The simulated
//! inference server (`sim`) speaks the same protocols on real sockets for demos and tests.

/// Generated KServe v2 / Triton gRPC protocol types (from `proto/kserve.proto`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("inference");
}

pub mod sim;
pub mod workload;
