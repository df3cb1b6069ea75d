//! The order-and-time check across a campaign (study section VI, "Order and time effects
//! were checked as follows"; issue 20, "across a campaign").
//!
//! Modes are shuffled within each block, so the order of runs cannot favour a mode; the
//! check shows whether order and time moved throughput at all, and how far the paired
//! ratios would move if they were adjusted for it. Per cell with at least one comparison,
//! over the runs of its complete blocks (the blocks the verdicts use), ordinary least
//! squares ([`stats::regression::ols`]) of
//!
//! `ln(throughput) = intercept + mode + block + position + previous run PUT + elapsed hours`
//!
//! - *mode*: a dummy per arm of the cell other than the reference, which is the
//!   comparison's baseline, so that the adjusted ratio `exp(β_mode)` and its 95 % interval
//!   are a coefficient and its interval (`Ols` does not expose the covariance that
//!   `exp(β_mode − β_baseline)` would need with another reference). A cell whose
//!   comparisons have several baselines is fitted once per baseline; the order terms are
//!   the same in every fit (the design spans the same space);
//! - *block*: a dummy per block other than the first (repetition fixed effects);
//! - *position*: the run's position in its block, from 0;
//! - *previous run PUT*: 1 if the run before it in campaign order (every valid run of every
//!   cell, ordered by the time its window opened; the first run has none and gets 0) was a
//!   PUT; left out when it is the same for every run of the cell;
//! - *elapsed hours*: hours from the campaign's earliest window start to the run's.
//!
//! Terms are reported as throughput factors: `exp(β) − 1` per position step, after a PUT,
//! per hour, with the 95 % t interval on the same scale and the two-sided p. A position or
//! time term with p < 0.05 is flagged: a warning and a deviation ([`warnings`],
//! [`deviations`]). The previous-PUT term is a covariate of the study's model and is
//! reported, not flagged. Each term carries its variance inflation factor (`1 / (1 − R²)`
//! of the term regressed on every other column, statsmodels' `variance_inflation_factor`):
//! elapsed time is mostly block plus position, and above [`VIF_LIMIT`] its estimate rests
//! on how the lengths of runs vary within blocks alone, which the words say. That is not a
//! reason to disbelieve it (the planted campaign's time term has a VIF in the thousands and
//! is recovered to a quarter of a percentage point), but it is what to look at when a time
//! term is implausibly large: the lengths of runs may vary with their throughput.
//!
//! A design without full rank (elapsed time is fixed by block and position when every run
//! takes the same time) is refitted without a term: the one the rank failure names, or
//! else elapsed time, then previous-PUT, then position; each dropped term is listed with the
//! reason. A cell whose runs lack a position or start time (rows from a CSV without those
//! columns) or where no order term is estimable gets a note instead of terms.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use stats::regression::{Ols, ols};

use crate::deviations::{Deviation, Kind};
use crate::rows::RunRow;
use campaign::spec::Operation;

/// The level at which a term is significant.
pub const ALPHA: f64 = 0.05;

/// The variance inflation factor above which the words say what a term's estimate rests
/// on (the common rule of thumb: `R² > 0.9` of the term on the other columns).
pub const VIF_LIMIT: f64 = 10.0;

const SECONDS_PER_HOUR: f64 = 3600.0;

/// An order or time term of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Factor {
    /// Position in the block, from 0.
    Position,
    /// The run before, in campaign order, was a PUT.
    PreviousPut,
    /// Hours since the campaign's first window opened.
    ElapsedHours,
}

/// The order of the terms in the design: a rank failure names the last column of a
/// dependent set, so this order makes it name the term [`DROP_ORDER`] drops first.
const FACTORS: [Factor; 3] = [Factor::Position, Factor::PreviousPut, Factor::ElapsedHours];

/// Which term goes first when a design is singular and the failure names none.
const DROP_ORDER: [Factor; 3] = [Factor::ElapsedHours, Factor::PreviousPut, Factor::Position];

impl Factor {
    /// The column name and table label.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Position => "position",
            Self::PreviousPut => "previous run PUT",
            Self::ElapsedHours => "elapsed hours",
        }
    }

    /// What one unit of the term is.
    pub const fn unit(self) -> &'static str {
        match self {
            Self::Position => "per position step",
            Self::PreviousPut => "after a PUT",
            Self::ElapsedHours => "per hour",
        }
    }

    /// Whether a significant estimate is flagged: position and time, the terms issue 20
    /// asks to be flagged.
    pub const fn flagged_when_significant(self) -> bool {
        matches!(self, Self::Position | Self::ElapsedHours)
    }
}

/// One fitted order or time term.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Term {
    /// Which term.
    pub factor: Factor,
    /// The coefficient on the log scale, `β`.
    pub coef: f64,
    /// The throughput change per unit ([`Factor::unit`]) as a fraction: `exp(β) − 1`.
    pub estimate: f64,
    /// 95 % t interval of `estimate`.
    pub ci95: [f64; 2],
    /// Two-sided p of `β = 0`.
    pub p: f64,
    /// `p < 0.05`.
    pub significant: bool,
    /// 95 % t interval of `β` (absent from older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coef_ci95: Option<[f64; 2]>,
    /// Variance inflation factor of the term in the design (absent from older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vif: Option<f64>,
}

impl Term {
    /// Significant, and a position or time term.
    pub fn flagged(&self) -> bool {
        self.significant && self.factor.flagged_when_significant()
    }

    /// Its variance inflation factor is above [`VIF_LIMIT`]: most of the term is the other
    /// columns, and its estimate rests on the rest.
    pub fn collinear(&self) -> bool {
        self.vif.is_some_and(|v| v > VIF_LIMIT)
    }
}

/// Elapsed time over a cell shorter than an hour, said over the cell's own span: a cell
/// whose runs span 14 minutes shows its time term as the change over those minutes, which
/// it measured, instead of the change per hour, an extrapolation that can read as −100 %.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OverSpan {
    /// The span of the cell's runs, minutes.
    pub minutes: f64,
    /// `exp(β × span) − 1`.
    pub estimate: f64,
    /// Its 95 % interval, from `β`'s.
    pub ci95: [f64; 2],
}

/// A term left out of the model, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    /// Which term.
    pub factor: Factor,
    /// Why it is not estimable (the rank failure, or the reason it was not put in).
    pub reason: String,
}

/// A comparison's ratio adjusted for order and time, beside its paired ratio.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adjusted {
    /// Arm label.
    pub mode: String,
    /// The arm it is compared against (the model's reference arm).
    pub baseline: String,
    /// `exp(β_mode)` with the baseline as reference.
    pub ratio: f64,
    /// 95 % t interval of `ratio`.
    pub ci95: [f64; 2],
    /// The comparison's paired ratio (the verdict's estimate).
    pub paired_ratio: f64,
    /// `ratio ÷ paired_ratio − 1`.
    pub difference: f64,
}

/// The order-and-time check of one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderCheck {
    /// Cell id.
    pub cell: String,
    /// Runs in the fit.
    pub runs: usize,
    /// Blocks in the fit.
    pub blocks: usize,
    /// The estimable order and time terms, in design order.
    pub terms: Vec<Term>,
    /// Terms left out, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<Dropped>,
    /// The comparisons of the cell, adjusted.
    pub adjusted: Vec<Adjusted>,
    /// Why the cell has no terms (no position or start times, nothing estimable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Hours from the cell's first run's window start to its last's (absent from older
    /// reports and without start times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_hours: Option<f64>,
}

impl OrderCheck {
    /// The elapsed-time term `t` over the cell's span, when the cell spans less than an
    /// hour (`None` otherwise, and for the other terms).
    pub fn over_span(&self, t: &Term) -> Option<OverSpan> {
        let span = self.span_hours.filter(|h| *h > 0.0 && *h < 1.0)?;
        let [lo, hi] = t.coef_ci95?;
        (t.factor == Factor::ElapsedHours).then(|| OverSpan {
            minutes: span * 60.0,
            estimate: (t.coef * span).exp_m1(),
            ci95: [(lo * span).exp_m1(), (hi * span).exp_m1()],
        })
    }

    /// The largest `|adjusted ÷ paired − 1|` of the cell.
    pub fn max_difference(&self) -> Option<f64> {
        self.adjusted
            .iter()
            .map(|a| a.difference.abs())
            .max_by(f64::total_cmp)
    }
}

/// A comparison of the cell: the arms and the paired ratio.
#[derive(Clone, Copy, Debug)]
pub struct Compared<'a> {
    /// Arm label.
    pub mode: &'a str,
    /// The arm it is compared against.
    pub baseline: &'a str,
    /// The paired ratio.
    pub paired_ratio: f64,
}

/// Where each run sits in the campaign's time, from every valid run of the campaign
/// (invalid attempts are not in the rows, so "the run before" is the valid run before).
/// Runs without a start time are left out of the campaign order.
#[derive(Clone, Debug, Default)]
pub struct Timeline<'a> {
    /// The earliest window start, seconds since the epoch.
    start: Option<f64>,
    /// Per run id: whether the run before it was a PUT (`None`: its operation is unknown).
    after_put: BTreeMap<&'a str, Option<bool>>,
    /// Per run id: the run before it.
    previous: BTreeMap<&'a str, &'a str>,
}

impl<'a> Timeline<'a> {
    /// The campaign order of `rows`: by window start, ties by run id.
    pub fn of(rows: &'a [RunRow]) -> Self {
        let mut timed: Vec<(&RunRow, f64)> = rows
            .iter()
            .filter_map(|r| r.started_unix_s.map(|t| (r, t)))
            .collect();
        timed.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.run_id.cmp(&b.0.run_id)));
        let mut out = Self {
            start: timed.first().map(|(_, t)| *t),
            ..Self::default()
        };
        let mut before: Option<&RunRow> = None;
        for (r, _) in timed {
            let put = before.map_or(Some(false), |b| b.operation.map(|op| op == Operation::Put));
            out.after_put.insert(&r.run_id, put);
            if let Some(b) = before {
                out.previous.insert(&r.run_id, &b.run_id);
            }
            before = Some(r);
        }
        out
    }

    /// Hours from the campaign's first window start to `r`'s.
    pub fn elapsed_hours(&self, r: &RunRow) -> Option<f64> {
        Some((r.started_unix_s? - self.start?) / SECONDS_PER_HOUR)
    }

    /// Whether the run before `r` in campaign order was a PUT (false for the first run;
    /// `None` when `r` has no start time or the run before has no operation).
    pub fn after_put(&self, r: &RunRow) -> Option<bool> {
        self.after_put.get(r.run_id.as_str()).copied().flatten()
    }
}

/// The check of one cell over its runs (those of its complete blocks).
pub fn check(
    cell: &str,
    runs: &[&RunRow],
    compared: &[Compared<'_>],
    timeline: &Timeline<'_>,
) -> OrderCheck {
    let mut out = OrderCheck {
        cell: cell.to_owned(),
        runs: runs.len(),
        blocks: runs.iter().map(|r| r.block).collect::<BTreeSet<_>>().len(),
        terms: Vec::new(),
        dropped: Vec::new(),
        adjusted: Vec::new(),
        note: None,
        span_hours: {
            let hours: Vec<f64> = runs
                .iter()
                .filter_map(|r| timeline.elapsed_hours(r))
                .collect();
            let lo = hours.iter().copied().reduce(f64::min);
            let hi = hours.iter().copied().reduce(f64::max);
            lo.zip(hi).map(|(lo, hi)| hi - lo)
        },
    };
    let design = match Design::new(runs, timeline) {
        Ok(d) => d,
        Err(why) => {
            out.note = Some(why);
            return out;
        }
    };
    let mut factors = FACTORS.to_vec();
    if let Some(reason) = previous_put_missing(runs, timeline) {
        factors.retain(|f| *f != Factor::PreviousPut);
        out.dropped.push(Dropped {
            factor: Factor::PreviousPut,
            reason,
        });
    }
    let mut baselines: Vec<&str> = Vec::new();
    for c in compared {
        if !baselines.contains(&c.baseline) {
            baselines.push(c.baseline);
        }
    }
    // Fit; a term whose throughput factor overflows is dropped (elapsed time first) and
    // the model fitted again without it, so it does not distort the others.
    let fits = loop {
        let fits = match design.fit_all(&baselines, &mut factors, &mut out.dropped) {
            Ok(fits) => fits,
            Err(why) => {
                out.note = Some(why);
                return out;
            }
        };
        if factors.is_empty() {
            out.note = Some("no order or time term is estimable in this cell".into());
            return out;
        }
        let Some((&first, fit)) = baselines.first().and_then(|b| fits.get_key_value(b)) else {
            break fits;
        };
        let (terms, mut unbounded) = terms(fit, &factors, &design.columns(first, &factors));
        if unbounded.is_empty() {
            out.terms = terms;
            break fits;
        }
        let i = unbounded
            .iter()
            .position(|d| d.factor == Factor::ElapsedHours)
            .unwrap_or(0);
        let d = unbounded.swap_remove(i);
        factors.retain(|f| *f != d.factor);
        out.dropped.push(d);
    };
    out.adjusted = compared
        .iter()
        .filter_map(|c| adjusted(fits.get(c.baseline)?, c))
        .collect();
    out
}

/// Why the previous-PUT term cannot be put in: an unknown operation, or the same value
/// for every run of the cell.
fn previous_put_missing(runs: &[&RunRow], timeline: &Timeline<'_>) -> Option<String> {
    if let Some(r) = runs.iter().find(|r| timeline.after_put(r).is_none()) {
        let before = timeline.previous.get(r.run_id.as_str()).copied();
        return Some(format!(
            "the operation of the run before {} ({}) is unknown",
            r.run_id,
            before.unwrap_or("none")
        ));
    }
    let values: BTreeSet<bool> = runs.iter().filter_map(|r| timeline.after_put(r)).collect();
    match values.into_iter().collect::<Vec<_>>()[..] {
        [true] => Some("every run of the cell followed a PUT".into()),
        [false] => Some("no run of the cell followed a PUT".into()),
        _ => None,
    }
}

/// The fitted order terms, in design order, and those whose throughput factor is not
/// finite: a term nearly collinear with the others (elapsed time in a short campaign whose
/// runs are almost evenly spaced) can get a log coefficient in the hundreds, which
/// `exp(β) − 1` cannot show; it is listed as not estimable instead.
fn terms(
    fit: &Ols,
    factors: &[Factor],
    columns: &[(String, Vec<f64>)],
) -> (Vec<Term>, Vec<Dropped>) {
    let (mut terms, mut unbounded) = (Vec::new(), Vec::new());
    for &f in factors {
        let Some(i) = fit.names.iter().position(|n| n == f.as_str()) else {
            continue;
        };
        let (lo, hi) = fit.ci95[i];
        let t = Term {
            factor: f,
            coef: fit.coef[i],
            estimate: fit.coef[i].exp_m1(),
            ci95: [lo.exp_m1(), hi.exp_m1()],
            p: fit.p[i],
            significant: fit.p[i] < ALPHA,
            coef_ci95: Some([lo, hi]),
            vif: vif(columns, f.as_str()),
        };
        if [t.estimate, t.ci95[0], t.ci95[1], t.p]
            .iter()
            .all(|x| x.is_finite())
        {
            terms.push(t);
        } else {
            unbounded.push(Dropped {
                factor: f,
                reason: format!(
                    "nearly collinear with the other terms: ln-scale coefficient {:.3} {} (95 % interval {:.3} to {:.3}) has no finite throughput factor",
                    fit.coef[i],
                    f.unit(),
                    lo,
                    hi
                ),
            });
        }
    }
    (terms, unbounded)
}

/// The variance inflation factor of column `name` among `columns` (which hold the
/// intercept): `1 / (1 − R²)` of it regressed on all the others, as statsmodels'
/// `variance_inflation_factor` computes it; `None` where that regression cannot be fitted
/// or the factor is not finite.
fn vif(columns: &[(String, Vec<f64>)], name: &str) -> Option<f64> {
    let j = columns.iter().position(|(n, _)| n == name)?;
    let others: Vec<(String, Vec<f64>)> = columns
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != j)
        .map(|(_, c)| c.clone())
        .collect();
    let r2 = ols(&columns[j].1, &others).ok()?.r_squared;
    Some(1.0 / (1.0 - r2)).filter(|v| v.is_finite())
}

/// The adjusted ratio of `c` from a fit with `c.baseline` as reference.
fn adjusted(fit: &Ols, c: &Compared<'_>) -> Option<Adjusted> {
    let i = fit.names.iter().position(|n| *n == mode_column(c.mode))?;
    let ratio = fit.coef[i].exp();
    let (lo, hi) = fit.ci95[i];
    if ![ratio, lo.exp(), hi.exp()].iter().all(|x| x.is_finite()) {
        return None;
    }
    Some(Adjusted {
        mode: c.mode.to_owned(),
        baseline: c.baseline.to_owned(),
        ratio,
        ci95: [lo.exp(), hi.exp()],
        paired_ratio: c.paired_ratio,
        difference: ratio / c.paired_ratio - 1.0,
    })
}

fn mode_column(mode: &str) -> String {
    format!("mode {mode}")
}

/// The observations of one cell.
struct Design<'a> {
    /// `ln(throughput)`.
    y: Vec<f64>,
    /// Arm label per run.
    modes: Vec<&'a str>,
    /// Block per run.
    blocks: Vec<u32>,
    /// Each order term's values per run.
    values: BTreeMap<Factor, Vec<f64>>,
}

impl<'a> Design<'a> {
    /// The observations, or why there are none: a run without a position or start time,
    /// or without a positive throughput.
    fn new(runs: &[&'a RunRow], timeline: &Timeline<'_>) -> Result<Self, String> {
        if let Some(r) = runs.iter().find(|r| r.position.is_none()) {
            return Err(format!(
                "no regression: run {} has no position in its block (as rows from a CSV without the position and started_unix_s columns)",
                r.run_id
            ));
        }
        let hours = |r: &RunRow| timeline.elapsed_hours(r);
        if let Some(r) = runs.iter().find(|r| hours(r).is_none()) {
            return Err(format!(
                "no regression: run {} has no start time (as rows from a CSV without the started_unix_s column)",
                r.run_id
            ));
        }
        if let Some(r) = runs
            .iter()
            .find(|r| !r.throughput_rps.is_finite() || r.throughput_rps <= 0.0)
        {
            return Err(format!(
                "no regression: run {} has throughput {}, which has no logarithm",
                r.run_id, r.throughput_rps
            ));
        }
        let col = |f: fn(&RunRow) -> f64| runs.iter().map(|r| f(r)).collect::<Vec<_>>();
        let values = BTreeMap::from([
            (Factor::Position, col(|r| r.position.map_or(0.0, f64::from))),
            (
                Factor::PreviousPut,
                runs.iter()
                    .map(|r| f64::from(u8::from(timeline.after_put(r) == Some(true))))
                    .collect(),
            ),
            (
                Factor::ElapsedHours,
                runs.iter().map(|r| hours(r).unwrap_or(0.0)).collect(),
            ),
        ]);
        Ok(Self {
            y: col(|r| r.throughput_rps.ln()),
            modes: runs.iter().map(|r| r.mode.as_str()).collect(),
            blocks: runs.iter().map(|r| r.block).collect(),
            values,
        })
    }

    /// Intercept, a dummy per arm but `reference`, a dummy per block but the first, and
    /// `factors` in design order.
    fn columns(&self, reference: &str, factors: &[Factor]) -> Vec<(String, Vec<f64>)> {
        let dummy = |hit: &dyn Fn(usize) -> bool| -> Vec<f64> {
            (0..self.y.len())
                .map(|i| f64::from(u8::from(hit(i))))
                .collect()
        };
        let modes: BTreeSet<&str> = self.modes.iter().copied().collect();
        let blocks: BTreeSet<u32> = self.blocks.iter().copied().collect();
        let mut out = vec![("intercept".to_owned(), vec![1.0; self.y.len()])];
        for m in modes.into_iter().filter(|m| *m != reference) {
            out.push((mode_column(m), dummy(&|i| self.modes[i] == m)));
        }
        for b in blocks.into_iter().skip(1) {
            out.push((format!("block {b}"), dummy(&|i| self.blocks[i] == b)));
        }
        for f in FACTORS.into_iter().filter(|f| factors.contains(f)) {
            out.push((f.as_str().to_owned(), self.values[&f].clone()));
        }
        out
    }

    /// Fits with each of `references` as the reference arm: the first decides which terms
    /// are estimable ([`Self::fit_dropping`]), the others span the same space with the
    /// same terms. Errs with the reason when no design is of full rank.
    fn fit_all<'r>(
        &self,
        references: &[&'r str],
        factors: &mut Vec<Factor>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<BTreeMap<&'r str, Ols>, String> {
        let mut fits = BTreeMap::new();
        for (i, &reference) in references.iter().enumerate() {
            let fit = if i == 0 {
                self.fit_dropping(reference, factors, dropped)
            } else {
                ols(&self.y, &self.columns(reference, factors)).map_err(|e| e.to_string())
            };
            let fit =
                fit.map_err(|why| format!("no regression with {reference} as reference: {why}"))?;
            fits.insert(reference, fit);
        }
        Ok(fits)
    }

    /// Fits with `reference` as the reference arm, dropping terms from `factors` (and
    /// recording them in `dropped`) while the design is singular; errs with the reason
    /// when it is singular without any.
    fn fit_dropping(
        &self,
        reference: &str,
        factors: &mut Vec<Factor>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<Ols, String> {
        loop {
            let err = match ols(&self.y, &self.columns(reference, factors)) {
                Ok(fit) => return Ok(fit),
                Err(e) => e,
            };
            let Some(f) = to_drop(&err, factors) else {
                return Err(err.to_string());
            };
            factors.retain(|x| *x != f);
            dropped.push(Dropped {
                factor: f,
                reason: match &err {
                    stats::Error::Singular { reason, .. } => reason.clone(),
                    other => other.to_string(),
                },
            });
        }
    }
}

/// The term to drop after `err`: the one a rank failure names, else the first of
/// [`DROP_ORDER`] still in; none for an error other than a rank failure.
fn to_drop(err: &stats::Error, factors: &[Factor]) -> Option<Factor> {
    let stats::Error::Singular { reason, .. } = err else {
        return None;
    };
    let named = |f: &Factor| reason.contains(&format!("`{}`", f.as_str()));
    factors
        .iter()
        .copied()
        .find(named)
        .or_else(|| DROP_ORDER.into_iter().find(|f| factors.contains(f)))
}

/// The largest adjusted-vs-paired difference of a check, in words.
fn difference_words(c: &OrderCheck) -> String {
    let worst = c
        .adjusted
        .iter()
        .max_by(|a, b| a.difference.abs().total_cmp(&b.difference.abs()));
    worst.map_or_else(
        || "no adjusted ratio".to_owned(),
        |a| {
            format!(
                "the adjusted ratios differ from the paired ones by at most {:.1} % ({} vs {}: adjusted {:.3}, paired {:.3})",
                a.difference.abs() * 100.0,
                a.mode,
                a.baseline,
                a.ratio,
                a.paired_ratio
            )
        },
    )
}

/// A term in words: `position -1.02 % per position step (95 % CI …, p = …)`; elapsed time
/// in a cell shorter than an hour over its span ([`OrderCheck::over_span`]); a collinear
/// term with its VIF and what its estimate rests on.
pub fn term_words(c: &OrderCheck, t: &Term) -> String {
    let words = estimate_words(c, t);
    match t.vif {
        Some(v) if t.collinear() => format!("{words}; {}", vif_words(t.factor, v)),
        _ => words,
    }
}

/// What a collinear term's estimate rests on.
pub fn vif_words(f: Factor, vif: f64) -> String {
    let rest = match f {
        Factor::ElapsedHours => "on how the lengths of runs vary within blocks",
        Factor::Position | Factor::PreviousPut => "on what the other terms leave of it",
    };
    format!("VIF {vif:.0}: mostly block and the other terms, estimated {rest}")
}

fn estimate_words(c: &OrderCheck, t: &Term) -> String {
    match c.over_span(t) {
        Some(o) => format!(
            "{} {:+.2} % over the cell's {:.1} min (95 % CI {:+.2} to {:+.2} %, p = {:.2e}; {:+.2} % {} extrapolated)",
            t.factor.as_str(),
            o.estimate * 100.0,
            o.minutes,
            o.ci95[0] * 100.0,
            o.ci95[1] * 100.0,
            t.p,
            t.estimate * 100.0,
            t.factor.unit()
        ),
        None => format!(
            "{} {:+.2} % {} (95 % CI {:+.2} to {:+.2} %, p = {:.2e})",
            t.factor.as_str(),
            t.estimate * 100.0,
            t.factor.unit(),
            t.ci95[0] * 100.0,
            t.ci95[1] * 100.0,
            t.p
        ),
    }
}

/// One warning per flagged term: the cell, the term, its estimate and p.
pub fn warnings(checks: &[OrderCheck]) -> Vec<String> {
    checks
        .iter()
        .flat_map(|c| {
            c.terms.iter().filter(|t| t.flagged()).map(move |t| {
                format!(
                    "cell {}: order/time term {} is significant; {}",
                    c.cell,
                    term_words(c, t),
                    difference_words(c)
                )
            })
        })
        .collect()
}

/// One deviation per flagged term: the verdicts stand, the term is significant, and how
/// far the adjusted ratios are from the paired ones.
pub fn deviations(checks: &[OrderCheck]) -> Vec<Deviation> {
    checks
        .iter()
        .flat_map(|c| {
            c.terms.iter().filter(|t| t.flagged()).map(move |t| Deviation {
                kind: Kind::OrderEffect,
                subject: c.cell.clone(),
                detail: format!(
                    "{} is significant: order or time moved throughput. The verdicts stand, since modes are shuffled within blocks and the paired ratios compare runs of one block; {}",
                    term_words(c, t),
                    difference_words(c)
                ),
            })
        })
        .collect()
}
