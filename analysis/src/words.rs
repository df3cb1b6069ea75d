//! The report's figures in words, shared by `report.md` and the operator's status (which
//! links the analysis, not its rendering): numbers to three significant digits, shares as
//! percentages, and one sentence per finding.

use std::collections::BTreeMap;

use stats::Verdict;

use crate::absolute::KemTime;
use crate::model::{Attribution, Report};
use crate::predict::PredictionScore;

/// A figure with three significant digits (`12.3`, `0.0412`, `1486`); `–` when not finite.
pub fn sig3(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    // Decimals for three significant digits: 2 − ⌊log₁₀|x|⌋, at least 0, at most 12 (a
    // finite non-zero f64's decimal exponent is within ±324, so the cast is exact).
    #[allow(
        clippy::cast_possible_truncation,
        reason = "a finite f64's decimal exponent fits an i32"
    )]
    let exponent = x.abs().log10().floor() as i32;
    let decimals = usize::try_from((2 - exponent).clamp(0, 12)).unwrap_or(0);
    format!("{x:.decimals$}")
}

/// A mean with its interval: `12.3 [11.9–12.7]`.
pub fn mean_ci(m: &stats::describe::MeanInterval) -> String {
    format!("{} [{}–{}]", sig3(m.mean), sig3(m.ci.0), sig3(m.ci.1))
}

/// A share as a percentage with three significant digits (`1.41 %`, `0.0120 %`).
pub fn share_pct(x: f64) -> String {
    format!("{} %", sig3(x * 100.0))
}

impl KemTime {
    /// What the arm is: `ml-kem-768 (aws-lc)`, `fast (ml-kem-768, aws-lc)`, or the label.
    pub fn arm_words(&self) -> String {
        match (&self.mode, &self.backend) {
            (Some(m), Some(b)) if *m == self.arm => format!("{m} ({b})"),
            (Some(m), Some(b)) => format!("{} ({m}, {b})", self.arm),
            _ => self.arm.clone(),
        }
    }

    /// `get-64KiB-c1: ml-kem-768 (aws-lc) takes 12.0 µs (95 % CI 11.6–12.4) per GET of
    /// 64KiB at one worker, 1.21 % of the request`.
    pub fn in_words(&self) -> String {
        let k = &self.key_establishment_us;
        format!(
            "{}: {} takes {} µs (95 % CI {}–{}) per {} of {} at one worker, {} of the request",
            self.cell,
            self.arm_words(),
            sig3(k.mean),
            sig3(k.ci.0),
            sig3(k.ci.1),
            self.operation
                .map_or("request", campaign::spec::Operation::as_str)
                .to_uppercase(),
            self.object_size
                .map_or_else(|| "–".into(), |b| campaign::units::Size(b).to_string()),
            share_pct(self.kem_share)
        )
    }
}

impl crate::absolute::CpuSplit {
    /// `get-64KiB-c8-cores1: ml-kem-768 needs 3.10 µs (95 % CI 1.20–5.00) more client CPU
    /// per request than x25519; key establishment at one worker differs by 2.00 µs, 64.5 %
    /// of it`.
    pub fn in_words(&self) -> String {
        let d = &self.extra_cpu_us;
        let head = format!(
            "{}: {} needs {} µs (95 % CI {}–{}) more client CPU per request than {}",
            self.cell,
            self.arm,
            sig3(d.mean),
            sig3(d.ci95.0),
            sig3(d.ci95.1),
            self.against
        );
        match (self.key_recovery_us, self.key_recovery_share) {
            (Some(k), Some(share)) => format!(
                "{head}; key establishment at one worker differs by {} µs, {} of it (the rest: {} µs)",
                sig3(k),
                share_pct(share),
                sig3(d.mean - k)
            ),
            _ => format!("{head}; {}", self.note.as_deref().unwrap_or("no split")),
        }
    }
}

impl Attribution {
    /// `get-64KiB-c500: the x25519-padded control removed 17 % (14–21 %) of ml-kem-768's
    /// deficit against x25519 (P/B 0.960)`.
    pub fn in_words(&self) -> String {
        match &self.share {
            Some(sh) => format!(
                "{}: the {} control removed {:.0} %{} of {}'s deficit against {} (P/B {:.3})",
                self.cell,
                self.control,
                sh.share * 100.0,
                sh.ci90.map_or_else(String::new, |c| format!(
                    " ({:.0}–{:.0} %)",
                    c.0 * 100.0,
                    c.1 * 100.0
                )),
                self.mode,
                self.baseline,
                sh.deficit_ratio
            ),
            None => format!(
                "{}: no share for the {} control of {} against {}: {}",
                self.cell,
                self.control,
                self.mode,
                self.baseline,
                self.note.as_deref().unwrap_or("not computed")
            ),
        }
    }
}

impl PredictionScore {
    /// `get-64KiB-c500 · ml-kem-768 vs x25519: predicted 0.950, measured 0.961 (95 % CI
    /// 0.955–0.967): missed by +1.2 %`.
    pub fn in_words(&self) -> String {
        let head = format!(
            "{} · {} vs {}: predicted {:.3}",
            self.cell, self.arm, self.against, self.predicted
        );
        match (self.observed, self.ci95, self.error, self.held) {
            (Some(o), Some(ci), Some(e), Some(held)) => format!(
                "{head}, measured {o:.3} (95 % CI {:.3}–{:.3}): {} by {:+.1} %",
                ci[0],
                ci[1],
                if held { "held, off" } else { "missed" },
                e * 100.0
            ),
            _ => format!("{head}: {}", self.note.as_deref().unwrap_or("not measured")),
        }
    }
}

impl Report {
    /// Per pair of arms (arm, against), the cells the original interval rule (study Table
    /// XIV) calls equivalent, inconclusive and different.
    pub fn interval_rule_counts(&self) -> BTreeMap<(&str, &str), [usize; 3]> {
        let mut counts: BTreeMap<(&str, &str), [usize; 3]> = BTreeMap::new();
        for e in &self.comparisons {
            let Some(v) = e.interval_rule else { continue };
            let slot = counts.entry((&e.mode, &e.baseline)).or_default();
            slot[match v {
                Verdict::Equivalent => 0,
                Verdict::Inconclusive => 1,
                Verdict::NotEquivalent => 2,
            }] += 1;
        }
        counts
    }

    /// `Study comparison: 3 agree, 9 differ, 6 not comparable (report.md, "Study
    /// comparison")`, or nothing without rows.
    pub fn study_in_words(&self) -> Option<String> {
        use crate::study::Agreement;
        if self.study.is_empty() {
            return None;
        }
        let n = |a: Agreement| self.study.iter().filter(|s| s.agreement == a).count();
        Some(format!(
            "Study comparison: {} agree, {} differ, {} not comparable (report.md, \"Study comparison\")",
            n(Agreement::Agree),
            n(Agreement::Differ),
            n(Agreement::NotComparable)
        ))
    }

    /// `ml-kem-768 vs x25519 by the original interval rule (95 % CI inside ±5 %): 3
    /// equivalent, 0 inconclusive, 0 different`, per pair of arms.
    pub fn interval_rule_in_words(&self) -> Vec<String> {
        let margin = sig3(self.config.analysis.margin * 100.0);
        self.interval_rule_counts()
            .into_iter()
            .map(|((arm, against), [eq, inc, diff])| {
                format!(
                    "{arm} vs {against} by the original interval rule (95 % CI inside ±{margin} %): {eq} equivalent, {inc} inconclusive, {diff} different"
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig3(12.345), "12.3");
        assert_eq!(sig3(0.041_23), "0.0412");
        assert_eq!(sig3(1486.4), "1486");
        assert_eq!(sig3(-4.5678), "-4.57");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(sig3(f64::NAN), "–");
        assert_eq!(share_pct(0.014_1), "1.41 %");
        assert_eq!(share_pct(0.000_12), "0.0120 %");
    }
}
