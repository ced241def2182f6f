//! Where values fall on a line chart's axes, and where its ticks go: proportional axes from 0
//! with 1-2-5 steps, logarithmic ones (base 2 at the data values for load ladders, base 10 with
//! 1-2-5 or decade ticks for values spanning more than [`LOG_SPAN`]×), and index slots.

use maud::{Markup, html};

use super::{Chart, HEIGHT, LEFT, RIGHT, TOP, WIDTH, XScale, coord, grid_line, num};

/// Positive values spanning more than this factor get a logarithmic value axis: on a
/// proportional one, the levels before a knee (28–180 ms under a 2,600 ms tail) are a flat line.
pub const LOG_SPAN: f64 = 10.0;

/// Axis maximum and tick step with 1-2-5 steps, about `n` ticks from 0 to at least `max`.
pub fn nice_ticks(max: f64, n: usize) -> (f64, f64) {
    // Values too small to step through (or not numbers) get the unit axis, so the tick loops
    // always end.
    let max = if max.is_finite() && max > 1e-9 {
        max.min(1e300)
    } else {
        1.0
    };
    let raw = max / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// Whether `values` call for a logarithmic axis: all positive and spanning more than
/// [`LOG_SPAN`]×.
pub fn spans_decades(values: impl IntoIterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::MAX, 0.0f64);
    for v in values.into_iter().filter(|v| v.is_finite()) {
        if v <= 0.0 {
            return false;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    hi > 0.0 && hi / lo > LOG_SPAN
}

/// An axis title saying its scale is logarithmic: `latency (ms)` → `latency (ms, log scale)`.
pub fn log_titled(title: &str) -> String {
    match title.strip_suffix(')') {
        Some(open) if open.contains('(') => format!("{open}, log scale)"),
        _ => format!("{title} (log scale)"),
    }
}

/// How an axis maps a value before placing it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Map {
    Identity,
    Log2,
    Log10,
}

/// One axis: the range it shows (in mapped units) and its ticks.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Axis {
    map: Map,
    lo: f64,
    hi: f64,
    /// Ticks: position in mapped units, and label.
    ticks: Vec<(f64, String)>,
}

impl Axis {
    /// Where `v` falls: 0 at the start of the axis, 1 at its end.
    pub fn frac(&self, v: f64) -> f64 {
        let m = match self.map {
            Map::Identity => v,
            Map::Log2 => v.log2(),
            Map::Log10 => v.log10(),
        };
        self.tick_frac(m)
    }

    fn tick_frac(&self, mapped: f64) -> f64 {
        (mapped - self.lo) / (self.hi - self.lo).max(1e-12)
    }

    /// Whether the axis is logarithmic in base 10 (the value axes that span decades).
    pub fn is_log10(&self) -> bool {
        self.map == Map::Log10
    }
}

/// A base-10 axis over `[min, max]` (both positive): from the 1-2-5 value at or below `min` to
/// the one at or above `max`, ticked at 1-2-5 values over up to three decades, at decades beyond.
fn log10_axis(min: f64, max: f64) -> Axis {
    let (lo_e, hi_e) = (min.log10().floor() as i32, max.log10().ceil() as i32);
    let steps: &[f64] = if hi_e - lo_e <= 3 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let grid: Vec<f64> = (lo_e..=hi_e)
        .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
        .collect();
    let lo = grid
        .iter()
        .copied()
        .filter(|g| *g <= min)
        .fold(grid[0], f64::max);
    let hi = grid.iter().copied().find(|g| *g >= max).unwrap_or(max);
    Axis {
        map: Map::Log10,
        lo: lo.log10(),
        hi: hi.log10(),
        ticks: grid
            .into_iter()
            .filter(|g| *g >= lo && *g <= hi)
            .map(|g| (g.log10(), num(g)))
            .collect(),
    }
}

/// The value (y) axis: from 0 with 1-2-5 steps, or logarithmic when the values span decades.
pub(super) fn y_axis(ys: &[f64]) -> Axis {
    if spans_decades(ys.iter().copied()) {
        let (min, max) = ys
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &y| (a.min(y), b.max(y)));
        return log10_axis(min, max);
    }
    let (ymax, ystep) = nice_ticks(ys.iter().copied().fold(0.0, f64::max), 5);
    let mut ticks = Vec::new();
    // Accumulated (not multiplied) steps: the tick values every earlier report drew.
    let mut y = 0.0;
    while y <= ymax + ystep * 1e-9 {
        ticks.push((y, num(y)));
        y += ystep;
    }
    Axis {
        map: Map::Identity,
        lo: 0.0,
        hi: ymax,
        ticks,
    }
}

/// The x axis for `xs` (finite) under the chart's scale.
pub(super) fn x_axis(c: &Chart, xs: &[f64]) -> Axis {
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    match c.x_scale {
        XScale::Index => {
            let n = c.x_ticks.len().max(xmax as usize + 1);
            let ticks = c
                .x_ticks
                .iter()
                .enumerate()
                .map(|(i, t)| (i as f64, t.clone()))
                .collect();
            Axis {
                map: Map::Identity,
                lo: -0.5,
                hi: n as f64 - 0.5,
                ticks,
            }
        }
        XScale::Log2 if xmin > 0.0 => {
            let mut vals: Vec<f64> = xs.to_vec();
            vals.sort_by(f64::total_cmp);
            vals.dedup();
            let pad = if xmax > xmin { 0.35 } else { 1.0 };
            Axis {
                map: Map::Log2,
                lo: xmin.log2() - pad,
                hi: xmax.log2() + pad,
                ticks: vals.iter().map(|v| (v.log2(), num(*v))).collect(),
            }
        }
        XScale::Log10 if xmin > 0.0 && xmax > xmin => log10_axis(xmin, xmax),
        _ => {
            let (hi, step) = nice_ticks(xmax, 6);
            let ticks = (0..)
                .map(|i| i as f64 * step)
                .take_while(|v| *v <= hi + step * 1e-9)
                .map(|v| (v, num(v)))
                .collect();
            Axis {
                map: Map::Identity,
                lo: 0.0,
                hi,
                ticks,
            }
        }
    }
}

/// The plot area of a line chart and its two axes.
pub(super) struct Frame {
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
}

impl Frame {
    const PW: f64 = WIDTH - LEFT - RIGHT;
    const PH: f64 = HEIGHT - TOP - super::BOTTOM;

    /// Pixel x of a value.
    pub fn px(&self, x: f64) -> f64 {
        LEFT + self.x.frac(x) * Self::PW
    }

    /// Pixel y of a value (points a little above the top stay in view).
    pub fn py(&self, y: f64) -> f64 {
        TOP + Self::PH - self.y.frac(y).clamp(0.0, 1.05) * Self::PH
    }

    /// Grid lines, ticks, the frame and the axis titles.
    pub fn draw(&self, c: &Chart) -> Markup {
        let y_label = if self.y.is_log10() {
            log_titled(&c.y_label)
        } else {
            c.y_label.clone()
        };
        let (l, r, t, b) = (
            coord(LEFT),
            coord(WIDTH - RIGHT),
            coord(TOP),
            coord(TOP + Self::PH),
        );
        html! {
            g.axis data-y-scale=[self.y.is_log10().then_some("log")] {
                @for (t, label) in &self.y.ticks {
                    @let py = TOP + Self::PH - self.y.tick_frac(*t).clamp(0.0, 1.05) * Self::PH;
                    (grid_line(py, label))
                }
                (self.x_ticks())
                line.frame x1=(l) y1=(b) x2=(r) y2=(b) {}
                line.frame x1=(l) y1=(t) x2=(l) y2=(b) {}
                (axis_titles(&c.x_label, &y_label))
            }
        }
    }

    fn x_ticks(&self) -> Markup {
        let ticks = &self.x.ticks;
        let rotate = ticks.len() > 8 || ticks.iter().any(|(_, t)| t.chars().count() > 6);
        let base = TOP + Self::PH;
        html! {
            @for (v, t) in ticks {
                @let px = coord(LEFT + self.x.tick_frac(*v) * Self::PW);
                line.tick x1=(px) y1=(coord(base)) x2=(px) y2=(coord(base + 4.0)) {}
                @if rotate {
                    @let y = coord(base + 14.0);
                    text x=(px) y=(y) text-anchor="end"
                        transform=(format!("rotate(-25 {px} {y})")) { (t) }
                } @else {
                    text x=(px) y=(coord(base + 16.0)) text-anchor="middle" { (t) }
                }
            }
        }
    }
}

/// The axis titles under the plot and, turned, left of it.
pub(super) fn axis_titles(x_label: &str, y_label: &str) -> Markup {
    let m = coord(TOP + Frame::PH / 2.0);
    html! {
        text.at x=(coord(LEFT + Frame::PW / 2.0)) y=(coord(HEIGHT - 6.0)) text-anchor="middle" {
            (x_label)
        }
        text.at x="14" y=(m) text-anchor="middle" transform=(format!("rotate(-90 14 {m})")) {
            (y_label)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_only_for_positive_values_spanning_decades() {
        assert!(spans_decades([28.0, 180.0, 2634.0]));
        assert!(!spans_decades([28.0, 180.0, 270.0]));
        assert!(!spans_decades([0.0, 180.0, 2634.0]));
        assert!(!spans_decades([]));
    }

    #[test]
    fn log_titles() {
        assert_eq!(log_titled("latency (ms)"), "latency (ms, log scale)");
        assert_eq!(log_titled("tokens/s"), "tokens/s (log scale)");
    }

    #[test]
    fn log_ticks_1_2_5_then_decades() {
        let labels = |a: &Axis| a.ticks.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>();
        let a = log10_axis(22.4, 2634.0);
        assert_eq!(
            labels(&a),
            ["20", "50", "100", "200", "500", "1000", "2000", "5000"]
        );
        assert!(a.frac(22.4) > 0.0 && a.frac(2634.0) < 1.0);
        assert!((a.frac(20.0)).abs() < 1e-12 && (a.frac(5000.0) - 1.0).abs() < 1e-12);
        // Five decades: decade ticks only.
        let wide = log10_axis(0.5, 20_000.0);
        assert_eq!(
            labels(&wide),
            ["0.1", "1", "10", "100", "1000", "10000", "100000"]
        );
    }
}
