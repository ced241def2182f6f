//! What a person sees: console tables now; the HTML report builds on the same summaries.

pub mod console;
