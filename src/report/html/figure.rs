//! How a chart sits on the page, for the run's charts ([`super::charts`]) and the engine's
//! ([`super::engine`]) alike: its figure and caption, the load axis' name and tick labels.

use maud::{Markup, html};

use crate::artifact::read::LoadedLevel;
use crate::report::svg;
use crate::stats::LevelSummary;

/// A level's load as its axis tick and point label show it.
pub(super) fn load_label(l: &LevelSummary) -> String {
    svg::num(l.stimulus.value())
}

/// The load axis' name: `concurrency`, `request rate (req/s)`.
pub(super) fn kind_title(levels: &[LoadedLevel]) -> String {
    match levels.first().map(|l| l.summary.stimulus.kind()) {
        Some("concurrency") => "concurrency".into(),
        Some("request_rate") => "request rate (req/s)".into(),
        Some("fixed_schedule") => "fixed schedule (speed-up)".into(),
        Some(other) => other.replace('_', " "),
        None => "load".into(),
    }
}

/// A chart with its caption, added to the figures of its grid.
pub(super) fn figure(out: &mut Vec<Markup>, chart: Markup, caption: &str) {
    out.push(html! { figure { (chart) figcaption { (caption) } } });
}
