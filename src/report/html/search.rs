//! A search's section of the page (`search.json` beside the levels): the answer with its
//! confidence, the requests spent against the equivalent ladder, the method, and a table of
//! every probe in the order made.

use crate::analysis::text;
use std::fmt::Write as _;

use crate::artifact::search::SearchDoc;
use crate::report::svg::esc;

/// The section, inside the run's decision box and after it.
pub(super) fn section(out: &mut String, d: &SearchDoc) {
    out.push_str("<div class=\"decision\">\n");
    let _ = writeln!(out, "<p><strong>Search: {}</strong></p>", esc(&d.statement));
    let _ = writeln!(
        out,
        "<p>{} requests spent (warm-up included): {:.0}% of the {} a ladder of {} at {} requests per level sends.</p>",
        d.requests_spent,
        d.ladder.share_spent * 100.0,
        d.ladder.requests,
        text::count(d.ladder.loads.len() as u64, "level"),
        d.ladder.requests_per_level
    );
    let _ = writeln!(
        out,
        "<p>Method: {} (each interval at {:.2} % or more per look).</p>",
        esc(&d.method),
        d.look_confidence * 100.0
    );
    out.push_str("</div>\n");
    let _ = write!(
        out,
        "<div class=\"tablewrap\"><table class=\"search\"><thead><tr><th>Probe</th><th>{}</th><th>Requests</th><th>Verdict</th><th>Proof</th><th>Stopped</th>",
        esc(&d.over.replace('_', " "))
    );
    for o in &d.objectives {
        let _ = write!(out, "<th>{}</th>", esc(o));
    }
    out.push_str("</tr></thead><tbody>\n");
    for p in &d.probes {
        let class = match p.verdict.word() {
            "meets" => " class=\"pass\"",
            "fails" | "saturated" => " class=\"fail\"",
            _ => "",
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td{class}>{}</td><td>{}</td><td title=\"{}\">{}</td>",
            p.index,
            text::load_text(p.load),
            p.measured,
            p.verdict.word(),
            <&str>::from(p.proof),
            esc(&p.why),
            <&str>::from(p.stopped)
        );
        for o in &d.objectives {
            let cell = p
                .objectives
                .iter()
                .find(|x| &x.objective == o)
                .map_or("–".to_string(), |o| o.shown(false));
            let _ = write!(out, "<td>{}</td>", esc(&cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

#[cfg(test)]
mod tests {
    #[test]
    fn section_exact() {
        let mut out = String::new();
        super::section(&mut out, &crate::artifact::search::example());
        assert_eq!(
            out,
            "<div class=\"decision\">\n\
<p><strong>Search: concurrency 8 meets time_to_first_token.p75&lt;=25ms; concurrency 9 does not (fails): the highest concurrency meeting them is 8, at 95 % confidence</strong></p>\n\
<p>65 requests spent (warm-up included): 16% of the 400 a ladder of 2 levels at 200 requests per level sends.</p>\n\
<p>Method: m (each interval at 99.75 % or more per look).</p>\n\
</div>\n\
<div class=\"tablewrap\"><table class=\"search\"><thead><tr><th>Probe</th><th>concurrency</th><th>Requests</th><th>Verdict</th><th>Proof</th><th>Stopped</th><th>time_to_first_token.p75&lt;=25ms</th></tr></thead><tbody>\n\
<tr><td>1</td><td>9</td><td>20</td><td class=\"fail\">fails</td><td>proven</td><td title=\"settled\">settled</td><td>95.39 [81.36, open]</td></tr>\n\
<tr><td>2</td><td>8</td><td>25</td><td class=\"pass\">meets</td><td>proven</td><td title=\"settled\">settled</td><td>23.24 [14.81, 23.85]</td></tr>\n\
</tbody></table></div>\n"
        );
    }
}
