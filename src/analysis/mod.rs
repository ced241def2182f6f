//! What the numbers mean: objectives checked on levels (`slo`), where the knee of a sweep is
//! (`knee`), where the server's time went (`verdict`), whether a level's numbers can be trusted
//! (`validity`), when a level has measured enough (`sequential`) and whether the server still
//! absorbs its load (`saturation`), the throughput/interactivity trade-off across levels
//! (`pareto`), whether scored answers hold up under load (`accuracy`), and how numbers are
//! written (`text`). Pure functions over level summaries.

pub mod accuracy;
pub mod knee;
pub mod pareto;
pub mod saturation;
pub mod sequential;
pub mod slo;
pub mod text;
pub mod transport;
pub mod validity;
pub mod verdict;
