//! A search's section of the page (`search.json` beside the levels): the answer with its
//! confidence, the requests spent against the equivalent ladder, the method, and a table of
//! every probe in the order made.

use maud::{Markup, html};

use crate::artifact::search::SearchDoc;

/// The section, inside the run's decision box and after it.
pub(super) fn section(d: &SearchDoc) -> Markup {
    html! {
        div.decision {
            p { strong { "Search: " (d.statement) } }
            p {
                (d.requests_spent) " requests spent (warm-up included): "
                (format!("{:.0}", d.ladder.share_spent * 100.0)) "% of the " (d.ladder.requests)
                " a ladder of "
                (crate::analysis::text::count(d.ladder.loads.len() as u64, "level"))
                " at " (d.ladder.requests_per_level) " requests per level sends."
            }
            p {
                "Method: " (d.method) " (each interval at "
                (format!("{:.2}", d.look_confidence * 100.0)) " % or more per look)."
            }
        }
        div.tablewrap {
            table.search {
                thead {
                    tr {
                        th { "Probe" }
                        th { (d.over.replace('_', " ")) }
                        th { "Requests" }
                        th { "Verdict" }
                        th { "Proof" }
                        th { "Stopped" }
                        @for o in &d.objectives {
                            th { (o) }
                        }
                    }
                }
                tbody {
                    @for p in &d.probes {
                        tr {
                            td { (p.index) }
                            td { (crate::analysis::text::load_text(p.load)) }
                            td { (p.measured) }
                            td class=[verdict_class(p.verdict.word())] { (p.verdict.word()) }
                            td { (<&str>::from(p.proof)) }
                            td title=(p.why) { (<&str>::from(p.stopped)) }
                            @for o in &d.objectives {
                                td {
                                    @match p.objectives.iter().find(|x| &x.objective == o) {
                                        Some(o) => (o.shown(false)),
                                        None => "–",
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A probe's verdict cell's class: met, failed, or neither.
fn verdict_class(word: &str) -> Option<&'static str> {
    match word {
        "meets" => Some("pass"),
        "fails" | "saturated" => Some("fail"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn section_exact() {
        let out = super::section(&crate::artifact::search::example()).into_string();
        assert_eq!(
            out,
            "<div class=\"decision\">\
<p><strong>Search: concurrency 8 meets time_to_first_token.p75&lt;=25ms; concurrency 9 does not (fails): the highest concurrency meeting them is 8, at 95 % confidence</strong></p>\
<p>65 requests spent (warm-up included): 16% of the 400 a ladder of 2 levels at 200 requests per level sends.</p>\
<p>Method: m (each interval at 99.75 % or more per look).</p>\
</div>\
<div class=\"tablewrap\"><table class=\"search\"><thead><tr><th>Probe</th><th>concurrency</th><th>Requests</th><th>Verdict</th><th>Proof</th><th>Stopped</th><th>time_to_first_token.p75&lt;=25ms</th></tr></thead><tbody>\
<tr><td>1</td><td>9</td><td>20</td><td class=\"fail\">fails</td><td>proven</td><td title=\"settled\">settled</td><td>95.39 [81.36, open]</td></tr>\
<tr><td>2</td><td>8</td><td>25</td><td class=\"pass\">meets</td><td>proven</td><td title=\"settled\">settled</td><td>23.24 [14.81, 23.85]</td></tr>\
</tbody></table></div>"
        );
    }
}
