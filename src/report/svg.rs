//! Inline SVG charts for the HTML report, drawn with maud templates (text and attribute values
//! escaped by default): no plotting crate, no script, no external resource. Every function is pure (data in, markup out) so its output is tested.
//!
//! Each chart is an `<svg class="chart" data-chart="ID">` with a `viewBox` (it scales with the
//! page and prints crisply), a title, axes with ticks, a legend, and one `<g class="pt">` per data
//! point holding its marker and a `<title>` (the browser shows it on hover; no JavaScript). Series
//! differ in colour *and* in dash pattern and marker shape, so they stay apart when printed in
//! grey.

use maud::{Markup, html};

mod axis;
mod bars;

use axis::Frame;
pub use axis::{log_titled, spans_decades};
pub use bars::stacked_share_chart;

/// Width of every chart's coordinate system.
pub const WIDTH: f64 = 640.0;
/// Height of every chart's coordinate system.
pub const HEIGHT: f64 = 320.0;
const LEFT: f64 = 68.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 52.0;
const BOTTOM: f64 = 56.0;

/// Stacked-bar colours: the first stack (queue) in the warning colour, the second (compute) light.
const STACK_COLORS: [&str; 3] = ["#d1495b", "#9cc3e6", "#e08e0b"];

/// Series colours (colour-blind-friendly order; a dash pattern and marker go with each).
const COLORS: [&str; 8] = [
    "#0b6bcb", "#d1495b", "#2a9d3f", "#e08e0b", "#7b4fc9", "#6b4f3a", "#c2459a", "#138a8a",
];
const DASHES: [&str; 4] = ["", "7 4", "2 3", "9 3 2 3"];

/// A number with as many decimals as its size needs (tick labels, coordinates).
pub fn num(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        let t = format!("{v:.3}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if s == "-0" { "0".into() } else { s }
}

fn coord(v: f64) -> String {
    format!("{v:.1}")
}

/// A path's `d` through pixel points: a move to the first, a line to each next.
fn path_d(points: impl IntoIterator<Item = (f64, f64)>) -> String {
    let mut d = String::new();
    for (i, (x, y)) in points.into_iter().enumerate() {
        d.push_str(if i == 0 { "M" } else { "L" });
        d.push_str(&coord(x));
        d.push(' ');
        d.push_str(&coord(y));
    }
    d
}

/// One data point.
#[derive(Debug, Clone, PartialEq)]
pub struct Pt {
    /// X value (data units).
    pub x: f64,
    /// Y value (data units).
    pub y: f64,
    /// Hover text.
    pub tip: String,
    /// Text drawn next to the point (empty: none).
    pub label: String,
    /// The lowest and highest value behind the point (its repetitions'), drawn as an error bar.
    pub range: Option<(f64, f64)>,
}

impl Pt {
    /// A point with a hover text and no label.
    pub fn new(x: f64, y: f64, tip: impl Into<String>) -> Pt {
        Pt {
            x,
            y,
            tip: tip.into(),
            label: String::new(),
            range: None,
        }
    }
}

/// One named line of points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in drawing order.
    pub points: Vec<Pt>,
}

/// An annotated point (the knee).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// X value.
    pub x: f64,
    /// Y value.
    pub y: f64,
    /// Annotation.
    pub text: String,
}

/// How the x axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XScale {
    /// Proportional, from 0.
    Linear,
    /// Logarithmic (base 2), ticks at the data values: concurrency ladders 1, 2, 4, ... 32.
    Log2,
    /// Logarithmic (base 10), 1-2-5 or decade ticks: latencies spanning decades (proportional
    /// when they do not, or when a value is not positive).
    Log10,
    /// One slot per index 0..n, ticks from `x_ticks` (runs of a timeline).
    Index,
}

/// A line or scatter chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Identifier (`data-chart`), for tests and anchors.
    pub id: String,
    /// Title above the plot.
    pub title: String,
    /// X axis title.
    pub x_label: String,
    /// Y axis title.
    pub y_label: String,
    /// X mapping.
    pub x_scale: XScale,
    /// Tick labels for [`XScale::Index`] (one per index).
    pub x_ticks: Vec<String>,
    /// The data.
    pub series: Vec<Series>,
    /// Draw lines between a series' points.
    pub lines: bool,
    /// Annotated points.
    pub marks: Vec<Mark>,
    /// Horizontal reference lines `(y, label)`.
    pub hlines: Vec<(f64, String)>,
    /// Text before the legend entries (`concurrency:` when series are named by load).
    pub legend_title: String,
}

impl Chart {
    /// A line chart of `series` with no tick labels, marks, reference lines or legend title.
    pub fn lines(
        id: &str,
        title: String,
        x_label: &str,
        y_label: &str,
        x_scale: XScale,
        series: Vec<Series>,
    ) -> Chart {
        Chart {
            id: id.into(),
            title,
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_scale,
            x_ticks: vec![],
            series,
            lines: true,
            marks: vec![],
            hlines: vec![],
            legend_title: String::new(),
        }
    }
}

fn marker(shape: usize, cx: f64, cy: f64, color: &str) -> Markup {
    let poly = |pts: &[(f64, f64)]| {
        let d = path_d(pts.iter().map(|(x, y)| (cx + x, cy + y)));
        html! { path d={ (d) "Z" } fill=(color) {} }
    };
    match shape % 4 {
        0 => html! { circle cx=(coord(cx)) cy=(coord(cy)) r="3.6" fill=(color) {} },
        1 => html! {
            rect x=(coord(cx - 3.5)) y=(coord(cy - 3.5)) width="7" height="7" fill=(color) {}
        },
        2 => poly(&[(0.0, -4.5), (4.2, 3.2), (-4.2, 3.2)]),
        _ => poly(&[(0.0, -4.8), (4.8, 0.0), (0.0, 4.8), (-4.8, 0.0)]),
    }
}

/// A chart's `<svg>` with its title and `body`.
fn chart_svg(id: &str, title: &str, body: Markup) -> Markup {
    html! {
        svg.chart data-chart=(id) viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img"
            aria-label=(title) {
            title { (title) }
            text.ct x=(coord(LEFT)) y="20" { (title) }
            (body)
        }
    }
}

/// The stroke-dasharray of a series' dash pattern (none for a solid line).
fn dash(i: usize) -> Option<&'static str> {
    Some(DASHES[i % DASHES.len()]).filter(|d| !d.is_empty())
}

/// A horizontal line across the plot at pixel height `py`.
fn across(class: Option<&str>, py: f64) -> Markup {
    let y = coord(py);
    html! { line class=[class] x1=(coord(LEFT)) y1=(y) x2=(coord(WIDTH - RIGHT)) y2=(y) {} }
}

/// An end-anchored text at pixel `(x, y)`.
fn end_text(x: f64, y: f64, label: &str) -> Markup {
    html! { text x=(coord(x)) y=(coord(y)) text-anchor="end" { (label) } }
}

/// A horizontal grid line across the plot at pixel height `py`, its tick label left of the axis.
fn grid_line(py: f64, label: &str) -> Markup {
    html! { (across(Some("grid"), py)) (end_text(LEFT - 6.0, py + 4.0, label)) }
}

/// A labelled horizontal reference line across the plot at pixel height `py`.
fn ref_line(py: f64, label: &str) -> Markup {
    html! { g.ref { (across(None, py)) (end_text(WIDTH - RIGHT - 4.0, py - 4.0, label)) } }
}

/// The width a legend text takes: legend entries are laid out by an estimate of their text width
/// (6.2 units per char at the 11-unit font size).
fn text_width(s: &str) -> f64 {
    s.chars().count() as f64 * 6.2
}

fn legend(title: &str, names: &[(String, usize)]) -> Markup {
    let start = if title.is_empty() {
        LEFT
    } else {
        LEFT + 10.0 + text_width(title)
    };
    let xs = names.iter().scan(start, |x, (name, _)| {
        let at = *x;
        *x += 40.0 + text_width(name);
        Some(at)
    });
    html! {
        @if !title.is_empty() {
            text.lt x=(coord(LEFT)) y="40" { (title) }
        }
        @for ((name, i), x) in names.iter().zip(xs) {
            @let color = COLORS[i % COLORS.len()];
            g.legend {
                line x1=(coord(x)) y1="36" x2=(coord(x + 22.0)) y2="36" stroke=(color)
                    stroke-width="2" stroke-dasharray=[dash(*i)] {}
                (marker(*i, x + 11.0, 36.0, color))
                text x=(coord(x + 27.0)) y="40" { (name) }
            }
        }
    }
}

/// Colour swatches and names in the legend row, and where the row ends.
fn legend_swatches(names: &[String]) -> (Markup, f64) {
    let mut x = LEFT;
    let mut xs = Vec::with_capacity(names.len());
    for name in names {
        xs.push(x);
        x += 30.0 + text_width(name);
    }
    let row = html! {
        @for (i, (name, x)) in names.iter().zip(xs).enumerate() {
            g.legend {
                rect x=(coord(x)) y="31" width="12" height="10"
                    fill=(STACK_COLORS[i % STACK_COLORS.len()]) {}
                text x=(coord(x + 17.0)) y="40" { (name) }
            }
        }
    };
    (row, x)
}

/// A dashed reference line across the plot at pixel height `py`, its words elsewhere.
fn ref_rule(py: f64) -> Markup {
    html! { g.ref { (across(None, py)) } }
}

/// A reference line's key in the legend row at `x`: a dashed stroke and its words.
fn ref_key(x: f64, label: &str) -> Markup {
    html! {
        g.ref {
            line x1=(coord(x)) y1="36" x2=(coord(x + 22.0)) y2="36" {}
            text x=(coord(x + 27.0)) y="40" { (label) }
        }
    }
}

fn empty_chart(msg: &str) -> Markup {
    html! {
        text.empty x=(coord(WIDTH / 2.0)) y=(coord(HEIGHT / 2.0)) text-anchor="middle" { (msg) }
    }
}

/// Renders a line/scatter chart. The y axis turns logarithmic (base 10, "log scale" in its title)
/// when the positive values span more than [`axis::LOG_SPAN`]×.
pub fn line_chart(c: &Chart) -> Markup {
    let pts: Vec<&Pt> = c
        .series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    if pts.is_empty() {
        return chart_svg(&c.id, &c.title, empty_chart("no data"));
    }
    let ys: Vec<f64> = pts
        .iter()
        .flat_map(|p| {
            let (lo, hi) = p.range.unwrap_or((p.y, p.y));
            [p.y, lo, hi]
        })
        .filter(|v| v.is_finite())
        .chain(c.hlines.iter().map(|h| h.0))
        .chain(c.marks.iter().map(|m| m.y))
        .collect();
    let xs: Vec<f64> = pts.iter().map(|p| p.x).collect();
    let frame = Frame {
        x: axis::x_axis(c, &xs),
        y: axis::y_axis(&ys),
    };
    let names: Vec<(String, usize)> = c
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), i))
        .collect();
    let body = html! {
        (frame.draw(c))
        @for (v, label) in &c.hlines {
            (ref_line(frame.py(*v), label))
        }
        @if names.len() > 1 || c.lines {
            (legend(&c.legend_title, &names))
        }
        @for (i, s) in c.series.iter().enumerate() {
            (series(c, &frame, i, s))
        }
        @for m in &c.marks {
            (mark(&frame, m))
        }
    };
    chart_svg(&c.id, &c.title, body)
}

/// One series: its line, its points with their hover text, and their labels.
fn series(c: &Chart, frame: &Frame, i: usize, s: &Series) -> Markup {
    let color = COLORS[i % COLORS.len()];
    let valid: Vec<&Pt> = s
        .points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    let line = path_d(valid.iter().map(|p| (frame.px(p.x), frame.py(p.y))));
    html! {
        g.series data-series=(s.name) {
            @if c.lines {
                (band(frame, &valid, color))
            }
            @if c.lines && valid.len() > 1 {
                path.line d=(line) stroke=(color) stroke-dasharray=[dash(i)] {}
            }
            @for p in valid {
                (point(c, frame, i, p))
            }
        }
    }
}

/// One point of series `i`: its error bar, its marker with the hover text, and its label.
fn point(c: &Chart, frame: &Frame, i: usize, p: &Pt) -> Markup {
    let color = COLORS[i % COLORS.len()];
    let (px, py) = (frame.px(p.x), frame.py(p.y));
    let range = p.range.filter(|(lo, hi)| lo.is_finite() && hi.is_finite());
    // A marked point's label goes outside the mark's ring, so the ring does not hide it.
    let marked = c.marks.iter().any(|m| m.x == p.x && m.y == p.y);
    let off = if marked { MARK_RADIUS + 2.0 } else { 6.0 };
    html! {
        @if let Some((lo, hi)) = range {
            (error_bar(px, (frame.py(lo), frame.py(hi)), color))
        }
        g.pt data-x=(num(p.x)) data-y=(num(p.y)) {
            (marker(i, px, py, color))
            title { (p.tip) }
        }
        @if !p.label.is_empty() {
            text.pl x=(coord(px + off)) y=(coord(py - off)) { (p.label) }
        }
    }
}

/// A shaded band from each point's lowest to highest repetition, when every point of a line
/// has repetitions: how far run-to-run noise reaches along the line.
fn band(frame: &Frame, pts: &[&Pt], color: &str) -> Markup {
    let ranges: Option<Vec<(f64, f64, f64)>> = pts
        .iter()
        .map(|p| p.range.map(|(lo, hi)| (p.x, lo, hi)))
        .collect();
    let Some(r) = ranges.filter(|r| r.len() > 1) else {
        return html! {};
    };
    let upper = r.iter().map(|(x, _, hi)| (frame.px(*x), frame.py(*hi)));
    let lower = r
        .iter()
        .rev()
        .map(|(x, lo, _)| (frame.px(*x), frame.py(*lo)));
    html! { path.band d={ (path_d(upper.chain(lower))) "Z" } fill=(color) {} }
}

/// A vertical bar from `y_lo` to `y_hi` (pixels) with short caps: the range of the repetitions
/// behind a point.
fn error_bar(x: f64, (y_lo, y_hi): (f64, f64), color: &str) -> Markup {
    let (a, b, cap) = (coord(x - 4.0), coord(x + 4.0), coord(x));
    let (lo, hi) = (coord(y_lo), coord(y_hi));
    let d = format!("M{cap} {lo}L{cap} {hi}M{a} {lo}L{b} {lo}M{a} {hi}L{b} {hi}");
    html! { path.errbar d=(d) stroke=(color) {} }
}

/// Radius of the ring around an annotated point.
const MARK_RADIUS: f64 = 9.0;

/// An annotated point: a ring and its text, on the side with more room.
fn mark(frame: &Frame, m: &Mark) -> Markup {
    let (px, py) = (frame.px(m.x), frame.py(m.y));
    let pw = WIDTH - LEFT - RIGHT;
    let left = px > LEFT + pw * 0.6;
    html! {
        g.mark {
            circle cx=(coord(px)) cy=(coord(py)) r=(MARK_RADIUS) {}
            text x=(coord(if left { px - 13.0 } else { px + 13.0 }))
                y=(coord((py + 22.0).min(HEIGHT - BOTTOM - 4.0)))
                text-anchor=(if left { "end" } else { "start" }) {
                (m.text)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::axis::nice_ticks;
    use super::*;

    #[test]
    fn nice_ticks_table() {
        let cases = [
            (0.0, 5, (1.0, 0.2)),
            (1e-320, 5, (1.0, 0.2)),
            (f64::NAN, 5, (1.0, 0.2)),
            (7.3, 5, (8.0, 2.0)),
            (100.0, 5, (100.0, 20.0)),
            (2617.0, 5, (3000.0, 1000.0)),
            (0.42, 5, (0.5, 0.1)),
            (1003.2, 5, (1250.0, 250.0)),
        ];
        for (max, n, want) in cases {
            let (hi, step) = nice_ticks(max, n);
            assert!(
                (hi - want.0).abs() < 1e-9 && (step - want.1).abs() < 1e-9,
                "{max}: {hi} {step}"
            );
        }
    }

    #[test]
    fn escaping_and_numbers() {
        let escaped = chart_svg("e", r#"<a href="x">&'"#, html! {}).into_string();
        assert!(
            escaped.contains(r#"aria-label="&lt;a href=&quot;x&quot;&gt;&amp;'"><title>&lt;a href=&quot;x&quot;&gt;&amp;'</title>"#),
            "{escaped}"
        );
        assert_eq!(num(2617.25), "2617");
        assert_eq!(num(45.25), "45.2");
        assert_eq!(num(4.256), "4.26");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(0.125), "0.125");
        assert_eq!(num(8.0), "8");
    }

    #[test]
    fn tiny_chart_exact() {
        let series = vec![Series {
            name: "s".into(),
            points: vec![Pt::new(1.0, 1.0, "a"), Pt::new(2.0, 2.0, "b<")],
        }];
        let c = Chart {
            lines: false,
            ..Chart::lines("t", "T".into(), "x", "y", XScale::Linear, series)
        };
        let svg = line_chart(&c).into_string();
        assert!(svg.starts_with(r#"<svg class="chart" data-chart="t" viewBox="0 0 640 320" role="img" aria-label="T"><title>T</title>"#));
        assert_eq!(svg.matches(r#"<g class="pt""#).count(), 2);
        assert!(
            svg.contains(r##"<g class="pt" data-x="2" data-y="2"><circle cx="622.0" cy="52.0" r="3.6" fill="#0b6bcb"></circle><title>b&lt;</title></g>"##),
            "{svg}"
        );
        assert!(svg.ends_with("</g></svg>"));
        // No data: a message, not an empty frame.
        let empty = line_chart(&Chart {
            series: vec![],
            ..c
        })
        .into_string();
        assert!(empty.contains(">no data</text></svg>"));
    }

    #[test]
    fn stacked_bars_count_and_limit() {
        let svg = stacked_share_chart(
            "q",
            "Queue",
            "concurrency",
            &["1".into(), "8".into(), "32".into()],
            &[
                ("queue".into(), vec![Some(0.1), None, Some(0.72)]),
                ("compute".into(), vec![Some(0.9), None, Some(0.28)]),
            ],
            Some((0.5, "50% queue".into())),
        )
        .into_string();
        assert_eq!(svg.matches(r#"<rect class="bar""#).count(), 4);
        assert!(svg.contains("<title>32: queue 72.0%</title>"));
        assert!(svg.contains(">50% queue</text>"));
    }
}
