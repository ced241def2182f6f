//! What to send: tokenizer, prompts, output lengths, request payloads.

pub mod prompts;
pub mod tokenizer;
