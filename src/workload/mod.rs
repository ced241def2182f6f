//! What to send: tokenizer, prompts (synthetic, from a file, or synthesized for a request
//! trace), multi-turn sessions, scored datasets with known answers, the run's prompt salt,
//! output lengths, tensors, images, tool definitions, reranker inputs, request payloads.

pub mod blocks;
pub mod bodies;
pub mod conversation;
pub mod dataset;
pub mod images;
pub mod kserve;
pub mod lengths;
pub mod prompts;
pub mod rankings;
pub mod salt;
pub mod scored;
pub mod spec;
pub mod tensor;
pub mod tokenizer;
pub mod tools;
pub mod trace;

pub use dataset::{Dataset, Entry, Payload};
pub use salt::Salt;
pub use spec::{OutputLength, PrefixPool, PromptSalt, PromptSource, TraceSource, WorkloadPlan};
