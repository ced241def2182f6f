//! What a person sees: console tables and the sweep verdict; the HTML report builds on the same
//! summaries.

pub mod console;
pub mod html;
pub mod knee;
pub mod svg;
pub mod verdict;
