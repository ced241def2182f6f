//! What the numbers mean: objectives checked on levels (`slo`), where the knee of a sweep is
//! (`knee`), where the server's time went (`verdict`), whether a level's numbers can be trusted
//! (`validity`), and how numbers are written (`text`). Pure functions over level summaries.

pub mod knee;
pub mod slo;
pub mod text;
pub mod transport;
pub mod validity;
pub mod verdict;
