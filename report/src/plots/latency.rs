//! `latency.svg`, the study's Fig. 2: at one worker, the median latency against object
//! size per arm (top row) and the share of the request spent establishing its key (bottom
//! row), one column per operation; both axes on log scales, since object sizes and
//! latencies span orders of magnitude.

use std::collections::BTreeMap;

use analysis::Report;
use campaign::spec::Operation;
use campaign::units::Size;

use super::{
    Frame, PANEL_H, PANEL_W, Palette, Plot, Scale, Svg, count, fmt_num, legend, legend_layout,
    nice_ticks, text_w, x_axis, y_axis,
};

/// Per arm, (object size in bytes, value) in increasing size.
type Series<'a> = BTreeMap<&'a str, Vec<(f64, f64)>>;

/// The two rows of one operation: median latency (ms) and KEM share (%).
struct Column<'a> {
    op: Option<Operation>,
    latency: Series<'a>,
    share: Series<'a>,
}

fn columns(report: &Report) -> Vec<Column<'_>> {
    let mut by_op: BTreeMap<Option<Operation>, Column<'_>> = BTreeMap::new();
    for k in &report.kem_times {
        let Some(size) = k.object_size.filter(|s| *s > 0) else {
            continue;
        };
        let col = by_op.entry(k.operation).or_insert_with(|| Column {
            op: k.operation,
            latency: Series::new(),
            share: Series::new(),
        });
        #[allow(
            clippy::cast_precision_loss,
            reason = "object sizes are far below 2^52"
        )]
        let x = size as f64;
        if let Some(ms) = k.latency_p50_ms.filter(|v| v.is_finite() && *v > 0.0) {
            col.latency.entry(&k.arm).or_default().push((x, ms));
        }
        if k.kem_share.is_finite() && k.kem_share > 0.0 {
            col.share
                .entry(&k.arm)
                .or_default()
                .push((x, k.kem_share * 100.0));
        }
    }
    let mut out: Vec<Column<'_>> = by_op.into_values().collect();
    for c in &mut out {
        for pts in c.latency.values_mut().chain(c.share.values_mut()) {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }
    out
}

/// Ticks at 1, 2 and 5 times powers of ten inside `[lo, hi]` (both positive); a range
/// holding fewer than three of those (less than a decade) gets linear nice ticks instead.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let t = decade * m;
            if t >= lo && t <= hi {
                v.push(t);
            }
        }
        decade *= 10.0;
    }
    if v.len() < 3 {
        let (_, _, linear) = nice_ticks(lo, hi, 4.0);
        v = linear
            .into_iter()
            .map(|(t, _)| t)
            .filter(|t| *t >= lo && *t <= hi)
            .collect();
    }
    v
}

/// The y range of a panel, widened by a quarter on each side of the log scale, and the
/// x range (object sizes).
fn ranges(series: &Series<'_>) -> Option<((f64, f64), (f64, f64))> {
    let pts: Vec<(f64, f64)> = series.values().flatten().copied().collect();
    let (xs, ys): (Vec<f64>, Vec<f64>) = pts.into_iter().unzip();
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        return None;
    }
    let (x0, x1) = (min(&xs), max(&xs));
    let (y0, y1) = (min(&ys) / 1.25, max(&ys) * 1.25);
    let x = if x1 > x0 {
        (x0, x1)
    } else {
        (x0 / 2.0, x1 * 2.0)
    };
    Some((x, (y0, y1)))
}

/// One panel: the series on log₂ axes (object size across, `y_title` up).
fn log_panel(svg: &mut Svg, f: Frame, title: &str, series: &Series<'_>, labels: &Labels<'_>) {
    svg.text(
        f64::midpoint(f.x0, f.x1),
        f.y0 - 12.0,
        title,
        r#"font-size="13" font-weight="bold" text-anchor="middle""#,
    );
    let Some(((x0, x1), (y0, y1))) = ranges(series) else {
        return;
    };
    let sx = Scale::log2(x0, x1, f.x0 + 18.0, f.x1 - 18.0);
    let sy = Scale::log2(y0, y1, f.y1, f.y0);
    let sizes: Vec<f64> = {
        let mut s: Vec<f64> = series.values().flatten().map(|p| p.0).collect();
        s.sort_by(f64::total_cmp);
        s.dedup();
        s
    };
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "object sizes are whole positive byte counts"
    )]
    let xticks: Vec<(f64, String)> = sizes
        .iter()
        .map(|s| (sx.at(*s), Size(*s as u64).to_string()))
        .collect();
    x_axis(svg, f, &xticks, "object size (log scale)", true);
    let yticks: Vec<(f64, String)> = log_ticks(y0, y1)
        .into_iter()
        .map(|v| (sy.at(v), fmt_num(v)))
        .collect();
    y_axis(svg, f, &yticks, labels.y_title);
    for (arm, pts) in series {
        let colour = labels.palette.get(arm);
        let xy: Vec<(f64, f64)> = pts.iter().map(|(x, y)| (sx.at(*x), sy.at(*y))).collect();
        svg.open(
            &format!(r#"class="series" fill="{colour}""#),
            &format!("{arm} ({title})"),
        );
        if xy.len() > 1 {
            svg.polyline(&xy, &format!(r#"stroke="{colour}" stroke-width="2""#));
        }
        for ((x, y), (px, py)) in pts.iter().zip(&xy) {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "object sizes are whole positive byte counts"
            )]
            let size = Size(*x as u64);
            svg.open(
                "",
                &format!("{arm}, {size}: {}{}", fmt_num(*y), labels.unit),
            );
            svg.circle(
                *px,
                *py,
                3.5,
                r##"class="point" stroke="#ffffff" stroke-width="1""##,
            );
            svg.close();
        }
        svg.close();
    }
}

struct Labels<'a> {
    y_title: &'a str,
    unit: &'a str,
    palette: &'a Palette,
}

/// Median latency and the key establishment's share of the request against object size,
/// at one worker (`latency.svg`). `None` without one-worker cells with stage times.
pub(crate) fn latency_vs_size(report: &Report) -> Option<Plot> {
    let cols = columns(report);
    if cols.is_empty() {
        return None;
    }
    let palette = Palette::of(report);
    let arms: std::collections::BTreeSet<&str> = cols
        .iter()
        .flat_map(|c| c.latency.keys().chain(c.share.keys()).copied())
        .collect();
    let items: Vec<(String, &str)> = arms
        .iter()
        .map(|a| ((*a).to_owned(), palette.get(a)))
        .collect();
    let title = "Latency and the KEM's share of a request against object size, one worker \
                 (study Fig. 2)"
        .to_owned();
    let subtitle = "top: median latency; bottom: key establishment ÷ mean request time; \
                    both on log scales";
    let width = (count(cols.len()) * PANEL_W + 20.0)
        .max(text_w(&title, 16.0) + 40.0)
        .max(text_w(subtitle, 11.0) + 40.0);
    let (_, legend_h) = legend_layout(&items, width - 32.0);
    let top = 70.0 + legend_h;
    let height = top + 2.0 * PANEL_H + 6.0;
    let mut svg = Svg::new(width, height, &title);
    svg.subtitle(width, subtitle);
    legend(&mut svg, 16.0, 70.0, width - 32.0, &items);
    let left = (width - count(cols.len()) * PANEL_W) / 2.0;
    for (i, c) in cols.iter().enumerate() {
        let op = c.op.map_or("requests", Operation::as_str).to_uppercase();
        for (row, series, what, y_title, unit) in [
            (
                0.0,
                &c.latency,
                "median latency",
                "median latency (ms)",
                " ms",
            ),
            (1.0, &c.share, "KEM share", "share of the request (%)", " %"),
        ] {
            let frame = Frame {
                x0: left + count(i) * PANEL_W + 72.0,
                x1: left + count(i + 1) * PANEL_W - 20.0,
                y0: top + row * PANEL_H + 30.0,
                y1: top + (row + 1.0) * PANEL_H - 52.0,
            };
            let labels = Labels {
                y_title,
                unit,
                palette: &palette,
            };
            log_panel(&mut svg, frame, &format!("{op}: {what}"), series, &labels);
        }
    }
    Some(Plot {
        file: "latency.svg",
        title,
        svg: svg.finish(),
    })
}
