//! Fisher's exact test on a 2×2 table: is a campaign's invalid-run rate the same in two
//! compared arms?
//!
//! The study compares modes within blocks and excludes invalid runs (a stalled or failed
//! run yields no throughput). If one arm loses runs more often than the other, exclusion
//! depends on the mode and biases the paired comparison, so pqbench flags a campaign whose
//! invalid-run rate differs between the two arms of a comparison. This module supplies the
//! test behind that flag.
//!
//! For the table `[[a, b], [c, d]]` (rows: the two arms; columns: invalid, valid), the test
//! conditions on both margins: with rows `r₁ = a + b`, `r₂ = c + d`, first column
//! `k = a + c` and `N = r₁ + r₂`, the count `x` in the top-left cell is hypergeometric,
//! `P(x) = C(r₁, x) · C(r₂, k − x) / C(N, k)` for `max(0, k − r₂) ≤ x ≤ min(k, r₁)`.
//! The two-sided p-value is the sum of `P(x)` over every table with these margins whose
//! probability is at most the observed one's, `P(x) ≤ P(a) · (1 + 10⁻⁷)`.
//!
//! The relative tolerance `10⁻⁷` absorbs rounding, so that tables exactly as probable as
//! the observed one (e.g. the mirror image when `r₁ = r₂`) are counted. It is the one of
//! R's `fisher.test`. SciPy's `scipy.stats.fisher_exact(table, alternative="two-sided")`
//! (1.17, the oracle of `tests/oracle.rs`) uses `1 + 10⁻¹⁴` on its more precise
//! probabilities; the two differ only if some table's probability lies between those
//! tolerances above the observed one, and the oracle's generator asserts that none of its
//! cases does. As in SciPy, a table with a zero margin (an all-zero table included) has
//! p = 1.
//!
//! Probabilities are computed from log-factorials (`statrs`' `ln_factorial`), so counts
//! in the thousands neither overflow nor underflow; the cost is linear in the smaller
//! margin.

use statrs::function::factorial::ln_factorial;

use crate::{Error, Result};

/// Relative tolerance for "at most as probable as the observed table" (R's `relErr`).
const TIE_TOLERANCE: f64 = 1e-7;

/// The largest table total accepted: `2⁵³`, beyond which counts are not exact in `f64`.
const MAX_TOTAL: u64 = 1 << 53;

/// The hypergeometric distribution of the top-left cell of a 2×2 table with fixed margins.
struct Margins {
    /// First row sum `r₁`.
    row1: u64,
    /// Second row sum `r₂`.
    row2: u64,
    /// First column sum `k`.
    col1: u64,
}

impl Margins {
    /// `ln P(x)`, up to the constant `−ln C(N, k)` (it cancels in comparisons).
    fn ln_weight(&self, x: u64) -> f64 {
        ln_choose(self.row1, x) + ln_choose(self.row2, self.col1 - x)
    }

    /// `ln C(N, k)`.
    fn ln_norm(&self) -> f64 {
        ln_choose(self.row1 + self.row2, self.col1)
    }

    /// The possible values of the top-left cell.
    fn support(&self) -> std::ops::RangeInclusive<u64> {
        self.col1.saturating_sub(self.row2)..=self.col1.min(self.row1)
    }
}

fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// The two-sided p-value of Fisher's exact test on `[[a, b], [c, d]]`, in [0, 1].
///
/// Sums the hypergeometric probabilities of all tables with the observed margins that are
/// at most as probable as the observed table (module docs). A table with a zero row or
/// column sum gives 1. Fails only if the cells add up to more than `2⁵³`.
pub fn fisher_exact(table: [[u64; 2]; 2]) -> Result<f64> {
    let [[a, b], [c, d]] = table;
    let total = [a, b, c, d].iter().map(|&v| u128::from(v)).sum::<u128>();
    if total > u128::from(MAX_TOTAL) {
        #[allow(clippy::cast_precision_loss, reason = "only reported")]
        let value = total as f64;
        return Err(Error::Domain {
            what: "a 2×2 table's total",
            allowed: "at most 2^53",
            value,
        });
    }
    let m = Margins {
        row1: a + b,
        row2: c + d,
        col1: a + c,
    };
    if [m.row1, m.row2, m.col1, b + d].contains(&0) {
        return Ok(1.0);
    }
    let cutoff = m.ln_weight(a) + TIE_TOLERANCE.ln_1p();
    let ln_norm = m.ln_norm();
    let p: f64 = m
        .support()
        .map(|x| m.ln_weight(x))
        .filter(|&w| w <= cutoff)
        .map(|w| (w - ln_norm).exp())
        .sum();
    Ok(p.min(1.0))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::fisher_exact;

    /// Within 1e-10 relative: log-factorials of counts in the thousands carry ~1e-12.
    #[track_caller]
    fn assert_p(table: [[u64; 2]; 2], want: f64) {
        let got = fisher_exact(table).unwrap();
        assert!(
            (got - want).abs() <= 1e-10 * want.max(1e-300),
            "{table:?}: got {got:e}, want {want:e}"
        );
    }

    #[test]
    fn hand_checkable_tables() {
        // Margins 5, 5 / 5, 5: only the two extreme tables are as improbable, each
        // 1/C(10, 5) = 1/252.
        assert_p([[0, 5], [5, 0]], 2.0 / 252.0);
        assert_p([[5, 0], [0, 5]], 2.0 / 252.0);
        // Rows 10, 14, first column 12: weights C(10, x)·C(14, 12 − x) of x = 0..=10 are
        // 91, 3640, 45045, …, 45045, 3640, 91 (x = 0, 1, 2, …, 8, 9, 10); the observed
        // x = 1 and the three tables no more probable sum to 7462 of C(24, 12) = 2704156.
        // SciPy: 0.0027594561852200836.
        let tails = 91.0 + 3640.0 + 3640.0 + 91.0;
        let c24 = 2_704_156.0;
        assert_p([[1, 9], [11, 3]], tails / c24);
        assert_p([[1, 9], [11, 3]], 0.002_759_456_185_220_083_6);
        // SciPy's docstring example: 0.034965034965034975.
        assert_p([[8, 2], [1, 5]], 0.034_965_034_965_034_975);
    }

    #[test]
    fn the_most_probable_table_gives_one() {
        assert_eq!(fisher_exact([[3, 3], [3, 3]]).unwrap(), 1.0);
        assert_p([[1, 1], [1, 1]], 1.0);
        assert_p([[500, 500], [500, 500]], 1.0);
    }

    #[test]
    fn a_zero_margin_gives_one() {
        for table in [
            [[0, 0], [0, 0]],
            [[0, 3], [0, 4]],
            [[2, 0], [5, 0]],
            [[0, 0], [4, 1]],
            [[2, 7], [0, 0]],
        ] {
            assert_eq!(fisher_exact(table).unwrap(), 1.0, "{table:?}");
        }
    }

    #[test]
    fn symmetric_in_rows_and_columns() {
        let t = [[120, 880], [160, 840]];
        let p = fisher_exact(t).unwrap();
        assert_p([[160, 840], [120, 880]], p);
        assert_p([[880, 120], [840, 160]], p);
        assert_p([[120, 160], [880, 840]], p);
        // SciPy: 0.011861898653907299.
        assert_p(t, 0.011_861_898_653_907_299);
    }

    #[test]
    fn large_counts_neither_overflow_nor_underflow() {
        let p = fisher_exact([[3000, 7000], [3000, 7000]]).unwrap();
        assert!((p - 1.0).abs() < 1e-9, "{p}");
        let p = fisher_exact([[10, 9990], [40, 9960]]).unwrap();
        assert!(p > 0.0 && p < 1e-4, "{p}");
    }

    #[test]
    fn an_oversized_table_is_an_error() {
        assert!(fisher_exact([[u64::MAX, 1], [0, 0]]).is_err());
        assert!(fisher_exact([[1 << 52, 1 << 52], [1, 0]]).is_err());
    }
}
