//! What a person sees: console tables, the live view's text while a level runs, the HTML report
//! and its SVG charts, and the comparison of runs (`compare`), all built from level summaries.

pub mod compare;
pub mod console;
pub mod html;
pub mod live;
pub mod svg;
