//! What to send: tokenizer, prompts, output lengths, request payloads.

pub mod tokenizer;
