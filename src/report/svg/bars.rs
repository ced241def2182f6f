//! The stacked share chart (the server's queue versus compute time per level): one bar per
//! category, a dashed reference line at a limit whose words sit in the legend row.

use maud::{Markup, html};

use super::{
    BOTTOM, HEIGHT, LEFT, RIGHT, STACK_COLORS, TOP, WIDTH, axis::axis_titles, chart_svg, coord,
    empty_chart, grid_line, legend_swatches, ref_key, ref_rule,
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
) -> Markup {
    let any = stacks.iter().any(|(_, v)| v.iter().any(Option::is_some));
    if categories.is_empty() || !any {
        let msg =
            "no server-side data: give --server-metrics-url or make the statistics API reachable";
        return chart_svg(id, title, empty_chart(msg));
    }
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let sy = |f: f64| TOP + ph - f.clamp(0.0, 1.0) * ph;
    let slot = pw / categories.len() as f64;
    let bar = (slot * 0.6).min(56.0);
    let names: Vec<String> = stacks.iter().map(|(n, _)| n.clone()).collect();
    let (legend, legend_end) = legend_swatches(&names);
    let body = html! {
        (share_axes(categories, x_label))
        (legend)
        @for (i, c) in categories.iter().enumerate() {
            @let x = LEFT + slot * (i as f64 + 0.5) - bar / 2.0;
            @for (k, name, base, v) in segments(stacks, i) {
                rect.bar data-series=(name) x=(coord(x)) y=(coord(sy(base + v)))
                    width=(coord(bar)) height=(coord(v * ph))
                    fill=(STACK_COLORS[k % STACK_COLORS.len()]) {
                    title { (c) ": " (name) " " (format!("{:.1}", v * 100.0)) "%" }
                }
            }
        }
        @if let Some((f, label)) = &limit {
            // The line crosses the bars; its words go in the legend row, where no bar can be.
            (ref_rule(sy(*f)))
            (ref_key(legend_end, label))
        }
    };
    chart_svg(id, title, body)
}

/// Category `i`'s stacks that have a value, from the bottom up: (stack, name, where it starts,
/// its share, cut to what is left of the bar).
fn segments(stacks: &[(String, Vec<Option<f64>>)], i: usize) -> Vec<(usize, &str, f64, f64)> {
    let mut base = 0.0;
    let mut out = Vec::new();
    for (k, (name, values)) in stacks.iter().enumerate() {
        let Some(v) = values.get(i).copied().flatten() else {
            continue;
        };
        let v = v.clamp(0.0, 1.0 - base);
        out.push((k, name.as_str(), base, v));
        base += v;
    }
    out
}

/// The share axis (0–100 % in quarters), the category labels and the axis titles.
fn share_axes(categories: &[String], x_label: &str) -> Markup {
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let sy = |f: f64| TOP + ph - f.clamp(0.0, 1.0) * ph;
    let slot = pw / categories.len() as f64;
    let b = coord(TOP + ph);
    html! {
        g.axis {
            @for i in 0..=4 {
                @let f = f64::from(i) * 0.25;
                (grid_line(sy(f), &format!("{}%", (f * 100.0) as u32)))
            }
            @for (i, c) in categories.iter().enumerate() {
                text x=(coord(LEFT + slot * (i as f64 + 0.5))) y=(coord(TOP + ph + 16.0))
                    text-anchor="middle" { (c) }
            }
            line.frame x1=(coord(LEFT)) y1=(b) x2=(coord(WIDTH - RIGHT)) y2=(b) {}
            (axis_titles(x_label, "share of server time"))
        }
    }
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
        )
        .into_string();
        assert!(
            svg.contains(
                r#"<g class="ref"><line x1="68.0" y1="158.0" x2="622.0" y2="158.0"></line></g>"#
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
