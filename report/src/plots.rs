//! SVG plots of a [`Report`]: hand-written, standalone SVG 1.1 documents, no dependencies.
//!
//! - [`forest`] (`forest.svg`): every comparison's throughput ratio with its 90 % and 95 %
//!   intervals against the shaded margin band `[1 − δ, 1 + δ]`, and its verdict.
//! - [`throughput_vs_concurrency`] (`throughput.svg`): closed-loop throughput per mode
//!   against concurrency, one panel per operation and object size (and backend).
//! - [`cpu_per_request`] (`cpu.svg`): client CPU per request per mode, grouped by cell.
//! - [`storage`] (`storage.svg`): manifest bytes per mode against the S3 user-metadata
//!   limit, with the difference to the baseline.
//! - [`cpu_identity`] (`identity.svg`): per comparison with the CPU accounting identity, the
//!   observed throughput ratio and the ratios client CPU per request implies (with equal
//!   cores, and with the cores used), each with its 90 % interval.
//! - [`open_loop`] (`knee.svg`): open-loop mean response time against offered rate per
//!   mode, with the doubling line, the measured knee and the M/M/c prediction.
//! - `latency_vs_size` (`latency.svg`, the study's Fig. 2): at one worker, the median latency
//!   and the key establishment's share of the request against object size per arm.
//! - [`drift`] (`drift.svg`): per cell, each arm's throughput bin by bin over the measured
//!   window relative to its run's mean, with the ±20 % drift bound.
//!
//! Each mode keeps one colour in every plot of a report (the colour-blind-safe Okabe–Ito
//! palette, assigned in sorted label order). The output depends only on the report (the
//! same report gives the same bytes), every text is escaped, and non-finite values are
//! skipped rather than drawn.

use std::collections::{BTreeMap, BTreeSet};

use stats::Verdict;
use stats::identity::Identity;
use stats::paired::RatioInterval;
use stats::queueing::KneePrediction;
use stats::storage::S3_USER_METADATA_LIMIT;

use analysis::endpoints::Secondary;
use analysis::longrun::DriftRow;
use analysis::{ArmSummary, Entry, KneeRow, Report, StorageRow};
use campaign::spec::Operation;
use campaign::units::Size;

mod bottleneck;
pub mod inventory;
mod latency;

/// One plot: a file name (e.g. "forest.svg") and the SVG text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plot {
    /// File name, e.g. `forest.svg`.
    pub file: &'static str,
    /// Title: the SVG's title element and its visible heading.
    pub title: String,
    /// The standalone SVG 1.1 document.
    pub svg: String,
}

/// Every plot the report supports (skipping those without data).
pub fn all(report: &Report) -> Vec<Plot> {
    [
        forest(report),
        throughput_vs_concurrency(report),
        cpu_per_request(report),
        storage(report),
        cpu_identity(report),
        open_loop(report),
        drift(report),
        latency::latency_vs_size(report),
        bottleneck::bottlenecks(report),
    ]
    .into_iter()
    .flatten()
    .collect()
}

// ---------------------------------------------------------------------------------------
// Style
// ---------------------------------------------------------------------------------------

/// Okabe–Ito, ordered so that the first modes get the most distinct colours (yellow, hard
/// to see on white, last).
const OKABE_ITO: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
];
const INK: &str = "#222222";
const MUTED: &str = "#555555";
const GRID: &str = "#e2e2e2";
const AXIS: &str = "#444444";
const SHADE: &str = "#f4f4f4";
/// Body font size, px.
const FONT: f64 = 12.0;
/// Baseline of the visible title and of the subtitle.
const TITLE_Y: f64 = 26.0;
const SUBTITLE_Y: f64 = 46.0;

/// A fixed colour per mode: every mode label of the report, sorted, takes the palette in
/// order (repeating after eight modes).
struct Palette(BTreeMap<String, &'static str>);

impl Palette {
    fn of(report: &Report) -> Self {
        let mut modes: BTreeSet<&str> = BTreeSet::new();
        modes.insert(&report.config.baseline);
        modes.extend(report.arms.iter().map(|a| a.mode.as_str()));
        modes.extend(report.storage.iter().map(|s| s.mode.as_str()));
        modes.extend(report.knees.iter().map(|k| k.mode.as_str()));
        modes.extend(report.drift.iter().map(|d| d.mode.as_str()));
        modes.extend(report.kem_times.iter().map(|k| k.arm.as_str()));
        modes.extend(
            report
                .secondary
                .iter()
                .flat_map(|s| [s.mode.as_str(), s.baseline.as_str()]),
        );
        for e in &report.comparisons {
            modes.insert(&e.mode);
            modes.insert(&e.baseline);
        }
        Self(
            modes
                .into_iter()
                .zip(OKABE_ITO.iter().cycle())
                .map(|(m, c)| (m.to_owned(), *c))
                .collect(),
        )
    }

    fn get(&self, mode: &str) -> &'static str {
        self.0.get(mode).copied().unwrap_or(MUTED)
    }
}

fn verdict_colour(v: Verdict) -> &'static str {
    match v {
        Verdict::Equivalent => "#009E73",
        Verdict::NotEquivalent => "#D55E00",
        Verdict::Inconclusive => "#777777",
    }
}

// ---------------------------------------------------------------------------------------
// Text and numbers
// ---------------------------------------------------------------------------------------

/// Escapes text for XML content and attribute values; control characters (not allowed in
/// XML 1.0) become `?`.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[allow(clippy::cast_precision_loss, reason = "small counts")]
fn count(n: usize) -> f64 {
    n as f64
}

#[allow(
    clippy::cast_precision_loss,
    reason = "byte counts of manifests are small"
)]
fn bytes_f64(n: u64) -> f64 {
    n as f64
}

/// Estimated width of `s` in a sans-serif font of `size` px (generous, so that layouts
/// leave room rather than overlap).
fn text_w(s: &str, size: f64) -> f64 {
    count(s.chars().count()) * size * 0.6
}

/// Drops trailing zeros after a decimal point (and `-0` becomes `0`).
fn trim_zeros(s: String) -> String {
    if !s.contains('.') {
        return s;
    }
    let t = s.trim_end_matches('0').trim_end_matches('.');
    if t == "-0" {
        "0".to_owned()
    } else {
        t.to_owned()
    }
}

/// Decimal places from a (possibly fractional or negative) count, clamped to 0..=6.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "clamped to 0..=6 first"
)]
fn decimals(d: f64) -> usize {
    if d.is_finite() {
        d.clamp(0.0, 6.0) as usize
    } else {
        0
    }
}

/// The unit a magnitude is written in: `k`, `M`, `G` or none.
fn unit_of(magnitude: f64) -> (f64, &'static str) {
    if magnitude >= 999.5e6 {
        (1e9, "G")
    } else if magnitude >= 999.5e3 {
        (1e6, "M")
    } else if magnitude >= 999.5 {
        (1e3, "k")
    } else {
        (1.0, "")
    }
}

/// A number in three significant digits with a `k`/`M`/`G` suffix: `0.952`, `12.5`,
/// `1.23k`; `n/a` if not finite.
fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_owned();
    }
    if v == 0.0 {
        return "0".to_owned();
    }
    let (unit, suffix) = unit_of(v.abs());
    let x = v / unit;
    let d = decimals(2.0 - x.abs().log10().floor());
    format!("{}{suffix}", trim_zeros(format!("{x:.d$}")))
}

/// A tick label: as many decimals as the step needs, in the unit of the value.
fn fmt_tick(v: f64, step: f64) -> String {
    let (unit, suffix) = unit_of(v.abs());
    let d = decimals((-(step / unit).log10()).ceil());
    let s = trim_zeros(format!("{:.d$}", v / unit));
    if s == "0" { s } else { s + suffix }
}

/// A ratio with three decimals (`0.952`), `n/a` if not finite.
fn fmt_ratio(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "n/a".to_owned()
    }
}

/// A whole number with thousands separators: `2,048`.
fn fmt_int(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A signed whole number with an explicit sign: `+1,088`, `−32`, `±0`.
fn fmt_signed(n: i64) -> String {
    let sign = match n.signum() {
        1 => "+",
        -1 => "\u{2212}",
        _ => "\u{b1}",
    };
    format!("{sign}{}", fmt_int(n.unsigned_abs()))
}

/// A coordinate: two decimals at most, `0` for anything non-finite (never reached by
/// data, which is filtered before).
/// An SVG `points` list: `x,y x,y …`.
fn svg_points(points: &[(f64, f64)]) -> String {
    points
        .iter()
        .map(|(x, y)| format!("{},{}", px(*x), px(*y)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn px(v: f64) -> String {
    if v.is_finite() {
        trim_zeros(format!("{v:.2}"))
    } else {
        "0".to_owned()
    }
}

fn finite2(v: [f64; 2]) -> bool {
    v[0].is_finite() && v[1].is_finite()
}

// ---------------------------------------------------------------------------------------
// Scales and ticks
// ---------------------------------------------------------------------------------------

/// Maps a data interval onto a pixel interval, linearly or on a log₂ scale.
#[derive(Clone, Copy, Debug)]
struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
    log2: bool,
}

impl Scale {
    fn linear(d0: f64, d1: f64, r0: f64, r1: f64) -> Self {
        Self {
            d0,
            d1,
            r0,
            r1,
            log2: false,
        }
    }

    /// A log₂ scale; the domain must be positive.
    fn log2(d0: f64, d1: f64, r0: f64, r1: f64) -> Self {
        Self {
            log2: true,
            ..Self::linear(d0, d1, r0, r1)
        }
    }

    fn at(self, v: f64) -> f64 {
        let f = |x: f64| if self.log2 { x.log2() } else { x };
        let (a, b) = (f(self.d0), f(self.d1));
        let span = b - a;
        if !span.is_finite() || span.abs() < f64::EPSILON {
            return f64::midpoint(self.r0, self.r1);
        }
        self.r0 + (f(v) - a) / span * (self.r1 - self.r0)
    }
}

/// A "nice" step (1, 2 or 5 times a power of ten) at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let n = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * mag
}

/// Nice ticks covering `[lo, hi]` with at most about `target` intervals: the extended
/// domain and the ticks as (value, label).
fn nice_ticks(lo: f64, hi: f64, target: f64) -> (f64, f64, Vec<(f64, String)>) {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        let d = if lo.abs() > 0.0 { lo.abs() * 0.1 } else { 1.0 };
        (lo - d, hi + d)
    };
    let step = nice_step((hi - lo) / target);
    let (first, last) = ((lo / step).floor(), (hi / step).ceil());
    let mut ticks = Vec::new();
    let mut k = first;
    while k <= last + 1e-9 && ticks.len() < 100 {
        let v = k * step;
        ticks.push((v, fmt_tick(v, step)));
        k += 1.0;
    }
    (first * step, last * step, ticks)
}

// ---------------------------------------------------------------------------------------
// The SVG builder
// ---------------------------------------------------------------------------------------

/// Appends SVG elements to a document; attribute strings passed in are trusted (they are
/// literals and colours of this module), text is always escaped.
struct Svg {
    out: String,
}

impl Svg {
    /// A document of the given size with a white background, a title element and the
    /// visible title.
    fn new(width: f64, height: f64, title: &str) -> Self {
        let (w, h) = (px(width.ceil()), px(height.ceil()));
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{w}\" \
             height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" \
             font-size=\"{}\" fill=\"{INK}\">\n",
            px(FONT)
        );
        out.push_str(&format!("<title>{}</title>\n", esc(title)));
        out.push_str(&format!(
            "<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n"
        ));
        let mut svg = Self { out };
        svg.text(
            width / 2.0,
            TITLE_Y,
            title,
            r#"font-size="16" font-weight="bold" text-anchor="middle""#,
        );
        svg
    }

    fn subtitle(&mut self, width: f64, s: &str) {
        self.text(
            width / 2.0,
            SUBTITLE_Y,
            s,
            &format!(r#"font-size="11" text-anchor="middle" fill="{MUTED}""#),
        );
    }

    fn text(&mut self, x: f64, y: f64, s: &str, attrs: &str) {
        self.out.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" {attrs}>{}</text>\n",
            px(x),
            px(y),
            esc(s)
        ));
    }

    /// One text line made of differently styled runs.
    fn spans(&mut self, x: f64, y: f64, runs: &[(&str, &str)]) {
        self.out
            .push_str(&format!("<text x=\"{}\" y=\"{}\">", px(x), px(y)));
        for (s, attrs) in runs {
            self.out
                .push_str(&format!("<tspan {attrs}>{}</tspan>", esc(s)));
        }
        self.out.push_str("</text>\n");
    }

    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, attrs: &str) {
        self.out.push_str(&format!(
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {attrs}/>\n",
            px(x1),
            px(y1),
            px(x2),
            px(y2)
        ));
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str) {
        self.out.push_str(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {attrs}/>\n",
            px(x),
            px(y),
            px(w.max(0.0)),
            px(h.max(0.0))
        ));
    }

    fn circle(&mut self, cx: f64, cy: f64, r: f64, attrs: &str) {
        self.out.push_str(&format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {attrs}/>\n",
            px(cx),
            px(cy),
            px(r)
        ));
    }

    fn polyline(&mut self, points: &[(f64, f64)], attrs: &str) {
        self.out.push_str(&format!(
            "<polyline points=\"{}\" fill=\"none\" {attrs}/>\n",
            svg_points(points)
        ));
    }

    fn polygon(&mut self, points: &[(f64, f64)], attrs: &str) {
        self.out.push_str(&format!(
            "<polygon points=\"{}\" {attrs}/>\n",
            svg_points(points)
        ));
    }

    /// Opens a group; `tip` becomes its tooltip (a title element).
    fn open(&mut self, attrs: &str, tip: &str) {
        let sep = if attrs.is_empty() { "" } else { " " };
        self.out
            .push_str(&format!("<g{sep}{attrs}><title>{}</title>\n", esc(tip)));
    }

    fn close(&mut self) {
        self.out.push_str("</g>\n");
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// The plotting area of a chart, in pixels (y grows downwards).
#[derive(Clone, Copy, Debug)]
struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

/// A bottom axis: grid lines (optional), axis line, ticks at pixel positions with their
/// labels (a label that would overlap the previous one is left out) and the axis title.
fn x_axis(svg: &mut Svg, f: Frame, ticks: &[(f64, String)], title: &str, grid: bool) {
    if grid {
        for (x, _) in ticks {
            svg.line(
                *x,
                f.y0,
                *x,
                f.y1,
                &format!(r#"stroke="{GRID}" stroke-width="1""#),
            );
        }
    }
    svg.line(
        f.x0,
        f.y1,
        f.x1,
        f.y1,
        &format!(r#"stroke="{AXIS}" stroke-width="1""#),
    );
    let mut last_right = f64::NEG_INFINITY;
    for (x, label) in ticks {
        svg.line(
            *x,
            f.y1,
            *x,
            f.y1 + 4.0,
            &format!(r#"stroke="{AXIS}" stroke-width="1""#),
        );
        let half = text_w(label, 11.0) / 2.0;
        if x - half > last_right + 4.0 {
            svg.text(
                *x,
                f.y1 + 17.0,
                label,
                r#"font-size="11" text-anchor="middle""#,
            );
            last_right = x + half;
        }
    }
    svg.text(
        f64::midpoint(f.x0, f.x1),
        f.y1 + 36.0,
        title,
        r#"text-anchor="middle""#,
    );
}

/// A left axis with horizontal grid lines, ticks at pixel positions and a rotated title.
fn y_axis(svg: &mut Svg, f: Frame, ticks: &[(f64, String)], title: &str) {
    for (y, label) in ticks {
        svg.line(
            f.x0,
            *y,
            f.x1,
            *y,
            &format!(r#"stroke="{GRID}" stroke-width="1""#),
        );
        svg.text(
            f.x0 - 6.0,
            y + 4.0,
            label,
            r#"font-size="11" text-anchor="end""#,
        );
    }
    svg.line(
        f.x0,
        f.y0,
        f.x0,
        f.y1,
        &format!(r#"stroke="{AXIS}" stroke-width="1""#),
    );
    let (x, y) = (f.x0 - 46.0, f64::midpoint(f.y0, f.y1));
    svg.text(
        x,
        y,
        title,
        &format!(
            r#"text-anchor="middle" transform="rotate(-90 {} {})""#,
            px(x),
            px(y)
        ),
    );
}

/// Where legend items go when wrapped into rows of at most `width`: offsets of each item
/// from the legend's origin, and the legend's height.
fn legend_layout(items: &[(String, &str)], width: f64) -> (Vec<(f64, f64)>, f64) {
    const ROW: f64 = 18.0;
    let (mut x, mut y) = (0.0, 0.0);
    let mut at = Vec::with_capacity(items.len());
    for (label, _) in items {
        let w = 18.0 + text_w(label, FONT) + 16.0;
        if x > 0.0 && x + w > width {
            x = 0.0;
            y += ROW;
        }
        at.push((x, y));
        x += w;
    }
    (at, if items.is_empty() { 0.0 } else { y + ROW })
}

/// Draws a legend of colour swatches at (x, y), y being the first row's text baseline;
/// returns its height.
fn legend(svg: &mut Svg, x: f64, y: f64, width: f64, items: &[(String, &str)]) -> f64 {
    let (at, height) = legend_layout(items, width);
    for ((label, colour), (dx, dy)) in items.iter().zip(at) {
        svg.rect(
            x + dx,
            y + dy - 10.0,
            12.0,
            12.0,
            &format!(r#"fill="{colour}""#),
        );
        svg.text(x + dx + 18.0, y + dy, label, "");
    }
    height
}

/// How an item is drawn, in a plot and in its legend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A colour swatch (legends only).
    Swatch,
    Circle,
    Square,
    Diamond,
    /// An outlined diamond: a prediction.
    HollowDiamond,
    /// A short dashed line: a reference level (legends only).
    Dash,
    /// A short solid line: a reference level (legends only).
    Rule,
}

/// Draws `shape` centred at (x, y) in `colour`; `class` (e.g. `class="knee"`, or empty)
/// goes on the element.
fn marker(svg: &mut Svg, shape: Shape, (x, y): (f64, f64), colour: &str, class: &str) {
    let filled = format!(r##"{class} fill="{colour}" stroke="#ffffff" stroke-width="1""##);
    let diamond = |r: f64| [(x, y - r), (x + r, y), (x, y + r), (x - r, y)];
    match shape {
        Shape::Swatch => svg.rect(
            x - 6.0,
            y - 6.0,
            12.0,
            12.0,
            &format!(r#"{class} fill="{colour}""#),
        ),
        Shape::Circle => svg.circle(x, y, 4.0, &filled),
        Shape::Square => svg.rect(x - 4.0, y - 4.0, 8.0, 8.0, &filled),
        Shape::Diamond => svg.polygon(&diamond(5.0), &filled),
        Shape::HollowDiamond => svg.polygon(
            &diamond(6.0),
            &format!(r#"{class} fill="none" stroke="{colour}" stroke-width="2""#),
        ),
        Shape::Dash => svg.line(
            x - 8.0,
            y,
            x + 8.0,
            y,
            &format!(r#"{class} stroke="{colour}" stroke-width="1.5" stroke-dasharray="4 3""#),
        ),
        Shape::Rule => svg.line(
            x - 8.0,
            y,
            x + 8.0,
            y,
            &format!(r#"{class} stroke="{colour}" stroke-width="1.5""#),
        ),
    }
}

/// A legend item: label, colour and shape.
type Item = (String, &'static str, Shape);

fn item_labels(items: &[Item]) -> Vec<(String, &str)> {
    items.iter().map(|(l, c, _)| (l.clone(), *c)).collect()
}

/// Draws a legend of markers at (x, y), y being the first row's text baseline; returns its
/// height.
fn marker_legend(svg: &mut Svg, x: f64, y: f64, width: f64, items: &[Item]) -> f64 {
    let (at, height) = legend_layout(&item_labels(items), width);
    for ((label, colour, shape), (dx, dy)) in items.iter().zip(at) {
        marker(svg, *shape, (x + dx + 6.0, y + dy - 4.0), colour, "");
        svg.text(x + dx + 18.0, y + dy, label, "");
    }
    height
}

// ---------------------------------------------------------------------------------------
// Forest plot
// ---------------------------------------------------------------------------------------

/// Comparisons with a finite ratio, grouped by cell in first-seen order, modes sorted
/// within a cell.
fn forest_groups(report: &Report) -> Vec<Vec<&Entry>> {
    let mut cells: Vec<&str> = Vec::new();
    for e in &report.comparisons {
        if !cells.contains(&e.cell.as_str()) {
            cells.push(&e.cell);
        }
    }
    cells
        .into_iter()
        .map(|cell| {
            let mut v: Vec<&Entry> = report
                .comparisons
                .iter()
                .filter(|e| e.cell == cell && e.ratio.is_finite())
                .collect();
            v.sort_by(|a, b| a.mode.cmp(&b.mode));
            v
        })
        .filter(|v| !v.is_empty())
        .collect()
}

/// A forest plot of every comparison (`forest.svg`): the throughput ratio (dot), its 90 %
/// (thick bar) and 95 % (thin bar) intervals, the shaded margin band and a line at 1, one
/// row per comparison grouped by cell; at the right the ratio with its 90 % interval and
/// the verdict (coloured) with the primary/control, deficit and advantage flags. `None`
/// without comparisons.
pub fn forest(report: &Report) -> Option<Plot> {
    const ROW: f64 = 22.0;
    const GAP: f64 = 8.0;
    const PLOT_W: f64 = 420.0;
    let groups = forest_groups(report);
    if groups.is_empty() {
        return None;
    }
    let margin = report.config.analysis.margin;
    let band = (margin.is_finite() && margin > 0.0 && margin < 1.0)
        .then_some((1.0 - margin, 1.0 + margin));

    let (mut lo, mut hi) = band.unwrap_or((1.0, 1.0));
    for e in groups.iter().flatten() {
        for v in [e.ratio, e.ci90[0], e.ci90[1], e.ci95[0], e.ci95[1]] {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let pad = (hi - lo) * 0.04;
    let (d0, d1, ticks) = nice_ticks(lo - pad, hi + pad, 6.0);

    let rows: Vec<Vec<ForestRow<'_>>> = groups
        .iter()
        .map(|g| g.iter().map(|e| ForestRow::of(e)).collect())
        .collect();

    let title = format!(
        "Throughput ratio vs the baseline ({})",
        report.config.baseline
    );
    let subtitle = match band {
        Some((b0, b1)) => format!(
            "dot: ratio \u{b7} thick bar: 90 % CI \u{b7} thin bar: 95 % CI \u{b7} \
             shaded: equivalence margin [{}, {}]",
            fmt_num(b0),
            fmt_num(b1)
        ),
        None => "dot: ratio \u{b7} thick bar: 90 % CI \u{b7} thin bar: 95 % CI".to_owned(),
    };
    let all_rows = || rows.iter().flatten();
    let label_w = all_rows()
        .map(|r| text_w(&r.label, FONT))
        .fold(text_w("comparison", 11.0), f64::max);
    let x0 = 16.0 + label_w + 14.0;
    let x1 = x0 + PLOT_W;
    let num_x = x1 + 16.0;
    let num_w = all_rows()
        .map(|r| text_w(&r.numbers, 11.0))
        .fold(text_w("ratio [90 % CI]", 11.0), f64::max);
    let verdict_x = num_x + num_w + 14.0;
    let verdict_w = all_rows()
        .map(|r| text_w(r.e.verdict.as_str(), FONT) * 1.1 + text_w(&r.flags, FONT))
        .fold(0.0, f64::max);
    let width = (verdict_x + verdict_w + 16.0)
        .max(text_w(&title, 16.0) + 40.0)
        .max(text_w(&subtitle, 11.0) + 40.0);

    let legend_y = 68.0;
    let header_y = 94.0;
    let y0 = 102.0;
    let mut centres = Vec::new();
    let mut spans = Vec::new();
    let mut y = y0 + 6.0;
    for g in &rows {
        let top = y;
        for _ in g {
            centres.push(y + ROW / 2.0);
            y += ROW;
        }
        spans.push((top, y));
        y += GAP;
    }
    let y1 = y - GAP + 6.0;
    let height = y1 + 50.0;

    let mut svg = Svg::new(width, height, &title);
    svg.subtitle(width, &subtitle);
    let verdicts = [
        Verdict::Equivalent,
        Verdict::NotEquivalent,
        Verdict::Inconclusive,
    ]
    .map(|v| (v.as_str().to_owned(), verdict_colour(v)));
    legend(&mut svg, 16.0, legend_y, width - 32.0, &verdicts);

    for (i, (top, bottom)) in spans.iter().enumerate() {
        if i % 2 == 0 {
            svg.rect(
                8.0,
                top - GAP / 2.0,
                width - 16.0,
                bottom - top + GAP,
                &format!(r#"fill="{SHADE}""#),
            );
        }
    }
    let sx = Scale::linear(d0, d1, x0, x1);
    let frame = Frame { x0, x1, y0, y1 };
    let tick_px: Vec<(f64, String)> = ticks.into_iter().map(|(v, l)| (sx.at(v), l)).collect();
    x_axis(
        &mut svg,
        frame,
        &tick_px,
        "throughput ratio (mode / baseline)",
        true,
    );
    if let Some((b0, b1)) = band {
        svg.rect(
            sx.at(b0),
            y0,
            sx.at(b1) - sx.at(b0),
            y1 - y0,
            r##"fill="#009E73" fill-opacity="0.14""##,
        );
        svg.text(
            sx.at(1.0),
            header_y,
            &format!("margin \u{b1}{} %", fmt_num(margin * 100.0)),
            &format!(r#"font-size="11" text-anchor="middle" fill="{MUTED}""#),
        );
    }
    svg.line(
        sx.at(1.0),
        y0,
        sx.at(1.0),
        y1,
        &format!(r#"stroke="{INK}" stroke-width="1" stroke-dasharray="4 3""#),
    );
    let head = format!(r#"font-size="11" font-weight="bold" fill="{MUTED}""#);
    svg.text(
        x0 - 14.0,
        header_y,
        "comparison",
        &format!(r#"{head} text-anchor="end""#),
    );
    svg.text(num_x, header_y, "ratio [90 % CI]", &head);
    svg.text(verdict_x, header_y, "verdict", &head);

    let columns = ForestColumns {
        sx,
        label_x: x0 - 14.0,
        num_x,
        verdict_x,
    };
    for (r, cy) in all_rows().zip(centres) {
        forest_row(&mut svg, r, cy, &columns);
    }

    Some(Plot {
        file: "forest.svg",
        title,
        svg: svg.finish(),
    })
}

/// One row of the forest plot: the comparison and its texts.
struct ForestRow<'a> {
    e: &'a Entry,
    label: String,
    numbers: String,
    flags: String,
}

impl<'a> ForestRow<'a> {
    fn of(e: &'a Entry) -> Self {
        // The plot labels keep the family and the deficit/advantage flags only.
        let flags: Vec<&str> = e
            .flags()
            .into_iter()
            .filter(|f| !matches!(*f, "saturated" | "underpowered"))
            .collect();
        let numbers = if finite2(e.ci90) {
            format!(
                "{} [{}, {}]",
                fmt_ratio(e.ratio),
                fmt_ratio(e.ci90[0]),
                fmt_ratio(e.ci90[1])
            )
        } else {
            fmt_ratio(e.ratio)
        };
        Self {
            e,
            label: format!("{} \u{b7} {} vs {}", e.cell, e.mode, e.baseline),
            numbers,
            flags: flags.join(" \u{b7} "),
        }
    }
}

/// Where the forest plot's columns are: the ratio scale, the right edge of the labels, the
/// numbers and the verdicts.
struct ForestColumns {
    sx: Scale,
    label_x: f64,
    num_x: f64,
    verdict_x: f64,
}

/// One comparison of the forest plot at height `cy`: label, 95 % and 90 % bars, the ratio,
/// its numbers and the verdict with its flags, in a group with a tooltip.
fn forest_row(svg: &mut Svg, r: &ForestRow<'_>, cy: f64, c: &ForestColumns) {
    let e = r.e;
    let colour = verdict_colour(e.verdict);
    let tip = format!(
        "{}: ratio {}, 90 % CI [{}, {}], 95 % CI [{}, {}], {} pairs, TOST p {} \
         (adjusted {}), {}",
        r.label,
        fmt_ratio(e.ratio),
        fmt_ratio(e.ci90[0]),
        fmt_ratio(e.ci90[1]),
        fmt_ratio(e.ci95[0]),
        fmt_ratio(e.ci95[1]),
        e.pairs,
        fmt_num(e.tost_p),
        fmt_num(e.tost_p_adjusted),
        e.verdict
    );
    svg.open(r#"class="comparison""#, &tip);
    svg.text(
        c.label_x,
        cy + 4.0,
        &r.label,
        r#"text-anchor="end" class="label""#,
    );
    if finite2(e.ci95) {
        let (a, b) = (c.sx.at(e.ci95[0]), c.sx.at(e.ci95[1]));
        let stroke = format!(r#"stroke="{colour}" stroke-width="1.5""#);
        svg.line(a, cy, b, cy, &stroke);
        svg.line(a, cy - 4.0, a, cy + 4.0, &stroke);
        svg.line(b, cy - 4.0, b, cy + 4.0, &stroke);
    }
    if finite2(e.ci90) {
        svg.line(
            c.sx.at(e.ci90[0]),
            cy,
            c.sx.at(e.ci90[1]),
            cy,
            &format!(r#"class="ci90" stroke="{colour}" stroke-width="6" stroke-opacity="0.55""#),
        );
    }
    svg.circle(
        c.sx.at(e.ratio),
        cy,
        4.5,
        &format!(r##"class="ratio" fill="{colour}" stroke="#ffffff" stroke-width="1.2""##),
    );
    svg.text(c.num_x, cy + 4.0, &r.numbers, r#"font-size="11""#);
    let flags = if r.flags.is_empty() {
        String::new()
    } else {
        format!("\u{b7} {}", r.flags)
    };
    svg.spans(
        c.verdict_x,
        cy + 4.0,
        &[
            (
                e.verdict.as_str(),
                &format!(r#"font-weight="bold" fill="{colour}""#),
            ),
            // Offset rather than a leading space, which renderers may collapse.
            (&flags, &format!(r#"dx="5" fill="{MUTED}""#)),
        ],
    );
    svg.close();
}

// ---------------------------------------------------------------------------------------
// Throughput vs concurrency
// ---------------------------------------------------------------------------------------

/// A panel: operation, object size and what else the cell id says (the backend).
type PanelKey = (Option<Operation>, Option<u64>, String);
/// Per mode, (concurrency, mean throughput) in increasing concurrency.
type Series<'a> = BTreeMap<&'a str, Vec<(u32, f64)>>;

/// The rest of a closed-loop cell id after `<op>-<size>-c<n>` (the backend when several
/// are compared), empty if the id has another form.
fn cell_variant(a: &ArmSummary) -> String {
    let (Some(op), Some(size), Some(c)) = (a.operation, a.object_size, a.concurrency) else {
        return String::new();
    };
    let prefix = format!("{}-{}-c{c}", op.as_str(), Size(size));
    a.cell
        .strip_prefix(&prefix)
        .map(|rest| rest.trim_start_matches('-').to_owned())
        .unwrap_or_default()
}

/// Closed-loop arms with a known concurrency and a finite throughput, by panel and mode;
/// arms of several cells at the same point are averaged.
fn closed_loop_panels(report: &Report) -> BTreeMap<PanelKey, Series<'_>> {
    let mut acc: BTreeMap<PanelKey, BTreeMap<&str, BTreeMap<u32, Vec<f64>>>> = BTreeMap::new();
    for a in &report.arms {
        let Some(c) = a.concurrency else { continue };
        if a.offered_rps.is_some() || !(a.throughput_rps.is_finite() && a.throughput_rps >= 0.0) {
            continue;
        }
        acc.entry((a.operation, a.object_size, cell_variant(a)))
            .or_default()
            .entry(&a.mode)
            .or_default()
            .entry(c)
            .or_default()
            .push(a.throughput_rps);
    }
    acc.into_iter()
        .map(|(k, modes)| {
            let series = modes
                .into_iter()
                .map(|(m, pts)| {
                    let pts = pts
                        .into_iter()
                        .map(|(c, v)| (c, v.iter().sum::<f64>() / count(v.len())))
                        .collect();
                    (m, pts)
                })
                .collect();
            (k, series)
        })
        .collect()
}

fn panel_title(key: &PanelKey) -> String {
    let (op, size, variant) = key;
    let parts: Vec<String> = [
        op.map(|o| o.as_str().to_owned()),
        size.map(|s| Size(s).to_string()),
        (!variant.is_empty()).then(|| variant.clone()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        "closed loop".to_owned()
    } else {
        parts.join(" \u{b7} ")
    }
}

const PANEL_W: f64 = 460.0;
const PANEL_H: f64 = 300.0;

/// Closed-loop throughput against concurrency (`throughput.svg`): one panel per
/// (operation, object size, backend), one line with markers per mode (x on a log₂ scale
/// when concurrency spans more than 8×), or grouped bars per concurrency when no mode has
/// more than one concurrency in the panel. `None` without closed-loop arms of known
/// concurrency.
pub fn throughput_vs_concurrency(report: &Report) -> Option<Plot> {
    let panels = closed_loop_panels(report);
    if panels.is_empty() {
        return None;
    }
    let palette = Palette::of(report);
    let modes: BTreeSet<&str> = panels.values().flat_map(|p| p.keys().copied()).collect();
    let items: Vec<(String, &str)> = modes
        .iter()
        .map(|m| ((*m).to_owned(), palette.get(m)))
        .collect();

    let title = "Closed-loop throughput vs concurrency".to_owned();
    let subtitle = "mean successful requests per second per mode; one panel per operation and \
                    object size";
    let cols = panels.len().min(2);
    let grid_rows = panels.len().div_ceil(2);
    let width = (count(cols) * PANEL_W + 20.0)
        .max(text_w(&title, 16.0) + 40.0)
        .max(text_w(subtitle, 11.0) + 40.0);
    let (_, legend_h) = legend_layout(&items, width - 32.0);
    let top = 70.0 + legend_h;
    let height = top + count(grid_rows) * PANEL_H + 6.0;

    let mut svg = Svg::new(width, height, &title);
    svg.subtitle(width, subtitle);
    legend(&mut svg, 16.0, 70.0, width - 32.0, &items);
    let left = (width - count(cols) * PANEL_W) / 2.0;
    for (i, (key, series)) in panels.iter().enumerate() {
        let (col, row) = (count(i % 2), count(i / 2));
        let frame = Frame {
            x0: left + col * PANEL_W + 72.0,
            x1: left + (col + 1.0) * PANEL_W - 20.0,
            y0: top + row * PANEL_H + 30.0,
            y1: top + (row + 1.0) * PANEL_H - 52.0,
        };
        panel(&mut svg, frame, &panel_title(key), series, &palette);
    }
    Some(Plot {
        file: "throughput.svg",
        title,
        svg: svg.finish(),
    })
}

/// One throughput panel inside `f` (the plotting area; the title goes above it).
fn panel(svg: &mut Svg, f: Frame, title: &str, series: &Series<'_>, palette: &Palette) {
    svg.text(
        f64::midpoint(f.x0, f.x1),
        f.y0 - 12.0,
        title,
        r#"font-size="13" font-weight="bold" text-anchor="middle""#,
    );
    let vmax = series
        .values()
        .flatten()
        .map(|(_, v)| *v)
        .fold(0.0, f64::max);
    let (_, top, yticks) = nice_ticks(0.0, (vmax * 1.1).max(1.0), 5.0);
    let sy = Scale::linear(0.0, top, f.y1, f.y0);
    let yticks: Vec<(f64, String)> = yticks.into_iter().map(|(v, l)| (sy.at(v), l)).collect();
    y_axis(svg, f, &yticks, "throughput (req/s)");

    let concs: Vec<u32> = series
        .values()
        .flatten()
        .map(|(c, _)| *c)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if series.values().all(|s| s.len() <= 1) {
        bars_by_concurrency(svg, f, sy, &concs, series, palette);
        return;
    }

    let (cmin, cmax) = (
        f64::from(concs.first().copied().unwrap_or(1)),
        f64::from(concs.last().copied().unwrap_or(1)),
    );
    let log = cmin > 0.0 && cmax / cmin > 8.0;
    let (r0, r1) = (f.x0 + 18.0, f.x1 - 18.0);
    let sx = if log {
        Scale::log2(cmin, cmax, r0, r1)
    } else {
        Scale::linear(cmin, cmax, r0, r1)
    };
    let xticks: Vec<(f64, String)> = if concs.len() <= 12 {
        concs
            .iter()
            .map(|c| (f64::from(*c), c.to_string()))
            .collect()
    } else if log {
        let mut v = Vec::new();
        let mut p = 1.0_f64;
        while p <= cmax {
            if p >= cmin {
                v.push((p, fmt_num(p)));
            }
            p *= 2.0;
        }
        v
    } else {
        let (_, _, t) = nice_ticks(cmin, cmax, 6.0);
        t.into_iter()
            .filter(|(v, _)| *v >= cmin && *v <= cmax)
            .collect()
    };
    let xticks: Vec<(f64, String)> = xticks.into_iter().map(|(v, l)| (sx.at(v), l)).collect();
    let x_title = if log {
        "concurrency (workers, log\u{2082} scale)"
    } else {
        "concurrency (workers)"
    };
    x_axis(svg, f, &xticks, x_title, true);

    for (mode, pts) in series {
        let colour = palette.get(mode);
        let xy: Vec<(f64, f64)> = pts
            .iter()
            .map(|(c, v)| (sx.at(f64::from(*c)), sy.at(*v)))
            .collect();
        svg.open(
            &format!(r#"class="series" fill="{colour}""#),
            &format!("{mode} ({title})"),
        );
        if xy.len() > 1 {
            svg.polyline(&xy, &format!(r#"stroke="{colour}" stroke-width="2""#));
        }
        for ((c, v), (x, y)) in pts.iter().zip(&xy) {
            svg.open(
                "",
                &format!("{mode}, concurrency {c}: {} req/s", fmt_num(*v)),
            );
            svg.circle(
                *x,
                *y,
                3.5,
                r##"class="point" stroke="#ffffff" stroke-width="1""##,
            );
            svg.close();
        }
        svg.close();
    }
}

/// Grouped bars: one group per concurrency, one bar per mode, value labels when they fit.
fn bars_by_concurrency(
    svg: &mut Svg,
    f: Frame,
    sy: Scale,
    concs: &[u32],
    series: &Series<'_>,
    palette: &Palette,
) {
    let modes: Vec<&str> = series.keys().copied().collect();
    let group_w = (f.x1 - f.x0) / count(concs.len().max(1));
    let bar_w = (group_w * 0.8 / count(modes.len().max(1))).min(44.0);
    let mut ticks = Vec::new();
    for (ci, c) in concs.iter().enumerate() {
        let gx = f.x0 + group_w * (count(ci) + 0.5);
        ticks.push((gx, c.to_string()));
        let start = gx - bar_w * count(modes.len()) / 2.0;
        for (mi, mode) in modes.iter().enumerate() {
            let Some((_, v)) = series[mode].iter().find(|(cc, _)| cc == c) else {
                continue;
            };
            let colour = palette.get(mode);
            let x = start + bar_w * count(mi);
            let y = sy.at(*v);
            svg.open(
                r#"class="bar""#,
                &format!("{mode}, concurrency {c}: {} req/s", fmt_num(*v)),
            );
            svg.rect(
                x + 1.0,
                y,
                bar_w - 2.0,
                f.y1 - y,
                &format!(r#"fill="{colour}""#),
            );
            let label = fmt_num(*v);
            if text_w(&label, 10.0) <= bar_w + 2.0 {
                svg.text(
                    x + bar_w / 2.0,
                    y - 4.0,
                    &label,
                    r#"font-size="10" text-anchor="middle""#,
                );
            }
            svg.close();
        }
    }
    x_axis(svg, f, &ticks, "concurrency (workers)", false);
}

// ---------------------------------------------------------------------------------------
// Horizontal bar charts: CPU per request and storage
// ---------------------------------------------------------------------------------------

struct Bar {
    label: String,
    value: f64,
    colour: &'static str,
    /// Text at the end of the bar.
    note: String,
    tip: String,
}

struct Group {
    header: String,
    bars: Vec<Bar>,
}

/// A dashed reference line with its label.
struct Limit {
    at: f64,
    label: String,
}

struct BarChart {
    file: &'static str,
    title: String,
    subtitle: String,
    axis: &'static str,
    groups: Vec<Group>,
    limit: Option<Limit>,
}

/// Horizontal bars in groups: a bold header row per group, then one labelled bar per row
/// with its note at the bar's end; x from 0 with nice ticks, the limit (if any) dashed.
fn bar_chart(c: BarChart) -> Plot {
    const HEADER: f64 = 24.0;
    const ROW: f64 = 20.0;
    const GAP: f64 = 6.0;
    const PLOT_W: f64 = 440.0;
    let bars = || c.groups.iter().flat_map(|g| &g.bars);
    let label_w = bars().map(|b| text_w(&b.label, FONT)).fold(0.0, f64::max);
    let x0 = 28.0 + label_w + 10.0;
    let x1 = x0 + PLOT_W;
    let note_w = bars().map(|b| text_w(&b.note, 11.0)).fold(0.0, f64::max);
    let width = (x1 + 8.0 + note_w + 16.0)
        .max(text_w(&c.title, 16.0) + 40.0)
        .max(text_w(&c.subtitle, 11.0) + 40.0)
        .max(
            c.groups
                .iter()
                .map(|g| 12.0 + text_w(&g.header, FONT) * 1.1 + 16.0)
                .fold(0.0, f64::max),
        );
    let vmax = bars()
        .map(|b| b.value)
        .chain(c.limit.iter().map(|l| l.at))
        .fold(0.0, f64::max);
    let (_, top, ticks) = nice_ticks(0.0, (vmax * 1.04).max(f64::MIN_POSITIVE), 6.0);
    let sx = Scale::linear(0.0, top, x0, x1);

    let y0 = if c.limit.is_some() { 82.0 } else { 64.0 };
    let mut y = y0 + 2.0;
    let mut layout = Vec::new();
    for g in &c.groups {
        let header_y = y + 16.0;
        y += HEADER;
        let mut centres = Vec::new();
        for _ in &g.bars {
            centres.push(y + ROW / 2.0);
            y += ROW;
        }
        layout.push((header_y, centres));
        y += GAP;
    }
    let y1 = y - GAP + 4.0;
    let height = y1 + 50.0;
    let frame = Frame { x0, x1, y0, y1 };

    let mut svg = Svg::new(width, height, &c.title);
    svg.subtitle(width, &c.subtitle);
    let tick_px: Vec<(f64, String)> = ticks.into_iter().map(|(v, l)| (sx.at(v), l)).collect();
    x_axis(&mut svg, frame, &tick_px, c.axis, true);
    svg.line(
        x0,
        y0,
        x0,
        y1,
        &format!(r#"stroke="{AXIS}" stroke-width="1""#),
    );
    if let Some(l) = &c.limit {
        let x = sx.at(l.at);
        svg.line(
            x,
            y0 - 4.0,
            x,
            y1,
            &format!(r#"stroke="{INK}" stroke-width="1.5" stroke-dasharray="6 4""#),
        );
        let half = text_w(&l.label, 11.0) / 2.0;
        let anchor = if x - half < 8.0 {
            "start"
        } else if x + half > width - 8.0 {
            "end"
        } else {
            "middle"
        };
        svg.text(
            x,
            y0 - 8.0,
            &l.label,
            &format!(r#"font-size="11" text-anchor="{anchor}""#),
        );
    }
    for (g, (header_y, centres)) in c.groups.iter().zip(&layout) {
        svg.text(12.0, *header_y, &g.header, r#"font-weight="bold""#);
        for (b, cy) in g.bars.iter().zip(centres) {
            svg.open(r#"class="bar""#, &b.tip);
            svg.text(
                x0 - 10.0,
                cy + 4.0,
                &b.label,
                r#"text-anchor="end" class="label""#,
            );
            let end = sx.at(b.value);
            svg.rect(
                x0,
                cy - 6.5,
                end - x0,
                13.0,
                &format!(r#"fill="{}""#, b.colour),
            );
            // A white backing keeps the note readable over grid and limit lines.
            svg.rect(
                end + 3.0,
                cy - 7.0,
                text_w(&b.note, 11.0) + 6.0,
                14.0,
                r##"fill="#ffffff" fill-opacity="0.9""##,
            );
            svg.text(end + 6.0, cy + 4.0, &b.note, r#"font-size="11""#);
            svg.close();
        }
    }
    Plot {
        file: c.file,
        title: c.title,
        svg: svg.finish(),
    }
}

fn mode_label(mode: &str, baseline: &str) -> String {
    if mode == baseline {
        format!("{mode} (baseline)")
    } else {
        mode.to_owned()
    }
}

/// Client CPU per request (`cpu.svg`): per cell (first-seen order), one bar per mode in
/// the mode's colour, labelled in µs. `None` without arms of finite CPU per request.
pub fn cpu_per_request(report: &Report) -> Option<Plot> {
    let palette = Palette::of(report);
    let baseline = &report.config.baseline;
    let mut cells: Vec<&str> = Vec::new();
    for a in &report.arms {
        if !cells.contains(&a.cell.as_str()) {
            cells.push(&a.cell);
        }
    }
    let groups: Vec<Group> = cells
        .into_iter()
        .map(|cell| {
            let mut arms: Vec<&ArmSummary> = report
                .arms
                .iter()
                .filter(|a| {
                    a.cell == cell
                        && a.cpu_per_request_us.is_finite()
                        && a.cpu_per_request_us >= 0.0
                })
                .collect();
            arms.sort_by(|a, b| a.mode.cmp(&b.mode));
            Group {
                header: cell.to_owned(),
                bars: arms
                    .into_iter()
                    .map(|a| Bar {
                        label: mode_label(&a.mode, baseline),
                        value: a.cpu_per_request_us,
                        colour: palette.get(&a.mode),
                        note: format!("{} \u{b5}s", fmt_num(a.cpu_per_request_us)),
                        tip: format!(
                            "{cell} \u{b7} {}: {} \u{b5}s of client CPU per request ({} runs)",
                            a.mode,
                            fmt_num(a.cpu_per_request_us),
                            a.runs
                        ),
                    })
                    .collect(),
            }
        })
        .filter(|g| !g.bars.is_empty())
        .collect();
    if groups.is_empty() {
        return None;
    }
    Some(bar_chart(BarChart {
        file: "cpu.svg",
        title: "Client CPU per request".to_owned(),
        subtitle: "mean client process CPU time per successful request, per cell and mode"
            .to_owned(),
        axis: "client CPU per request (\u{b5}s)",
        groups,
        limit: None,
    }))
}

/// Storage overhead (`storage.svg`): manifest bytes per mode, grouped by object size, each
/// labelled with its bytes and the difference to the baseline, and a dashed line at the
/// 2,048-byte S3 user-metadata limit. `None` if the report has no storage rows.
pub fn storage(report: &Report) -> Option<Plot> {
    if report.storage.is_empty() {
        return None;
    }
    let palette = Palette::of(report);
    let baseline = &report.config.baseline;
    let mut by_size: BTreeMap<Option<u64>, Vec<&StorageRow>> = BTreeMap::new();
    for s in &report.storage {
        by_size.entry(s.object_size).or_default().push(s);
    }
    let groups: Vec<Group> = by_size
        .into_iter()
        .map(|(size, mut rows)| {
            rows.sort_by(|a, b| a.mode.cmp(&b.mode));
            let header = match size {
                Some(s) => format!("object size {}", Size(s)),
                None => "object size not recorded".to_owned(),
            };
            let bars = rows
                .into_iter()
                .map(|s| {
                    let o = &s.overhead;
                    let bytes = format!("{} B", fmt_int(o.manifest_bytes));
                    let mut note = if &s.mode == baseline {
                        format!("{bytes} (baseline)")
                    } else {
                        format!(
                            "{bytes} ({} B vs {baseline})",
                            fmt_signed(o.extra_bytes_vs_baseline)
                        )
                    };
                    if o.over_s3_metadata_limit {
                        note.push_str(" \u{b7} over the S3 limit");
                    }
                    Bar {
                        label: mode_label(&s.mode, baseline),
                        value: bytes_f64(o.manifest_bytes),
                        colour: palette.get(&s.mode),
                        tip: format!(
                            "{}, {header}: {note}; {} TB per billion objects",
                            s.mode,
                            fmt_num(o.per_billion_tb)
                        ),
                        note,
                    }
                })
                .collect();
            Group { header, bars }
        })
        .collect();
    Some(bar_chart(BarChart {
        file: "storage.svg",
        title: "Storage overhead: manifest bytes per object".to_owned(),
        subtitle: format!(
            "mean manifest bytes per object per mode, difference to the baseline ({baseline})"
        ),
        axis: "manifest bytes per object",
        groups,
        limit: Some(Limit {
            at: bytes_f64(S3_USER_METADATA_LIMIT),
            label: format!(
                "S3 user-metadata limit ({} B)",
                fmt_int(S3_USER_METADATA_LIMIT)
            ),
        }),
    }))
}

// ---------------------------------------------------------------------------------------
// CPU accounting identity
// ---------------------------------------------------------------------------------------

/// The three throughput ratios of the identity plot: legend label, colour, shape, class.
const IDENTITY_TERMS: [(&str, &str, Shape, &str); 3] = [
    (
        "observed throughput ratio",
        "#0072B2",
        Shape::Circle,
        "observed",
    ),
    (
        "implied with equal cores (1 / CPU ratio)",
        "#E69F00",
        Shape::Square,
        "implied-equal-cores",
    ),
    (
        "implied with the cores used (cores ratio / CPU ratio)",
        "#009E73",
        Shape::Diamond,
        "implied",
    ),
];

/// The terms drawn, in the order of [`IDENTITY_TERMS`].
fn identity_terms(id: &Identity) -> [&RatioInterval; 3] {
    [&id.observed, &id.implied_equal_cores, &id.implied]
}

/// A ratio with its 90 % interval: `0.952 [0.941, 0.963]`.
fn fmt_interval(t: &RatioInterval) -> String {
    format!(
        "{} [{}, {}]",
        fmt_ratio(t.ratio),
        fmt_ratio(t.ci90.0),
        fmt_ratio(t.ci90.1)
    )
}

/// One comparison of the identity plot.
struct IdentityRow<'a> {
    label: String,
    id: &'a Identity,
    /// The three ratios, as written at the right.
    numbers: String,
    /// "cores differ" and the like; empty if nothing to say.
    note: String,
    /// Which cell group the row is in (alternate groups are shaded).
    group: usize,
}

fn identity_note(id: &Identity) -> String {
    let mut notes = Vec::new();
    if !id.cpu_predicts_throughput {
        notes.push(format!(
            "cores differ (cores ratio {})",
            fmt_ratio(id.cores.ratio)
        ));
    }
    if !id.holds {
        notes.push(format!(
            "identity does not hold (residual {})",
            fmt_ratio(id.residual.ratio)
        ));
    }
    notes.join(" \u{b7} ")
}

/// Comparisons with an identity that has a finite term, cells in first-seen order, modes
/// sorted within a cell.
fn identity_rows(report: &Report) -> Vec<IdentityRow<'_>> {
    let mut cells: Vec<&str> = Vec::new();
    for s in &report.secondary {
        if !cells.contains(&s.cell.as_str()) {
            cells.push(&s.cell);
        }
    }
    let mut rows = Vec::new();
    for cell in cells {
        let mut v: Vec<(&Secondary, &Identity)> = report
            .secondary
            .iter()
            .filter(|s| s.cell == cell)
            .filter_map(|s| Some((s, s.identity.as_ref()?)))
            .filter(|(_, id)| identity_terms(id).iter().any(|t| t.ratio.is_finite()))
            .collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(|a, b| a.0.mode.cmp(&b.0.mode));
        let group = rows.last().map_or(0, |r: &IdentityRow<'_>| r.group + 1);
        rows.extend(v.into_iter().map(|(s, id)| {
            IdentityRow {
                label: format!("{} \u{b7} {} vs {}", s.cell, s.mode, s.baseline),
                id,
                numbers: identity_terms(id)
                    .map(|t| fmt_ratio(t.ratio))
                    .join(" \u{b7} "),
                note: identity_note(id),
                group,
            }
        }));
    }
    rows
}

/// The ratio axis: 1 and every finite ratio and 90 % bound, padded, with nice ticks.
fn identity_domain(rows: &[IdentityRow<'_>]) -> (f64, f64, Vec<(f64, String)>) {
    let (mut lo, mut hi) = (1.0_f64, 1.0_f64);
    for t in rows.iter().flat_map(|r| identity_terms(r.id)) {
        for v in [t.ratio, t.ci90.0, t.ci90.1] {
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    let pad = (hi - lo) * 0.04;
    nice_ticks(lo - pad, hi + pad, 6.0)
}

/// The CPU accounting identity (`identity.svg`): one row per comparison with an identity,
/// on a shared ratio axis the observed throughput ratio, the ratio implied with equal cores
/// (1 / CPU ratio) and the ratio implied with the cores used, each with its 90 % interval,
/// a dashed line at 1; at the right the three ratios and a note where the cores differ
/// (the CPU ratio alone does not carry the throughput ratio) or the identity does not
/// hold. `None` without identities.
pub fn cpu_identity(report: &Report) -> Option<Plot> {
    const ROW: f64 = 28.0;
    const PLOT_W: f64 = 420.0;
    let rows = identity_rows(report);
    if rows.is_empty() {
        return None;
    }
    let title = "CPU accounting identity".to_owned();
    let subtitle = "throughput ratio vs the baseline, observed and implied by client CPU per \
                    request (throughput = cores used / CPU per request); bars: 90 % CI";
    let items: Vec<Item> = IDENTITY_TERMS
        .iter()
        .map(|(l, c, s, _)| ((*l).to_owned(), *c, *s))
        .collect();
    let label_w = rows
        .iter()
        .map(|r| text_w(&r.label, FONT))
        .fold(text_w("comparison", 11.0), f64::max);
    let x0 = 16.0 + label_w + 14.0;
    let num_x = x0 + PLOT_W + 16.0;
    let head_numbers = "observed \u{b7} equal cores \u{b7} cores used";
    let num_w = rows
        .iter()
        .map(|r| text_w(&r.numbers, 11.0))
        .fold(text_w(head_numbers, 11.0), f64::max);
    let note_x = num_x + num_w + 14.0;
    let note_w = rows
        .iter()
        .map(|r| text_w(&r.note, 11.0))
        .fold(0.0, f64::max);
    let width = (note_x + note_w + 16.0)
        .max(text_w(&title, 16.0) + 40.0)
        .max(text_w(subtitle, 11.0) + 40.0);
    let (_, legend_h) = legend_layout(&item_labels(&items), width - 32.0);
    let header_y = 68.0 + legend_h + 8.0;
    let y0 = header_y + 8.0;
    let y1 = y0 + 12.0 + count(rows.len()) * ROW;

    let mut svg = Svg::new(width, y1 + 50.0, &title);
    svg.subtitle(width, subtitle);
    marker_legend(&mut svg, 16.0, 68.0, width - 32.0, &items);
    let centre = |i: usize| y0 + 6.0 + (count(i) + 0.5) * ROW;
    for (i, r) in rows.iter().enumerate() {
        if r.group % 2 == 0 {
            let top = centre(i) - ROW / 2.0;
            svg.rect(8.0, top, width - 16.0, ROW, &format!(r#"fill="{SHADE}""#));
        }
    }
    let (d0, d1, ticks) = identity_domain(&rows);
    let sx = Scale::linear(d0, d1, x0, x0 + PLOT_W);
    let frame = Frame {
        x0,
        x1: x0 + PLOT_W,
        y0,
        y1,
    };
    let tick_px: Vec<(f64, String)> = ticks.into_iter().map(|(v, l)| (sx.at(v), l)).collect();
    x_axis(
        &mut svg,
        frame,
        &tick_px,
        "throughput ratio (mode / baseline)",
        true,
    );
    svg.line(
        sx.at(1.0),
        y0,
        sx.at(1.0),
        y1,
        &format!(r#"class="reference" stroke="{INK}" stroke-width="1" stroke-dasharray="4 3""#),
    );
    let head = format!(r#"font-size="11" font-weight="bold" fill="{MUTED}""#);
    svg.text(
        x0 - 14.0,
        header_y,
        "comparison",
        &format!(r#"{head} text-anchor="end""#),
    );
    svg.text(num_x, header_y, head_numbers, &head);
    for (i, r) in rows.iter().enumerate() {
        identity_row(&mut svg, sx, r, centre(i), (num_x, note_x));
    }
    Some(Plot {
        file: "identity.svg",
        title,
        svg: svg.finish(),
    })
}

/// One row of the identity plot centred at `cy`: label, the three markers with their
/// whiskers (stacked a little apart), the numbers at `num_x` and the note at `note_x`.
fn identity_row(svg: &mut Svg, sx: Scale, r: &IdentityRow<'_>, cy: f64, at: (f64, f64)) {
    let id = r.id;
    let tip = format!(
        "{}: observed {}; implied with equal cores {}; implied with the cores used {} \
         (90 % CIs); cores ratio {}, CPU ratio {}, residual {}; identity {}; CPU ratio {} \
         the throughput ratio",
        r.label,
        fmt_interval(&id.observed),
        fmt_interval(&id.implied_equal_cores),
        fmt_interval(&id.implied),
        fmt_ratio(id.cores.ratio),
        fmt_ratio(id.cpu.ratio),
        fmt_ratio(id.residual.ratio),
        if id.holds { "holds" } else { "does not hold" },
        if id.cpu_predicts_throughput {
            "carries"
        } else {
            "does not carry"
        },
    );
    svg.open(r#"class="identity""#, &tip);
    svg.text(
        sx.r0 - 14.0,
        cy + 4.0,
        &r.label,
        r#"text-anchor="end" class="label""#,
    );
    for (k, (t, (_, colour, shape, class))) in
        (0u32..).zip(identity_terms(id).into_iter().zip(IDENTITY_TERMS))
    {
        let y = cy + (f64::from(k) - 1.0) * 7.0;
        if finite2([t.ci90.0, t.ci90.1]) {
            let (a, b) = (sx.at(t.ci90.0), sx.at(t.ci90.1));
            let stroke = format!(r#"stroke="{colour}" stroke-width="1.5""#);
            svg.line(a, y, b, y, &format!(r#"class="ci90" {stroke}"#));
            svg.line(a, y - 3.0, a, y + 3.0, &stroke);
            svg.line(b, y - 3.0, b, y + 3.0, &stroke);
        }
        if t.ratio.is_finite() {
            let class = format!(r#"class="{class}""#);
            marker(svg, shape, (sx.at(t.ratio), y), colour, &class);
        }
    }
    svg.text(at.0, cy + 4.0, &r.numbers, r#"font-size="11""#);
    if !r.note.is_empty() {
        svg.text(
            at.1,
            cy + 4.0,
            &r.note,
            &format!(r#"font-size="11" class="note" fill="{MUTED}""#),
        );
    }
    svg.close();
}

// ---------------------------------------------------------------------------------------
// Open loop: response time vs offered rate and the knee
// ---------------------------------------------------------------------------------------

/// Height of one line of a knee panel's notes.
const NOTE_H: f64 = 16.0;

/// A series' points with a finite rate and response, by rate.
fn knee_points(k: &KneeRow) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = k
        .points
        .iter()
        .filter(|p| p.rate.is_finite() && p.mean_response.is_finite())
        .map(|p| (p.rate, p.mean_response))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The light-load response (ms): the knee's, else the response at the lowest rate; `None`
/// unless positive and finite.
fn light_load(k: &KneeRow) -> Option<f64> {
    k.knee
        .map(|kn| kn.light_load_response)
        .or_else(|| knee_points(k).first().map(|p| p.1))
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// The measured knee rate, if finite.
fn knee_rate(k: &KneeRow) -> Option<f64> {
    k.knee.map(|kn| kn.rate).filter(|r| r.is_finite())
}

/// The prediction, if its rate is finite.
fn prediction(k: &KneeRow) -> Option<KneePrediction> {
    k.predicted.filter(|p| p.rate.is_finite())
}

/// The line under a panel that sums up one mode's knee.
fn knee_note(k: &KneeRow) -> String {
    let mut parts = vec![match knee_rate(k) {
        Some(r) => format!("knee {} req/s", fmt_num(r)),
        None => "no knee within the offered rates".to_owned(),
    }];
    if let Some(p) = prediction(k) {
        parts.push(format!(
            "predicted (M/M/c, c = {}) {} req/s",
            p.servers,
            fmt_num(p.rate)
        ));
    }
    if let Some(r) = k.measured_over_predicted.filter(|r| r.is_finite()) {
        parts.push(format!("measured / predicted {}", fmt_ratio(r)));
    }
    format!("{}: {}", k.mode, parts.join(" \u{b7} "))
}

/// Open-loop series with a finite point, by series name, modes sorted.
fn knee_panels(report: &Report) -> BTreeMap<&str, Vec<&KneeRow>> {
    let mut panels: BTreeMap<&str, Vec<&KneeRow>> = BTreeMap::new();
    for k in &report.knees {
        if !knee_points(k).is_empty() {
            panels.entry(&k.series).or_default().push(k);
        }
    }
    for rows in panels.values_mut() {
        rows.sort_by(|a, b| a.mode.cmp(&b.mode));
    }
    panels
}

fn knee_panel_h(modes: usize) -> f64 {
    PANEL_H + count(modes) * NOTE_H + 4.0
}

/// Open loop (`knee.svg`): per series (operation, size, serving threads) a panel of the
/// mean response time (ms) against the offered rate, one line per mode, with a dashed line
/// at twice the light-load response, a filled square at the interpolated knee and a hollow
/// diamond at the knee an M/M/c model predicts (on the same line), and a line per mode
/// under the panel with the numbers. `None` without open-loop series.
pub fn open_loop(report: &Report) -> Option<Plot> {
    let panels = knee_panels(report);
    if panels.is_empty() {
        return None;
    }
    let palette = Palette::of(report);
    let modes: BTreeSet<&str> = panels.values().flatten().map(|k| k.mode.as_str()).collect();
    let mut items: Vec<Item> = modes
        .iter()
        .map(|m| ((*m).to_owned(), palette.get(m), Shape::Swatch))
        .collect();
    items.push(("mean response".to_owned(), INK, Shape::Circle));
    items.push(("2 \u{d7} light-load response".to_owned(), INK, Shape::Dash));
    items.push(("knee (interpolated)".to_owned(), INK, Shape::Square));
    if panels.values().flatten().any(|k| prediction(k).is_some()) {
        items.push((
            "predicted knee (M/M/c)".to_owned(),
            INK,
            Shape::HollowDiamond,
        ));
    }
    let title = "Open loop: mean response time vs offered rate".to_owned();
    let subtitle = "mean response time per offered rate and mode; the knee is where it \
                    reaches twice its light-load value";
    Some(stacked(
        Stack {
            file: "knee.svg",
            title,
            subtitle,
            items: &items,
            palette: &palette,
        },
        &panels,
        knee_note,
        knee_panel,
    ))
}

/// What a plot of stacked panels (one per cell or series) shows around them.
struct Stack<'a> {
    file: &'static str,
    title: String,
    subtitle: &'a str,
    items: &'a [Item],
    palette: &'a Palette,
}

/// A plot of panels stacked one above the other, each with a note per row under its x
/// axis (`note`), drawn by `panel`, centred as one block under the title, subtitle and
/// legend (`knee.svg`, `drift.svg`).
fn stacked<R>(
    s: Stack<'_>,
    panels: &BTreeMap<&str, Vec<&R>>,
    note: fn(&R) -> String,
    panel: fn(&mut Svg, Frame, &str, &[&R], &Palette),
) -> Plot {
    // The panels and their notes (which start 32 px into a panel), centred as one block.
    let block_w = panels
        .values()
        .flatten()
        .map(|r| 32.0 + text_w(&note(r), 11.0) + 8.0)
        .fold(PANEL_W, f64::max);
    let width = (block_w + 20.0)
        .max(text_w(&s.title, 16.0) + 40.0)
        .max(text_w(s.subtitle, 11.0) + 40.0);
    let (_, legend_h) = legend_layout(&item_labels(s.items), width - 32.0);
    let mut top = 70.0 + legend_h;
    let height = top + panels.values().map(|v| knee_panel_h(v.len())).sum::<f64>() + 6.0;

    let mut svg = Svg::new(width, height, &s.title);
    svg.subtitle(width, s.subtitle);
    marker_legend(&mut svg, 16.0, 70.0, width - 32.0, s.items);
    let left = (width - block_w) / 2.0;
    for (name, rows) in panels {
        let frame = Frame {
            x0: left + 72.0,
            x1: left + PANEL_W - 20.0,
            y0: top + 30.0,
            y1: top + PANEL_H - 52.0,
        };
        panel(&mut svg, frame, name, rows, s.palette);
        top += knee_panel_h(rows.len());
    }
    Plot {
        file: s.file,
        title: s.title,
        svg: svg.finish(),
    }
}

/// One open-loop panel inside `f` (title above, notes below the x axis).
fn knee_panel(svg: &mut Svg, f: Frame, title: &str, rows: &[&KneeRow], palette: &Palette) {
    svg.text(
        f64::midpoint(f.x0, f.x1),
        f.y0 - 12.0,
        title,
        r#"font-size="13" font-weight="bold" text-anchor="middle""#,
    );
    let (mut xmax, mut ymax) = (0.0_f64, 0.0_f64);
    for k in rows {
        for (r, v) in knee_points(k) {
            xmax = xmax.max(r);
            ymax = ymax.max(v);
        }
        xmax = [knee_rate(k), prediction(k).map(|p| p.rate)]
            .into_iter()
            .flatten()
            .fold(xmax, f64::max);
        ymax = ymax.max(light_load(k).map_or(0.0, |l| 2.0 * l));
    }
    let (_, right, xticks) = nice_ticks(0.0, (xmax * 1.05).max(f64::MIN_POSITIVE), 6.0);
    let (_, up, yticks) = nice_ticks(0.0, (ymax * 1.1).max(f64::MIN_POSITIVE), 5.0);
    let sx = Scale::linear(0.0, right, f.x0, f.x1);
    let sy = Scale::linear(0.0, up, f.y1, f.y0);
    let yticks: Vec<(f64, String)> = yticks.into_iter().map(|(v, l)| (sy.at(v), l)).collect();
    let xticks: Vec<(f64, String)> = xticks.into_iter().map(|(v, l)| (sx.at(v), l)).collect();
    y_axis(svg, f, &yticks, "mean response time (ms)");
    x_axis(svg, f, &xticks, "offered rate (req/s)", true);
    for (i, k) in rows.iter().enumerate() {
        let colour = palette.get(&k.mode);
        knee_series(svg, (sx, sy), f, k, colour);
        let y = f.y1 + 56.0 + count(i) * NOTE_H;
        marker(svg, Shape::Swatch, (f.x0 - 50.0, y - 4.0), colour, "");
        svg.text(
            f.x0 - 40.0,
            y,
            &knee_note(k),
            r#"font-size="11" class="knee-note""#,
        );
    }
}

/// One mode's series: line and points, the 2× line, the knee and the prediction.
fn knee_series(svg: &mut Svg, (sx, sy): (Scale, Scale), f: Frame, k: &KneeRow, colour: &str) {
    let pts = knee_points(k);
    let xy: Vec<(f64, f64)> = pts.iter().map(|(r, v)| (sx.at(*r), sy.at(*v))).collect();
    svg.open(
        &format!(r#"class="series" fill="{colour}""#),
        &format!("{} ({})", k.mode, k.series),
    );
    if xy.len() > 1 {
        svg.polyline(&xy, &format!(r#"stroke="{colour}" stroke-width="2""#));
    }
    for ((r, v), (x, y)) in pts.iter().zip(&xy) {
        svg.open(
            "",
            &format!(
                "{}, {} req/s offered: {} ms",
                k.mode,
                fmt_num(*r),
                fmt_num(*v)
            ),
        );
        svg.circle(
            *x,
            *y,
            3.5,
            r##"class="point" stroke="#ffffff" stroke-width="1""##,
        );
        svg.close();
    }
    if let Some(light) = light_load(k) {
        let y = sy.at(2.0 * light);
        svg.open(
            "",
            &format!(
                "{}: 2 \u{d7} light-load response = {} ms",
                k.mode,
                fmt_num(2.0 * light)
            ),
        );
        svg.line(
            f.x0,
            y,
            f.x1,
            y,
            &format!(
                r#"class="double" stroke="{colour}" stroke-width="1.2" stroke-dasharray="6 4""#
            ),
        );
        svg.close();
        knee_markers(svg, sx, y, k, colour);
    }
    svg.close();
}

/// The measured knee (filled square) and the predicted one (hollow diamond) on the 2× line
/// at height `y`.
fn knee_markers(svg: &mut Svg, sx: Scale, y: f64, k: &KneeRow, colour: &str) {
    if let (Some(rate), Some(kn)) = (knee_rate(k), k.knee) {
        svg.open(
            "",
            &format!(
                "{}: knee at {} req/s (interpolated between {} and {} req/s)",
                k.mode,
                fmt_num(rate),
                fmt_num(kn.lower_rate),
                fmt_num(kn.upper_rate)
            ),
        );
        marker(
            svg,
            Shape::Square,
            (sx.at(rate), y),
            colour,
            r#"class="knee""#,
        );
        svg.close();
    }
    if let Some(p) = prediction(k) {
        svg.open(
            "",
            &format!(
                "{}: predicted knee (M/M/c, c = {}) at {} req/s: service time {} ms, capacity \
                 {} req/s ({} of it)",
                k.mode,
                p.servers,
                fmt_num(p.rate),
                fmt_num(p.service_time * 1e3),
                fmt_num(p.capacity),
                fmt_ratio(p.fraction_of_capacity)
            ),
        );
        marker(
            svg,
            Shape::HollowDiamond,
            (sx.at(p.rate), y),
            colour,
            r#"class="predicted""#,
        );
        svg.close();
    }
}

// ---------------------------------------------------------------------------------------
// Drift within the runs' windows
// ---------------------------------------------------------------------------------------

/// The drift bound of the run-level `drift` check: a change of more than 20 %.
const DRIFT_BOUND: f64 = 0.2;

/// A change as a signed percentage with one decimal: `+3.2 %`, `−9.5 %`, `±0.0 %`; `n/a`
/// if not finite.
fn fmt_pct(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    let v = x * 100.0;
    let digits = format!("{:.1}", v.abs());
    let sign = if digits.trim_start_matches(['0', '.']).is_empty() {
        "\u{b1}"
    } else if v < 0.0 {
        "\u{2212}"
    } else {
        "+"
    };
    format!("{sign}{digits} %")
}

/// A row's bins as (position in the window, value) runs of consecutive finite bins: bin
/// `i` of `n` sits at its centre `(i + 0.5) / n`; a missing or non-finite bin ends a run.
fn drift_segments(d: &DriftRow) -> Vec<Vec<(f64, f64)>> {
    let n = count(d.mean_bins.len());
    let mut segments: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current = Vec::new();
    for (i, b) in d.mean_bins.iter().enumerate() {
        match b.filter(|v| v.is_finite()) {
            Some(v) => current.push(((count(i) + 0.5) / n, v)),
            None if current.is_empty() => {}
            None => segments.push(std::mem::take(&mut current)),
        }
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// Drift rows with at least one finite bin, by cell (sorted), arms sorted within a cell.
fn drift_panels(report: &Report) -> BTreeMap<&str, Vec<&DriftRow>> {
    let mut panels: BTreeMap<&str, Vec<&DriftRow>> = BTreeMap::new();
    for d in &report.drift {
        if d.mean_bins.iter().flatten().any(|v| v.is_finite()) {
            panels.entry(&d.cell).or_default().push(d);
        }
    }
    for rows in panels.values_mut() {
        rows.sort_by(|a, b| a.mode.cmp(&b.mode));
    }
    panels
}

/// The line under a drift panel for one arm.
fn drift_note(d: &DriftRow) -> String {
    let runs = if d.runs == 1 { "run" } else { "runs" };
    format!(
        "{}: median last/first third \u{2212} 1: {} ({} {runs})",
        d.mode,
        fmt_pct(d.throughput_change.median),
        d.runs
    )
}

/// Drift within the runs' windows (`drift.svg`): one panel per cell, stacked, with per arm
/// the mean over its runs of each bin's throughput over its run's mean against the
/// position in the measured window (a line through the bin centres, broken where a bin has
/// no data), a line at 1 (the run's mean), dashed lines at the ±20 % drift bound, light
/// lines at the thirds the report compares, and a line per arm under the panel with the
/// median change of the last third over the first. `None` if no arm has per-bin figures.
pub fn drift(report: &Report) -> Option<Plot> {
    let panels = drift_panels(report);
    if panels.is_empty() {
        return None;
    }
    let palette = Palette::of(report);
    let modes: BTreeSet<&str> = panels.values().flatten().map(|d| d.mode.as_str()).collect();
    let mut items: Vec<Item> = modes
        .iter()
        .map(|m| ((*m).to_owned(), palette.get(m), Shape::Swatch))
        .collect();
    items.push(("run mean (1.0)".to_owned(), INK, Shape::Rule));
    items.push((
        format!("drift bound \u{b1}{} %", fmt_num(DRIFT_BOUND * 100.0)),
        MUTED,
        Shape::Dash,
    ));
    let title = "Throughput drift within the runs".to_owned();
    let subtitle = "mean over runs of each bin's throughput over its run's mean";
    Some(stacked(
        Stack {
            file: "drift.svg",
            title,
            subtitle,
            items: &items,
            palette: &palette,
        },
        &panels,
        drift_note,
        drift_panel,
    ))
}

/// One drift panel inside `f` (title above, a note per arm below the x axis).
fn drift_panel(svg: &mut Svg, f: Frame, cell: &str, rows: &[&DriftRow], palette: &Palette) {
    svg.text(
        f64::midpoint(f.x0, f.x1),
        f.y0 - 12.0,
        cell,
        r#"font-size="13" font-weight="bold" text-anchor="middle""#,
    );
    let segments: Vec<Vec<Vec<(f64, f64)>>> = rows.iter().map(|d| drift_segments(d)).collect();
    let (lo, hi) = segments.iter().flatten().flatten().fold(
        (1.0 - 1.25 * DRIFT_BOUND, 1.0 + 1.25 * DRIFT_BOUND),
        |(lo, hi), (_, v)| (lo.min(*v), hi.max(*v)),
    );
    let (bottom, up, yticks) = nice_ticks(lo, hi, 5.0);
    let sx = Scale::linear(0.0, 1.0, f.x0, f.x1);
    let sy = Scale::linear(bottom, up, f.y1, f.y0);
    let yticks: Vec<(f64, String)> = yticks.into_iter().map(|(v, l)| (sy.at(v), l)).collect();
    y_axis(svg, f, &yticks, "throughput \u{f7} run mean");
    let xticks: Vec<(f64, String)> = [
        (0.0, "0"),
        (1.0 / 3.0, "1/3"),
        (2.0 / 3.0, "2/3"),
        (1.0, "1"),
    ]
    .into_iter()
    .map(|(v, l)| (sx.at(v), l.to_owned()))
    .collect();
    x_axis(svg, f, &xticks, "fraction of the measured window", false);
    for third in [1.0 / 3.0, 2.0 / 3.0] {
        let x = sx.at(third);
        svg.line(
            x,
            f.y0,
            x,
            f.y1,
            r##"class="third" stroke="#c8c8c8" stroke-width="1""##,
        );
    }
    let muted = format!(r#"font-size="10" text-anchor="middle" fill="{MUTED}""#);
    svg.text(sx.at(1.0 / 6.0), f.y0 + 12.0, "first third", &muted);
    svg.text(sx.at(5.0 / 6.0), f.y0 + 12.0, "last third", &muted);
    for bound in [1.0 - DRIFT_BOUND, 1.0 + DRIFT_BOUND] {
        let y = sy.at(bound);
        svg.line(
            f.x0,
            y,
            f.x1,
            y,
            &format!(r#"class="bound" stroke="{MUTED}" stroke-width="1.5" stroke-dasharray="4 3""#),
        );
    }
    let y = sy.at(1.0);
    svg.line(
        f.x0,
        y,
        f.x1,
        y,
        &format!(r#"class="reference" stroke="{INK}" stroke-width="1.5""#),
    );
    for (i, (d, segs)) in rows.iter().zip(&segments).enumerate() {
        let colour = palette.get(&d.mode);
        let tc = &d.throughput_change;
        let tip = format!(
            "{} ({cell}): {} runs, {} bins; throughput last/first third \u{2212} 1: median {} \
             [{}, {}]",
            d.mode,
            d.runs,
            d.mean_bins.len(),
            fmt_pct(tc.median),
            fmt_pct(tc.min),
            fmt_pct(tc.max)
        );
        svg.open(&format!(r#"class="series" fill="{colour}""#), &tip);
        for seg in segs {
            let xy: Vec<(f64, f64)> = seg.iter().map(|(x, v)| (sx.at(*x), sy.at(*v))).collect();
            if let [(x, y)] = xy.as_slice() {
                // A lone bin between gaps: a dot, as a one-point line would not show.
                svg.circle(*x, *y, 2.5, r#"class="point""#);
            } else {
                svg.polyline(&xy, &format!(r#"stroke="{colour}" stroke-width="2""#));
            }
        }
        svg.close();
        let y = f.y1 + 56.0 + count(i) * NOTE_H;
        marker(svg, Shape::Swatch, (f.x0 - 50.0, y - 4.0), colour, "");
        svg.text(
            f.x0 - 40.0,
            y,
            &drift_note(d),
            r#"font-size="11" class="drift-note""#,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::{Config, RunRow, analyze};
    use campaign::spec::Analysis;

    const MODES: [(&str, f64, f64, f64); 3] = [
        ("x25519", 1000.0, 50.0, 180.0),
        ("ml-kem-768", 990.0, 51.0, 1270.0),
        ("x-wing", 930.0, 54.0, 1302.0),
    ];

    fn row(
        cell: &str,
        conc: u32,
        mode: &str,
        block: u32,
        tp: f64,
        cpu: f64,
        manifest: f64,
    ) -> RunRow {
        RunRow {
            run_id: format!("{cell}-{mode}-{block}"),
            cell: cell.to_owned(),
            mode: mode.to_owned(),
            block,
            throughput_rps: tp,
            cpu_per_request_us: cpu,
            client_cores_used: 1.5,
            client_cores_available: 4.0,
            server_cpu_cores: Some(0.8),
            operation: Some(Operation::Get),
            object_size: Some(65_536),
            concurrency: Some(conc),
            offered_rps: None,
            mean_response_ms: None,
            manifest_bytes: Some(manifest),
            ..RunRow::default()
        }
    }

    /// 2 cells × 3 modes × 3 blocks.
    fn rows() -> Vec<RunRow> {
        let mut out = Vec::new();
        for (cell, conc, scale) in [("get-64KiB-c4", 4, 1.0), ("get-64KiB-c16", 16, 3.1)] {
            for block in 0..3u32 {
                for (k, (mode, tp, cpu, manifest)) in (0u32..).zip(MODES) {
                    let noise = 1.0 + 0.006 * f64::from((block * 5 + k * 3) % 4) - 0.009;
                    out.push(row(
                        cell,
                        conc,
                        mode,
                        block,
                        tp * scale * noise,
                        cpu / noise,
                        manifest,
                    ));
                }
            }
        }
        out
    }

    fn config() -> Config {
        Config {
            baseline: "x25519".into(),
            control: None,
            analysis: Analysis {
                primary: vec![campaign::spec::PrimarySpec::cell("get-64KiB-c4")],
                ..Analysis::default()
            },
            seed: 1,
            arms: Vec::new(),
            comparisons: Vec::new(),
            arm_details: Vec::new(),
            analysis_time_settings: Vec::new(),
            baselines: None,
            implementations: None,
        }
    }

    fn report() -> Report {
        analyze(&rows(), &config()).expect("analysis of the synthetic rows")
    }

    /// Checks that tags nest: a stack over opening, closing and self-closing tags.
    fn balanced(svg: &str) -> Result<usize, String> {
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        let mut elements = 0;
        while let Some(i) = rest.find('<') {
            rest = &rest[i + 1..];
            let end = rest.find('>').ok_or("unterminated tag")?;
            let tag = &rest[..end];
            rest = &rest[end + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                let open = stack
                    .pop()
                    .ok_or_else(|| format!("</{name}> without opening"))?;
                if open != name.trim() {
                    return Err(format!("<{open}> closed by </{name}>"));
                }
            } else {
                let name = tag
                    .split(|c: char| c.is_whitespace() || c == '/')
                    .next()
                    .unwrap_or_default();
                if name.is_empty() {
                    return Err(format!("bad tag <{tag}>"));
                }
                if !tag.ends_with('/') {
                    stack.push(name);
                }
                elements += 1;
            }
        }
        if stack.is_empty() {
            Ok(elements)
        } else {
            Err(format!("unclosed: {stack:?}"))
        }
    }

    fn check(p: &Plot) {
        let s = &p.svg;
        assert!(s.starts_with("<svg"), "{}", p.file);
        assert!(s.ends_with("</svg>\n"), "{}", p.file);
        for attr in [
            "xmlns=\"http://www.w3.org/2000/svg\"",
            "viewBox=",
            "width=",
            "height=",
        ] {
            assert!(s.contains(attr), "{}: {attr}", p.file);
        }
        assert!(
            s.contains(&format!("<title>{}</title>", esc(&p.title))),
            "{}",
            p.file
        );
        balanced(s).unwrap_or_else(|e| panic!("{}: {e}", p.file));
        assert!(!s.contains("NaN") && !s.contains("inf"), "{}", p.file);
    }

    #[test]
    fn every_plot_is_a_balanced_standalone_svg() {
        let r = report();
        let plots = all(&r);
        let files: Vec<&str> = plots.iter().map(|p| p.file).collect();
        assert_eq!(
            files,
            [
                "forest.svg",
                "throughput.svg",
                "cpu.svg",
                "storage.svg",
                "identity.svg",
                "bottlenecks.svg"
            ]
        );
        for p in &plots {
            check(p);
        }
        assert!(forest(&r).is_some());
        assert!(throughput_vs_concurrency(&r).is_some());
        assert!(cpu_per_request(&r).is_some());
        assert!(storage(&r).is_some());
        assert!(cpu_identity(&r).is_some());
        assert!(bottleneck::bottlenecks(&r).is_some());
        assert!(open_loop(&r).is_none());
    }

    #[test]
    fn forest_has_one_ratio_marker_per_comparison() {
        let r = report();
        assert_eq!(r.comparisons.len(), 4);
        let p = forest(&r).expect("forest");
        assert_eq!(p.svg.matches("class=\"ratio\"").count(), 4);
        assert_eq!(p.svg.matches("class=\"ci90\"").count(), 4);
        assert!(p.svg.contains("get-64KiB-c4 \u{b7} x-wing vs x25519"));
        assert!(p.svg.contains("primary"));
        assert!(p.svg.contains("margin \u{b1}5 %"));
    }

    #[test]
    fn every_mode_is_labelled() {
        let r = report();
        // The bottleneck plot is per resource, not per mode.
        for p in all(&r).into_iter().filter(|p| p.file != "bottlenecks.svg") {
            for (mode, ..) in MODES {
                assert!(p.svg.contains(mode), "{} lacks {mode}", p.file);
            }
        }
    }

    #[test]
    fn labels_are_escaped() {
        let mut r = report();
        let evil = "m<&>\"'";
        r.comparisons[0].mode = evil.into();
        r.arms[0].mode = evil.into();
        r.storage[0].mode = evil.into();
        r.secondary[0].mode = evil.into();
        r.bottlenecks[0].cell = evil.into();
        for p in all(&r) {
            check(&p);
            assert!(!p.svg.contains(evil), "{}", p.file);
            assert!(p.svg.contains("m&lt;&amp;&gt;&quot;&#39;"), "{}", p.file);
        }
    }

    #[test]
    fn output_is_deterministic() {
        let r = report();
        assert_eq!(all(&r), all(&r));
        assert_eq!(all(&r), all(&report()));
    }

    #[test]
    fn non_finite_values_are_skipped() {
        let mut r = report();
        r.comparisons[0].ratio = f64::NAN;
        r.comparisons[1].ci95 = [f64::NEG_INFINITY, f64::INFINITY];
        r.comparisons[1].tost_p = f64::NAN;
        r.arms[0].throughput_rps = f64::INFINITY;
        r.arms[1].cpu_per_request_us = f64::NAN;
        let id = r.secondary[0].identity.as_mut().expect("identity");
        id.observed.ratio = f64::NAN;
        id.implied.ci90 = (f64::NEG_INFINITY, f64::INFINITY);
        let mut open = open_loop_report();
        open.knees[0].points[0].mean_response = f64::NAN;
        open.knees[1].knee.as_mut().expect("knee").rate = f64::INFINITY;
        open.knees[2].predicted.as_mut().expect("prediction").rate = f64::NAN;
        for p in all(&r).iter().chain(&all(&open)) {
            check(p);
        }
        let f = forest(&r).expect("forest");
        assert_eq!(f.svg.matches("class=\"ratio\"").count(), 3);
        let ids = cpu_identity(&r).expect("identity");
        assert_eq!(ids.svg.matches("class=\"observed\"").count(), 3);
        assert_eq!(ids.svg.matches("class=\"implied\"").count(), 4);
        assert_eq!(ids.svg.matches("class=\"ci90\"").count(), 11);
        let knees = open_loop(&open).expect("knee");
        assert_eq!(knees.svg.matches("class=\"knee\"").count(), 2);
        assert_eq!(knees.svg.matches("class=\"predicted\"").count(), 2);
    }

    #[test]
    fn plots_without_data_are_skipped() {
        let mut r = report();
        r.storage.clear();
        for a in &mut r.arms {
            a.concurrency = None;
        }
        assert!(storage(&r).is_none());
        assert!(throughput_vs_concurrency(&r).is_none());
        r.comparisons.clear();
        r.arms.clear();
        assert!(cpu_identity(&r).is_some());
        r.secondary.clear();
        assert!(bottleneck::bottlenecks(&r).is_some());
        r.bottlenecks.clear();
        assert!(bottleneck::bottlenecks(&r).is_none());
        assert!(all(&r).is_empty());
    }

    /// Fig. 2: one-worker cells at three sizes and two operations give two columns of two
    /// panels, a line per arm in each, a point per size, the share in the tooltips.
    #[test]
    fn latency_against_object_size_at_one_worker() {
        let mut rows = Vec::new();
        for (op, base_ms) in [(Operation::Put, 3.0), (Operation::Get, 1.5)] {
            for (size, per_mib_ms) in [(1024u64, 0.0), (65_536, 0.1), (1_048_576, 1.0)] {
                #[allow(clippy::cast_precision_loss, reason = "small sizes")]
                let ms = base_ms + per_mib_ms * size as f64 / 1_048_576.0;
                let cell = format!("{}-{}-c1", op.as_str(), Size(size));
                for block in 0..3u32 {
                    for (mode, kem) in [("x25519", 40.0), ("ml-kem-768", 12.0)] {
                        let tp = 1e3 / ms * (1.0 + 0.001 * f64::from(block));
                        rows.push(RunRow {
                            operation: Some(op),
                            object_size: Some(size),
                            latency_p50_ms: Some(ms),
                            stages_us: Some([kem + f64::from(block), 5.0, 30.0, 8.0, 900.0]),
                            ..row(&cell, 1, mode, block, tp, 100.0, 622.0)
                        });
                    }
                }
            }
        }
        let r = analyze(&rows, &config()).expect("analysis");
        assert_eq!(r.kem_times.len(), 12);
        let p = latency::latency_vs_size(&r).expect("latency.svg");
        check(&p);
        assert_eq!(p.file, "latency.svg");
        assert_eq!(p.svg.matches("class=\"point\"").count(), 24);
        assert_eq!(p.svg.matches("<polyline").count(), 8);
        for want in [
            "PUT: median latency",
            "GET: KEM share",
            "1MiB",
            "ml-kem-768, 1KiB: ",
        ] {
            assert!(p.svg.contains(want), "{want} missing");
        }
        assert!(all(&r).iter().any(|p| p.file == "latency.svg"));
    }

    #[test]
    fn one_concurrency_draws_bars() {
        let rows: Vec<RunRow> = rows()
            .into_iter()
            .filter(|r| r.concurrency == Some(4))
            .collect();
        let r = analyze(&rows, &config()).expect("analysis");
        let p = throughput_vs_concurrency(&r).expect("throughput");
        check(&p);
        assert_eq!(p.svg.matches("class=\"bar\"").count(), 3);
        assert!(!p.svg.contains("<polyline"));
    }

    /// The identity rows of a report: (comparisons with one, those whose cores differ).
    fn identities(r: &Report) -> (usize, usize) {
        let ids: Vec<&Identity> = r
            .secondary
            .iter()
            .filter_map(|s| s.identity.as_ref())
            .collect();
        let differ = ids.iter().filter(|i| !i.cpu_predicts_throughput).count();
        (ids.len(), differ)
    }

    #[test]
    fn identity_has_three_markers_per_comparison() {
        let r = report();
        assert_eq!(identities(&r), (4, 0));
        let p = cpu_identity(&r).expect("identity");
        check(&p);
        assert_eq!(p.title, "CPU accounting identity");
        for class in ["observed", "implied-equal-cores", "implied", "identity"] {
            let n = p.svg.matches(&format!("class=\"{class}\"")).count();
            assert_eq!(n, 4, "{class}");
        }
        assert_eq!(p.svg.matches("class=\"ci90\"").count(), 12);
        assert_eq!(p.svg.matches("class=\"reference\"").count(), 1);
        assert!(p.svg.contains("get-64KiB-c16 \u{b7} ml-kem-768 vs x25519"));
        for (label, ..) in IDENTITY_TERMS {
            assert!(p.svg.contains(&esc(label)), "legend lacks {label}");
        }
        assert!(!p.svg.contains("cores differ"));
    }

    #[test]
    fn no_identity_no_identity_plot() {
        let mut r = report();
        for s in &mut r.secondary {
            s.identity = None;
        }
        assert!(cpu_identity(&r).is_none());
        assert!(all(&r).iter().all(|p| p.file != "identity.svg"));
        // Without the cores used, the analysis has no identity either.
        let rows: Vec<RunRow> = rows()
            .into_iter()
            .map(|r| RunRow {
                client_cores_used: 0.0,
                ..r
            })
            .collect();
        let r = analyze(&rows, &config()).expect("analysis");
        assert_eq!(identities(&r), (0, 0));
        assert!(cpu_identity(&r).is_none());
    }

    #[test]
    fn identity_notes_when_cores_differ() {
        // x-wing uses 20 % more cores and is 20 % faster: the identity holds, but the CPU
        // ratio alone no longer carries the throughput ratio.
        let rows: Vec<RunRow> = rows()
            .into_iter()
            .map(|r| {
                if r.mode == "x-wing" {
                    RunRow {
                        client_cores_used: r.client_cores_used * 1.2,
                        throughput_rps: r.throughput_rps * 1.2,
                        ..r
                    }
                } else {
                    r
                }
            })
            .collect();
        let r = analyze(&rows, &config()).expect("analysis");
        assert_eq!(identities(&r), (4, 2));
        let p = cpu_identity(&r).expect("identity");
        check(&p);
        assert_eq!(p.svg.matches("cores differ (cores ratio 1.200)").count(), 2);
        assert!(!p.svg.contains("identity does not hold"));
    }

    const RATES: [f64; 6] = [500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0];
    const RESPONSES_MS: [f64; 6] = [4.0, 4.2, 4.6, 5.5, 8.5, 20.0];

    /// The closed-loop rows plus an open-loop series per mode (8 threads, one cell per
    /// offered rate), whose response time doubles between 2,000 and 2,500 req/s.
    fn open_loop_rows() -> Vec<RunRow> {
        let mut out = rows();
        for (rate, resp) in RATES.into_iter().zip(RESPONSES_MS) {
            let cell = format!("get-64KiB-t8-r{rate}");
            for block in 0..3u32 {
                for (k, (mode, _, cpu, manifest)) in (0u32..).zip(MODES) {
                    let slower = 1.0 + 0.04 * f64::from(k) + 0.002 * f64::from(block);
                    out.push(RunRow {
                        offered_rps: Some(rate),
                        mean_response_ms: Some(resp * slower),
                        ..row(&cell, 8, mode, block, rate, cpu, manifest)
                    });
                }
            }
        }
        out
    }

    fn open_loop_report() -> Report {
        analyze(&open_loop_rows(), &config()).expect("analysis with an open loop")
    }

    #[test]
    fn knee_plot_marks_measured_and_predicted_knees() {
        let r = open_loop_report();
        assert_eq!(r.knees.len(), 3);
        assert!(r.knees.iter().all(|k| k.knee.is_some()));
        let predicted: Vec<KneePrediction> = r.knees.iter().filter_map(|k| k.predicted).collect();
        assert_eq!(predicted.len(), 3);
        let p = open_loop(&r).expect("knee");
        check(&p);
        assert_eq!(p.title, "Open loop: mean response time vs offered rate");
        assert!(all(&r).iter().any(|q| q.file == "knee.svg"));
        assert_eq!(p.svg.matches("class=\"series\"").count(), 3);
        assert_eq!(p.svg.matches("class=\"point\"").count(), 18);
        assert_eq!(p.svg.matches("class=\"double\"").count(), 3);
        assert_eq!(p.svg.matches("class=\"knee\"").count(), 3);
        assert_eq!(p.svg.matches("class=\"predicted\"").count(), 3);
        assert!(p.svg.contains("predicted knee (M/M/c)"));
        for k in &predicted {
            let label = format!("predicted (M/M/c, c = {})", k.servers);
            assert!(p.svg.contains(&label), "{label}");
        }
        assert!(p.svg.contains("get-64KiB-t8"));
        assert!(p.svg.contains("measured / predicted"));
        for (mode, ..) in MODES {
            assert!(p.svg.contains(mode), "{mode}");
        }

        let mut r = r;
        for k in &mut r.knees {
            k.predicted = None;
            k.measured_over_predicted = None;
        }
        let p = open_loop(&r).expect("knee");
        check(&p);
        assert!(!p.svg.contains("class=\"predicted\""));
        assert!(!p.svg.contains("M/M/c"));
        assert_eq!(p.svg.matches("class=\"knee\"").count(), 3);

        r.knees.clear();
        assert!(open_loop(&r).is_none());
        assert!(all(&r).iter().all(|q| q.file != "knee.svg"));
    }

    #[test]
    fn knee_plot_without_a_knee_keeps_the_doubling_line() {
        let mut r = open_loop_report();
        for k in &mut r.knees {
            k.knee = None;
            k.points.truncate(3);
        }
        let p = open_loop(&r).expect("knee");
        check(&p);
        assert_eq!(p.svg.matches("class=\"double\"").count(), 3);
        assert!(!p.svg.contains("class=\"knee\""));
        assert_eq!(p.svg.matches("no knee within the offered rates").count(), 3);
    }

    #[test]
    fn numbers_are_compact() {
        assert_eq!(fmt_num(0.952_34), "0.952");
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(fmt_num(1234.5), "1.23k");
        assert_eq!(fmt_num(999.7), "1k");
        assert_eq!(fmt_num(12.5), "12.5");
        assert_eq!(fmt_num(2.5e6), "2.5M");
        assert_eq!(fmt_num(f64::NAN), "n/a");
        assert_eq!(fmt_int(2048), "2,048");
        assert_eq!(fmt_int(1_234_567), "1,234,567");
        assert_eq!(fmt_signed(-32), "\u{2212}32");
        assert_eq!(fmt_signed(1088), "+1,088");
        assert_eq!(px(-0.0001), "0");
        assert_eq!(esc("a<&>\"'b"), "a&lt;&amp;&gt;&quot;&#39;b");
    }

    #[test]
    fn ticks_are_nice_and_cover_the_range() {
        let (lo, hi, t) = nice_ticks(0.91, 1.07, 6.0);
        assert!(lo <= 0.91 && hi >= 1.07);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0.9", "0.95", "1", "1.05", "1.1"]);
        let (_, _, t) = nice_ticks(0.0, 13_000.0, 5.0);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "5k", "10k", "15k"]);
        let s = Scale::log2(1.0, 16.0, 0.0, 400.0);
        assert!((s.at(4.0) - 200.0).abs() < 1e-9);
    }

    /// A drift row of `mode` in `cell` with the given bins.
    fn drift_row(cell: &str, mode: &str, median: f64, bins: Vec<Option<f64>>) -> DriftRow {
        DriftRow {
            cell: cell.to_owned(),
            mode: mode.to_owned(),
            runs: 3,
            throughput_change: analysis::longrun::Spread {
                median,
                min: median - 0.01,
                max: median + 0.01,
            },
            latency_change: None,
            mean_bins: bins,
        }
    }

    /// One cell, two arms over 30 bins: x25519 flat at 1, x-wing falling from 1.1 to 0.9
    /// with no data in bins 12 and 13.
    fn drift_report() -> Report {
        let mut r = report();
        let flat = vec![Some(1.0); 30];
        let falling = (0..30u32)
            .map(|i| (!(12..14).contains(&i)).then(|| 1.1 - 0.2 * f64::from(i) / 29.0))
            .collect();
        r.drift = vec![
            drift_row("get-64KiB-c4", "x-wing", -0.167, falling),
            drift_row("get-64KiB-c4", "x25519", 0.0004, flat),
        ];
        r
    }

    #[test]
    fn drift_plot_breaks_lines_at_gaps() {
        let r = drift_report();
        let p = drift(&r).expect("drift");
        check(&p);
        assert_eq!(p.title, "Throughput drift within the runs");
        assert!(all(&r).iter().any(|q| q.file == "drift.svg"));
        let s = &p.svg;
        assert!(s.contains("mean over runs of each bin&#39;s throughput over its run&#39;s mean"));
        assert!(s.contains("fraction of the measured window"));
        assert!(s.contains("throughput \u{f7} run mean"));
        assert!(s.contains(">get-64KiB-c4</text>"));
        // The reference line at 1 and the ±20 % bound, both inside the y range.
        assert_eq!(s.matches("class=\"reference\"").count(), 1);
        assert_eq!(s.matches("class=\"bound\"").count(), 2);
        assert_eq!(s.matches("class=\"third\"").count(), 2);
        for label in ["0.8", "1", "1.2"] {
            assert!(s.contains(&format!(">{label}</text>")), "y tick {label}");
        }
        // One line per arm, the falling one broken in two at its gap.
        assert_eq!(s.matches("class=\"series\"").count(), 2);
        assert_eq!(s.matches("<polyline").count(), 3);
        let series = |mode: &str| {
            let start = s
                .find(&format!("<title>{mode} (get-64KiB-c4)"))
                .unwrap_or_else(|| panic!("no series for {mode}"));
            let end = start + s[start..].find("</g>").expect("group closed");
            &s[start..end]
        };
        assert_eq!(series("x-wing").matches("<polyline").count(), 2);
        assert_eq!(series("x25519").matches("<polyline").count(), 1);
        // The legend and the notes: each arm with its median change.
        assert!(s.contains("x-wing: median last/first third \u{2212} 1: \u{2212}16.7 % (3 runs)"));
        assert!(s.contains("x25519: median last/first third \u{2212} 1: \u{b1}0.0 % (3 runs)"));
        assert!(s.contains("drift bound \u{b1}20 %"));
        for (mode, ..) in MODES.iter().filter(|(m, ..)| *m != "ml-kem-768") {
            assert!(
                s.contains(&format!(">{mode}</text>")),
                "legend lacks {mode}"
            );
        }
        assert!(!s.contains("ml-kem-768"));
        // A lone bin between gaps is a dot; non-finite bins are gaps too.
        let mut r = drift_report();
        r.drift[1].mean_bins = vec![Some(1.0), None, Some(f64::NAN), Some(1.0), Some(1.0)];
        let p = drift(&r).expect("drift");
        check(&p);
        assert_eq!(p.svg.matches("<polyline").count(), 3);
        assert_eq!(p.svg.matches("class=\"point\"").count(), 1);
    }

    #[test]
    fn drift_plot_covers_the_bound_and_the_data() {
        let mut r = drift_report();
        r.drift[0].mean_bins[0] = Some(1.6);
        let p = drift(&r).expect("drift");
        check(&p);
        assert!(p.svg.contains(">1.6</text>"));
        assert!(p.svg.contains(">0.6</text>"));
        // A second cell is a second panel, in cell order.
        r.drift.push(drift_row(
            "get-64KiB-c16",
            "x25519",
            0.01,
            vec![Some(1.0); 30],
        ));
        let p = drift(&r).expect("drift");
        check(&p);
        assert_eq!(p.svg.matches("class=\"reference\"").count(), 2);
        let (c16, c4) = (
            p.svg.find(">get-64KiB-c16</text>").expect("c16 panel"),
            p.svg.find(">get-64KiB-c4</text>").expect("c4 panel"),
        );
        assert!(c16 < c4);
    }

    #[test]
    fn no_bins_no_drift_plot() {
        let mut r = drift_report();
        r.drift[0].mean_bins.clear();
        let p = drift(&r).expect("one arm still has bins");
        assert_eq!(p.svg.matches("class=\"series\"").count(), 1);
        assert!(!p.svg.contains("x-wing"));
        r.drift[1].mean_bins.clear();
        assert!(drift(&r).is_none());
        assert!(all(&r).iter().all(|q| q.file != "drift.svg"));
        r.drift[1].mean_bins = vec![None; 30];
        assert!(drift(&r).is_none());
        r.drift.clear();
        assert!(drift(&r).is_none());
        assert!(all(&report()).iter().all(|q| q.file != "drift.svg"));
    }
}
