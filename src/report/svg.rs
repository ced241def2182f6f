//! Inline SVG charts for the HTML report, written by hand: no plotting crate, no script, no
//! external resource. Every function is pure (data in, markup out) so its output is tested.
//!
//! Each chart is an `<svg class="chart" data-chart="ID">` with a `viewBox` (it scales with the
//! page and prints crisply), a title, axes with ticks, a legend, and one `<g class="pt">` per data
//! point holding its marker and a `<title>` (the browser shows it on hover; no JavaScript). Series
//! differ in colour *and* in dash pattern and marker shape, so they stay apart when printed in
//! grey.

use std::fmt::Write as _;

mod axis;
mod bars;

use axis::Frame;
pub use axis::{LOG_SPAN, log_titled, nice_ticks, spans_decades};
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

/// Escapes text for HTML/SVG content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

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

/// SVG path data through `pts` (pixels): a move to the first, a line to each next one.
fn path_d(pts: impl IntoIterator<Item = (f64, f64)>) -> String {
    let step = |(i, (x, y)): (usize, (f64, f64))| {
        let op = if i == 0 { "M" } else { "L" };
        format!("{op}{} {}", coord(x), coord(y))
    };
    pts.into_iter().enumerate().map(step).collect()
}

fn marker(shape: usize, cx: f64, cy: f64, color: &str) -> String {
    let poly = |pts: &[(f64, f64)]| {
        let d = path_d(pts.iter().map(|(x, y)| (cx + x, cy + y)));
        format!(r#"<path d="{d}Z" fill="{color}"/>"#)
    };
    match shape % 4 {
        0 => format!(
            r#"<circle cx="{}" cy="{}" r="3.6" fill="{color}"/>"#,
            coord(cx),
            coord(cy)
        ),
        1 => format!(
            r#"<rect x="{}" y="{}" width="7" height="7" fill="{color}"/>"#,
            coord(cx - 3.5),
            coord(cy - 3.5)
        ),
        2 => poly(&[(0.0, -4.5), (4.2, 3.2), (-4.2, 3.2)]),
        _ => poly(&[(0.0, -4.8), (4.8, 0.0), (0.0, 4.8), (-4.8, 0.0)]),
    }
}

fn open_svg(out: &mut String, id: &str, title: &str) {
    let _ = write!(
        out,
        r#"<svg class="chart" data-chart="{}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{}"><title>{}</title><text class="ct" x="{}" y="20">{}</text>"#,
        esc(id),
        esc(title),
        esc(title),
        coord(LEFT),
        esc(title)
    );
}

/// The stroke-dasharray attribute of a series' dash pattern (none for a solid line).
fn dash_attr(dash: &str) -> String {
    if dash.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash}""#)
    }
}

/// A horizontal grid line across the plot at pixel height `py`, its tick label left of the axis.
fn grid_line(out: &mut String, py: f64, label: &str) {
    let label_at = (LEFT - 6.0, py + 4.0);
    line_across(out, (r#"<line class="grid""#, ""), py, label_at, label);
}

/// A labelled horizontal reference line across the plot at pixel height `py`.
fn ref_line(out: &mut String, py: f64, label: &str) {
    let label_at = (WIDTH - RIGHT - 4.0, py - 4.0);
    line_across(
        out,
        (r#"<g class="ref"><line"#, "</g>"),
        py,
        label_at,
        &esc(label),
    );
}

/// A horizontal line across the plot at pixel height `py` with an end-anchored `label`
/// (written as given) at `label_at`; `wrap` opens the `<line` tag and closes after the label.
fn line_across(out: &mut String, wrap: (&str, &str), py: f64, label_at: (f64, f64), label: &str) {
    let _ = write!(
        out,
        r#"{} x1="{}" y1="{y}" x2="{}" y2="{y}"/><text x="{}" y="{}" text-anchor="end">{}</text>{}"#,
        wrap.0,
        coord(LEFT),
        coord(WIDTH - RIGHT),
        coord(label_at.0),
        coord(label_at.1),
        label,
        wrap.1,
        y = coord(py)
    );
}

fn legend(out: &mut String, title: &str, names: &[(String, usize)]) {
    let mut x = LEFT;
    if !title.is_empty() {
        let _ = write!(
            out,
            r#"<text class="lt" x="{}" y="40">{}</text>"#,
            coord(x),
            esc(title)
        );
        x += 10.0 + title.chars().count() as f64 * 6.2;
    }
    for (name, i) in names {
        let color = COLORS[i % COLORS.len()];
        let dash = DASHES[i % DASHES.len()];
        let _ = write!(
            out,
            r#"<g class="legend"><line x1="{}" y1="36" x2="{}" y2="36" stroke="{color}" stroke-width="2"{}/>{}<text x="{}" y="40">{}</text></g>"#,
            coord(x),
            coord(x + 22.0),
            dash_attr(dash),
            marker(*i, x + 11.0, 36.0, color),
            coord(x + 27.0),
            esc(name)
        );
        // Legend entries are laid out by an estimate of their text width (6.2 units per char
        // at the 11-unit font size).
        x += 40.0 + name.chars().count() as f64 * 6.2;
    }
}

/// Colour swatches and names in the legend row; returns where the row ends.
fn legend_swatches(out: &mut String, names: &[String]) -> f64 {
    let mut x = LEFT;
    for (i, name) in names.iter().enumerate() {
        let _ = write!(
            out,
            r#"<g class="legend"><rect x="{}" y="31" width="12" height="10" fill="{}"/><text x="{}" y="40">{}</text></g>"#,
            coord(x),
            STACK_COLORS[i % STACK_COLORS.len()],
            coord(x + 17.0),
            esc(name)
        );
        x += 30.0 + name.chars().count() as f64 * 6.2;
    }
    x
}

/// A dashed reference line across the plot at pixel height `py`, its words elsewhere.
fn ref_rule(out: &mut String, py: f64) {
    let _ = write!(
        out,
        r#"<g class="ref"><line x1="{}" y1="{y}" x2="{}" y2="{y}"/></g>"#,
        coord(LEFT),
        coord(WIDTH - RIGHT),
        y = coord(py)
    );
}

/// A reference line's key in the legend row at `x`: a dashed stroke and its words.
fn ref_key(out: &mut String, x: f64, label: &str) {
    let _ = write!(
        out,
        r#"<g class="ref"><line x1="{}" y1="36" x2="{}" y2="36"/><text x="{}" y="40">{}</text></g>"#,
        coord(x),
        coord(x + 22.0),
        coord(x + 27.0),
        esc(label)
    );
}

fn empty_chart(out: &mut String, msg: &str) {
    let _ = write!(
        out,
        r#"<text class="empty" x="{}" y="{}" text-anchor="middle">{}</text></svg>"#,
        coord(WIDTH / 2.0),
        coord(HEIGHT / 2.0),
        esc(msg)
    );
}

/// Renders a line/scatter chart. The y axis turns logarithmic (base 10, "log scale" in its title)
/// when the positive values span more than [`axis::LOG_SPAN`]×.
pub fn line_chart(c: &Chart) -> String {
    let mut out = String::with_capacity(4096);
    open_svg(&mut out, &c.id, &c.title);
    let pts: Vec<&Pt> = c
        .series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    if pts.is_empty() {
        empty_chart(&mut out, "no data");
        return out;
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
    frame.draw(&mut out, c);
    for (v, label) in &c.hlines {
        ref_line(&mut out, frame.py(*v), label);
    }
    let names: Vec<(String, usize)> = c
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), i))
        .collect();
    if names.len() > 1 || c.lines {
        legend(&mut out, &c.legend_title, &names);
    }
    for (i, s) in c.series.iter().enumerate() {
        series(&mut out, c, &frame, i, s);
    }
    for m in &c.marks {
        mark(&mut out, &frame, m);
    }
    out.push_str("</svg>");
    out
}

/// One series: its line, its points with their hover text, and their labels.
fn series(out: &mut String, c: &Chart, frame: &Frame, i: usize, s: &Series) {
    let color = COLORS[i % COLORS.len()];
    let dash = DASHES[i % DASHES.len()];
    let _ = write!(out, r#"<g class="series" data-series="{}">"#, esc(&s.name));
    let valid: Vec<&Pt> = s
        .points
        .iter()
        .filter(|p| p.x.is_finite() && p.y.is_finite())
        .collect();
    if c.lines {
        band(out, frame, &valid, color);
    }
    if c.lines && valid.len() > 1 {
        let d = path_d(valid.iter().map(|p| (frame.px(p.x), frame.py(p.y))));
        let _ = write!(
            out,
            r#"<path class="line" d="{d}" stroke="{color}"{}/>"#,
            dash_attr(dash)
        );
    }
    for p in valid {
        let (px, py) = (frame.px(p.x), frame.py(p.y));
        if let Some((lo, hi)) = p.range.filter(|(lo, hi)| lo.is_finite() && hi.is_finite()) {
            error_bar(out, px, (frame.py(lo), frame.py(hi)), color);
        }
        let _ = write!(
            out,
            r#"<g class="pt" data-x="{}" data-y="{}">{}<title>{}</title></g>"#,
            num(p.x),
            num(p.y),
            marker(i, px, py, color),
            esc(&p.tip)
        );
        if !p.label.is_empty() {
            // A marked point's label goes outside the mark's ring, so the ring does not hide it.
            let marked = c.marks.iter().any(|m| m.x == p.x && m.y == p.y);
            let off = if marked { MARK_RADIUS + 2.0 } else { 6.0 };
            let _ = write!(
                out,
                r#"<text class="pl" x="{}" y="{}">{}</text>"#,
                coord(px + off),
                coord(py - off),
                esc(&p.label)
            );
        }
    }
    out.push_str("</g>");
}

/// A shaded band from each point's lowest to highest repetition, when every point of a line
/// has repetitions: how far run-to-run noise reaches along the line.
fn band(out: &mut String, frame: &Frame, pts: &[&Pt], color: &str) {
    let ranges: Option<Vec<(f64, f64, f64)>> = pts
        .iter()
        .map(|p| p.range.map(|(lo, hi)| (p.x, lo, hi)))
        .collect();
    let Some(r) = ranges.filter(|r| r.len() > 1) else {
        return;
    };
    let upper = r.iter().map(|(x, _, hi)| (frame.px(*x), frame.py(*hi)));
    let lower = r
        .iter()
        .rev()
        .map(|(x, lo, _)| (frame.px(*x), frame.py(*lo)));
    let d = path_d(upper.chain(lower));
    let _ = write!(out, r#"<path class="band" d="{d}Z" fill="{color}"/>"#);
}

/// A vertical bar from `y_lo` to `y_hi` (pixels) with short caps: the range of the repetitions
/// behind a point.
fn error_bar(out: &mut String, x: f64, (y_lo, y_hi): (f64, f64), color: &str) {
    let (a, b, cap) = (coord(x - 4.0), coord(x + 4.0), coord(x));
    let (lo, hi) = (coord(y_lo), coord(y_hi));
    let _ = write!(
        out,
        r#"<path class="errbar" d="M{cap} {lo}L{cap} {hi}M{a} {lo}L{b} {lo}M{a} {hi}L{b} {hi}" stroke="{color}"/>"#
    );
}

/// Radius of the ring around an annotated point.
const MARK_RADIUS: f64 = 9.0;

/// An annotated point: a ring and its text, on the side with more room.
fn mark(out: &mut String, frame: &Frame, m: &Mark) {
    let (px, py) = (frame.px(m.x), frame.py(m.y));
    let pw = WIDTH - LEFT - RIGHT;
    let left = px > LEFT + pw * 0.6;
    let _ = write!(
        out,
        r#"<g class="mark"><circle cx="{}" cy="{}" r="{MARK_RADIUS}"/><text x="{}" y="{}" text-anchor="{}">{}</text></g>"#,
        coord(px),
        coord(py),
        coord(if left { px - 13.0 } else { px + 13.0 }),
        coord((py + 22.0).min(HEIGHT - BOTTOM - 4.0)),
        if left { "end" } else { "start" },
        esc(&m.text)
    );
}

#[cfg(test)]
mod tests {
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
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
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
        let c = Chart {
            id: "t".into(),
            title: "T".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_scale: XScale::Linear,
            x_ticks: vec![],
            series: vec![Series {
                name: "s".into(),
                points: vec![Pt::new(1.0, 1.0, "a"), Pt::new(2.0, 2.0, "b<")],
            }],
            lines: false,
            marks: vec![],
            hlines: vec![],
            legend_title: String::new(),
        };
        let svg = line_chart(&c);
        assert!(svg.starts_with(r#"<svg class="chart" data-chart="t" viewBox="0 0 640 320" role="img" aria-label="T"><title>T</title>"#));
        assert_eq!(svg.matches(r#"<g class="pt""#).count(), 2);
        assert!(
            svg.contains(r##"<g class="pt" data-x="2" data-y="2"><circle cx="622.0" cy="52.0" r="3.6" fill="#0b6bcb"/><title>b&lt;</title></g>"##),
            "{svg}"
        );
        assert!(svg.ends_with("</g></svg>"));
        // No data: a message, not an empty frame.
        let empty = line_chart(&Chart {
            series: vec![],
            ..c
        });
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
        );
        assert_eq!(svg.matches(r#"<rect class="bar""#).count(), 4);
        assert!(svg.contains("<title>32: queue 72.0%</title>"));
        assert!(svg.contains(">50% queue</text>"));
    }
}
