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

/// A figure with at most three significant digits and no trailing zeros (`5`, `2.5`,
/// `0.125`): for settings such as a margin, which were written that way.
pub fn plain(x: f64) -> String {
    let s = sig3(x);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
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
        let margin = plain(self.config.analysis.margin * 100.0);
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

/// A rate in bytes per second in bits (`27.0 Gbit/s`).
fn bits(bits_per_s: f64) -> String {
    let (v, unit) = if bits_per_s >= 1e9 {
        (bits_per_s / 1e9, "Gbit/s")
    } else {
        (bits_per_s / 1e6, "Mbit/s")
    };
    format!("{} {unit}", sig3(v))
}

/// The testbed's baselines in a line: `network 27.0 Gbit/s up, 26.6 Gbit/s down (iperf
/// 3.12, 2 streams, 1 s); disk 1690 MB/s in 1MiB direct writes, 0.599 ms each
/// (fio-3.33); round trip 0.041 ms (ping, 5 answers)`, a probe not taken with its reason.
pub fn baselines(b: &crate::testbed::Baselines) -> String {
    use crate::testbed::Probe;
    let network = match &b.network {
        Probe::Measured(n) => format!(
            "network {} up, {} down ({}, {} streams, {} s)",
            bits(n.upload_bits_per_s),
            bits(n.download_bits_per_s),
            n.tool,
            n.streams,
            n.seconds
        ),
        Probe::NotMeasured(why) => format!("network not measured ({why})"),
    };
    let disk = match &b.disk {
        Probe::Measured(d) => format!(
            "disk {} MB/s in {} {} writes, {} ms each ({})",
            sig3(d.write_bytes_per_s / 1e6),
            campaign::units::Size(d.block_bytes),
            if d.direct { "direct" } else { "buffered" },
            sig3(d.write_latency_ms),
            d.tool
        ),
        Probe::NotMeasured(why) => format!("disk not measured ({why})"),
    };
    let rtt = match &b.round_trip {
        Probe::Measured(r) => format!(
            "round trip {} ms (ping, {} answers)",
            sig3(r.avg_ms),
            r.count
        ),
        Probe::NotMeasured(why) => format!("round trip not measured ({why})"),
    };
    format!("{network}; {disk}; {rtt}")
}

impl crate::testbed::Usage {
    /// The share of the ceiling used: `97.1 % [95.0–99.2 %]` (no interval with one run).
    pub fn share_words(&self) -> String {
        match self.ci {
            Some((lo, hi)) => format!(
                "{} [{}–{} %]",
                share_pct(self.mean),
                sig3(lo * 100.0),
                sig3(hi * 100.0)
            ),
            None => share_pct(self.mean),
        }
    }

    /// `network 97.1 % [95.0–99.2 %]`.
    pub fn in_words(&self) -> String {
        format!("{} {}", self.resource.as_str(), self.share_words())
    }
}

impl crate::testbed::CellBottleneck {
    /// `get-1MiB-c8: network-bound (network 97.1 % [95.0–99.2 %] of its ceiling; client
    /// 41.0 %, …)`, or `latency-bound: no ceiling reached (…)`.
    pub fn in_words(&self) -> String {
        let others = |skip: Option<crate::testbed::Resource>| {
            self.usage
                .iter()
                .filter(|u| Some(u.resource) != skip)
                .map(crate::testbed::Usage::in_words)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self.label.and_then(|l| self.usage_of(l)) {
            Some(u) => {
                let rest = others(self.label);
                format!(
                    "{}: {}-bound ({} of its ceiling{})",
                    self.cell,
                    u.resource.as_str(),
                    u.in_words(),
                    if rest.is_empty() {
                        String::new()
                    } else {
                        format!("; {rest}")
                    }
                )
            }
            None => format!(
                "{}: latency-bound, no ceiling reached ({})",
                self.cell,
                if self.usage.is_empty() {
                    "none judged".to_owned()
                } else {
                    others(None)
                }
            ),
        }
    }
}

/// The bottlenecks in a line for the status: `bottlenecks: 2 cells client-bound, 1
/// network-bound, 3 latency-bound` (`None` without cells).
pub fn bottleneck_counts(cells: &[crate::testbed::CellBottleneck]) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for c in cells {
        *counts.entry(c.label_word()).or_default() += 1;
    }
    let words = crate::testbed::Resource::ALL
        .map(crate::testbed::Resource::as_str)
        .into_iter()
        .chain(["latency"]);
    let parts: Vec<String> = words
        .filter_map(|w| counts.get(w).map(|n| (w, n)))
        .enumerate()
        .map(|(i, (w, n))| {
            let cells = if i == 0 {
                if *n == 1 { " cell" } else { " cells" }
            } else {
                ""
            };
            format!("{n}{cells} {w}-bound")
        })
        .collect();
    (!parts.is_empty()).then(|| format!("bottlenecks: {}", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_figures_drop_trailing_zeros() {
        assert_eq!(plain(5.0), "5");
        assert_eq!(plain(2.5), "2.5");
        assert_eq!(plain(0.125), "0.125");
        assert_eq!(plain(120.0), "120");
    }

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
