//! What to send: tokenizer, prompts, output lengths, tensors, request payloads.

pub mod dataset;
pub mod kserve;
pub mod prompts;
pub mod spec;
pub mod tensor;
pub mod tokenizer;

pub use dataset::{Dataset, Entry, Payload};
pub use spec::{OutputLength, PromptSource, WorkloadPlan};
