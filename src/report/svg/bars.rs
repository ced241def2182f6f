//! The stacked share chart (the server's queue versus compute time per level): one bar per
//! category, a dashed reference line at a limit whose words sit in the legend row.

use std::fmt::Write as _;

use super::{
    BOTTOM, HEIGHT, LEFT, RIGHT, STACK_COLORS, TOP, WIDTH, coord, empty_chart, esc, grid_line,
    legend_swatches, open_svg, ref_key, ref_rule,
};

/// A stacked 100 % bar chart: one bar per category, `stacks` from the bottom up (values are
/// fractions 0..1 of each bar), a dashed reference line at `limit` (a fraction).
pub fn stacked_share_chart(
    id: &str,
    title: &str,
    x_label: &str,
    categories: &[String],
    stacks: &[(String, Vec<Option<f64>>)],
    limit: Option<(f64, String)>,
) -> String {
    let mut out = String::with_capacity(4096);
    open_svg(&mut out, id, title);
    let any = stacks.iter().any(|(_, v)| v.iter().any(Option::is_some));
    if categories.is_empty() || !any {
        empty_chart(
            &mut out,
            "no server-side data: give --server-metrics-url or make the statistics API reachable",
        );
        return out;
    }
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let sy = |f: f64| TOP + ph - f.clamp(0.0, 1.0) * ph;
    share_axes(&mut out, categories, x_label);
    let slot = pw / categories.len() as f64;
    let bar = (slot * 0.6).min(56.0);
    let names: Vec<String> = stacks.iter().map(|(n, _)| n.clone()).collect();
    let legend_end = legend_swatches(&mut out, &names);
    for (i, c) in categories.iter().enumerate() {
        let x = LEFT + slot * (i as f64 + 0.5) - bar / 2.0;
        let mut base = 0.0;
        for (k, (name, values)) in stacks.iter().enumerate() {
            let Some(v) = values.get(i).copied().flatten() else {
                continue;
            };
            let v = v.clamp(0.0, 1.0 - base);
            let _ = write!(
                out,
                r#"<rect class="bar" data-series="{}" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {} {:.1}%</title></rect>"#,
                esc(name),
                coord(x),
                coord(sy(base + v)),
                coord(bar),
                coord(v * ph),
                STACK_COLORS[k % STACK_COLORS.len()],
                esc(c),
                esc(name),
                v * 100.0
            );
            base += v;
        }
    }
    if let Some((f, label)) = limit {
        // The line crosses the bars; its words go in the legend row, where no bar can be.
        ref_rule(&mut out, sy(f));
        ref_key(&mut out, legend_end, &label);
    }
    out.push_str("</svg>");
    out
}

/// The share axis (0–100 % in quarters), the category labels and the axis titles.
fn share_axes(out: &mut String, categories: &[String], x_label: &str) {
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let sy = |f: f64| TOP + ph - f.clamp(0.0, 1.0) * ph;
    out.push_str(r#"<g class="axis">"#);
    for i in 0..=4 {
        let f = f64::from(i) * 0.25;
        grid_line(out, sy(f), &format!("{}%", (f * 100.0) as u32));
    }
    let slot = pw / categories.len() as f64;
    for (i, c) in categories.iter().enumerate() {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            coord(LEFT + slot * (i as f64 + 0.5)),
            coord(TOP + ph + 16.0),
            esc(c)
        );
    }
    let _ = write!(
        out,
        r#"<line class="frame" x1="{l}" y1="{b}" x2="{r}" y2="{b}"/><text class="at" x="{}" y="{}" text-anchor="middle">{}</text><text class="at" x="14" y="{m}" text-anchor="middle" transform="rotate(-90 14 {m})">share of server time</text></g>"#,
        coord(LEFT + pw / 2.0),
        coord(HEIGHT - 6.0),
        esc(x_label),
        l = coord(LEFT),
        r = coord(WIDTH - RIGHT),
        b = coord(TOP + ph),
        m = coord(TOP + ph / 2.0)
    );
}

#[cfg(test)]
mod tests {
    /// Issue 15: the "50 %" label sat on the bars at the right. The line crosses the plot with no
    /// text; its words are a key in the legend row (baseline y 40, above the plot's top at 52).
    #[test]
    fn limit_words_stay_off_the_bars() {
        let svg = super::stacked_share_chart(
            "q",
            "Queue",
            "concurrency",
            &["16".into(), "32".into()],
            &[
                ("queue".into(), vec![Some(0.47), Some(0.70)]),
                ("compute".into(), vec![Some(0.53), Some(0.30)]),
            ],
            Some((0.5, "50%: tune scheduling above".into())),
        );
        assert!(
            svg.contains(
                r#"<g class="ref"><line x1="68.0" y1="158.0" x2="622.0" y2="158.0"/></g>"#
            ),
            "{svg}"
        );
        let key = svg.split(r#"<g class="ref"><line x1=""#).nth(2).unwrap();
        assert!(
            key.contains(r#" y1="36" "#)
                && key.contains(r#" y="40">50%: tune scheduling above</text>"#),
            "{key}"
        );
        assert_eq!(svg.matches("50%: tune scheduling above").count(), 1);
    }
}
