//! Ordinary least squares, as statsmodels' `OLS(y, X).fit()` with its default (nonrobust)
//! covariance: the order-and-time check of the study "Benchmarking Post-Quantum Key
//! Encapsulation in S3-Compatible Object Storage under Client Concurrency" (section VI, an
//! exploratory analysis listed in section IV-C): log throughput regressed on the mode,
//! block (repetition) fixed effects, position in the block and elapsed time, whose
//! adjusted mode coefficient is compared with the paired ratio.
//!
//! For `y` (n values) and a design `X` of k named columns (an intercept only if given as a
//! column of ones):
//!
//! - `β = argmin ‖y − Xβ‖²`, solved by Householder QR of `X` (no normal equations, so the
//!   condition number is not squared), `Rβ = Qᵀy`;
//! - residual degrees of freedom `n − k`, `σ² = ‖y − Xβ‖² / (n − k)`;
//! - `se_j = σ · √((XᵀX)⁻¹)_jj` with `(XᵀX)⁻¹ = R⁻¹R⁻ᵀ`; `t_j = β_j / se_j`; two-sided
//!   `p_j = 2·F(−|t_j|)` and the 95 % interval `β_j ± t₀.₉₇₅ · se_j` with `F` the Student t
//!   distribution on `n − k` degrees of freedom;
//! - `R² = 1 − SSR/TSS`, with TSS centred (`Σ(y − ȳ)²`) if the design has a constant —
//!   a column whose values are all equal and nonzero, or, as statsmodels checks, an
//!   implicit one (the constant vector lies in the column space, e.g. a dummy for every
//!   arm) — and uncentred (`Σy²`) otherwise.
//!
//! A design without full column rank is refused with [`Error::Singular`] naming the first
//! column that is (to a relative 1e-10) a linear combination of the columns before it, as
//! is a design with no more observations than columns. (statsmodels would fit either with
//! a pseudo-inverse and report coefficients that are not identified.)

use serde::{Deserialize, Serialize};

use crate::dist::{t_cdf, t_ppf};
use crate::paired::as_f64;
use crate::{Error, Result};

/// A column whose part orthogonal to the columns before it is below this fraction of its
/// norm is taken as a linear combination of them.
const RANK_TOLERANCE: f64 = 1e-10;

/// The constant vector counts as in the column space (an implicit constant) if its part
/// orthogonal to it is below this fraction of its norm `√n`.
const IMPLICIT_CONSTANT_TOLERANCE: f64 = 1e-10;

/// A fitted least-squares regression: one entry per design column, in the order given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ols {
    /// Column names.
    pub names: Vec<String>,
    /// Coefficients `β` (statsmodels `params`).
    pub coef: Vec<f64>,
    /// Standard errors (`bse`).
    pub se: Vec<f64>,
    /// t statistics `β / se` (`tvalues`).
    pub t: Vec<f64>,
    /// Two-sided p-values on `df_resid` degrees of freedom (`pvalues`).
    pub p: Vec<f64>,
    /// 95 % t intervals of the coefficients (`conf_int(0.05)`).
    pub ci95: Vec<(f64, f64)>,
    /// Residual degrees of freedom `n − k`.
    pub df_resid: f64,
    /// `R²` (centred if the design has a constant, module docs; NaN if the total sum of
    /// squares is 0, as statsmodels).
    pub r_squared: f64,
    /// Number of observations.
    pub n: usize,
}

/// Fits `y` on the named `columns` (each as long as `y`; include a column of ones for an
/// intercept). Errors: no columns, a length mismatch or a non-finite value
/// ([`Error::Domain`]); a rank-deficient design or `n ≤ k` ([`Error::Singular`]).
///
/// A perfect fit (zero residual) has zero standard errors, infinite t statistics (NaN for
/// a zero coefficient) and p-values 0 (1 for a zero coefficient).
pub fn ols(y: &[f64], columns: &[(String, Vec<f64>)]) -> Result<Ols> {
    let (n, k) = (y.len(), columns.len());
    if k == 0 {
        return Err(Error::Domain {
            what: "the number of regression columns",
            allowed: "at least 1",
            value: 0.0,
        });
    }
    for (_, x) in columns {
        if x.len() != n {
            return Err(Error::Domain {
                what: "the length of a regression column",
                allowed: "the length of y",
                value: as_f64(x.len()),
            });
        }
    }
    if let Some(&bad) = y
        .iter()
        .chain(columns.iter().flat_map(|(_, x)| x))
        .find(|v| !v.is_finite())
    {
        return Err(Error::Domain {
            what: "a regression value",
            allowed: "finite",
            value: bad,
        });
    }
    if n <= k {
        return Err(Error::Singular {
            what: "a regression design",
            reason: format!(
                "{n} observations for {k} columns leave no residual degrees of freedom"
            ),
        });
    }

    let qr = Qr::factor(columns, y)?;
    let coef = qr.solve();
    let resid: Vec<f64> = (0..n)
        .map(|i| {
            y[i] - columns
                .iter()
                .zip(&coef)
                .map(|((_, x), b)| x[i] * b)
                .sum::<f64>()
        })
        .collect();
    let ssr: f64 = resid.iter().map(|r| r * r).sum();
    let df = as_f64(n - k);
    let sigma = (ssr / df).sqrt();
    let inv_diag = qr.inverse_gram_diagonal();
    let q = t_ppf(0.975, df)?;
    let tss = if has_constant(columns)
        || qr.ones_residual_norm <= IMPLICIT_CONSTANT_TOLERANCE * as_f64(n).sqrt()
    {
        let mean = y.iter().sum::<f64>() / as_f64(n);
        y.iter().map(|v| (v - mean).powi(2)).sum::<f64>()
    } else {
        y.iter().map(|v| v * v).sum::<f64>()
    };
    let mut out = Ols {
        names: columns.iter().map(|(name, _)| name.clone()).collect(),
        coef: Vec::with_capacity(k),
        se: Vec::with_capacity(k),
        t: Vec::with_capacity(k),
        p: Vec::with_capacity(k),
        ci95: Vec::with_capacity(k),
        df_resid: df,
        r_squared: 1.0 - ssr / tss,
        n,
    };
    for (&b, &g) in coef.iter().zip(&inv_diag) {
        let se = sigma * g.sqrt();
        let t = b / se;
        let p = if se == 0.0 {
            if b == 0.0 { 1.0 } else { 0.0 }
        } else {
            (2.0 * t_cdf(-t.abs(), df)?).min(1.0)
        };
        out.coef.push(b);
        out.se.push(se);
        out.t.push(t);
        out.p.push(p);
        out.ci95.push((b - q * se, b + q * se));
    }
    Ok(out)
}

/// Fits `y = a + b·x`: columns `"intercept"` (ones) and `"slope"` (`x`).
pub fn slope(x: &[f64], y: &[f64]) -> Result<Ols> {
    ols(
        y,
        &[
            ("intercept".to_owned(), vec![1.0; x.len()]),
            ("slope".to_owned(), x.to_vec()),
        ],
    )
}

/// An explicit constant: a column whose values are all equal and nonzero.
fn has_constant(columns: &[(String, Vec<f64>)]) -> bool {
    columns.iter().any(|(_, x)| {
        x.first()
            .is_some_and(|&c| c != 0.0 && x.iter().all(|&v| v == c))
    })
}

/// The Householder QR factorisation of a design, with `Qᵀy` and the part of the constant
/// vector orthogonal to the column space.
struct Qr {
    /// The factored columns: `a[j][i]` for `i ≤ j` is `R[i][j]`.
    a: Vec<Vec<f64>>,
    /// `Qᵀy`.
    qty: Vec<f64>,
    /// `‖(I − QQᵀ)·1‖`.
    ones_residual_norm: f64,
}

impl Qr {
    /// Factors the columns (each of length n > k, all finite), refusing a column that is a
    /// linear combination of the ones before it.
    fn factor(columns: &[(String, Vec<f64>)], y: &[f64]) -> Result<Self> {
        let n = y.len();
        let mut a: Vec<Vec<f64>> = columns.iter().map(|(_, x)| x.clone()).collect();
        let mut qty = y.to_vec();
        let mut ones = vec![1.0; n];
        for j in 0..a.len() {
            let original = norm(&columns[j].1);
            let (col, later) = a[j..].split_at_mut(1);
            let col = &mut col[0];
            let alpha = norm(&col[j..]);
            if original == 0.0 || alpha <= RANK_TOLERANCE * original {
                return Err(Error::Singular {
                    what: "a regression design",
                    reason: format!(
                        "column `{}` is a linear combination of the columns before it",
                        columns[j].0
                    ),
                });
            }
            // Reflect col[j..] onto −sign(col[j])·alpha·e₁ with v = x + sign·alpha·e₁.
            let sign = if col[j] >= 0.0 { 1.0 } else { -1.0 };
            let mut v = col[j..].to_vec();
            v[0] += sign * alpha;
            let vv: f64 = v.iter().map(|x| x * x).sum();
            let reflect = |x: &mut [f64]| {
                let s = 2.0 * dot(&v, &x[j..]) / vv;
                for (xi, vi) in x[j..].iter_mut().zip(&v) {
                    *xi -= s * vi;
                }
            };
            for c in later.iter_mut() {
                reflect(c);
            }
            reflect(&mut qty);
            reflect(&mut ones);
            col[j] = -sign * alpha;
            for x in &mut col[j + 1..] {
                *x = 0.0;
            }
        }
        let k = a.len();
        Ok(Self {
            a,
            qty,
            ones_residual_norm: norm(&ones[k..]),
        })
    }

    /// `R[i][j]`, `i ≤ j`.
    fn r(&self, i: usize, j: usize) -> f64 {
        self.a[j][i]
    }

    /// Back substitution `Rβ = (Qᵀy)[..k]`.
    fn solve(&self) -> Vec<f64> {
        let k = self.a.len();
        let mut b = vec![0.0; k];
        for i in (0..k).rev() {
            let s: f64 = (i + 1..k).map(|j| self.r(i, j) * b[j]).sum();
            b[i] = (self.qty[i] - s) / self.r(i, i);
        }
        b
    }

    /// The diagonal of `(XᵀX)⁻¹ = R⁻¹R⁻ᵀ`: the squared norms of the rows of `R⁻¹`.
    fn inverse_gram_diagonal(&self) -> Vec<f64> {
        let k = self.a.len();
        // inv[j] is column j of R⁻¹ (upper triangular: rows 0..=j).
        let mut inv = vec![vec![0.0; k]; k];
        for (j, col) in inv.iter_mut().enumerate() {
            col[j] = 1.0 / self.r(j, j);
            for i in (0..j).rev() {
                let s: f64 = (i + 1..=j).map(|l| self.r(i, l) * col[l]).sum();
                col[i] = -s / self.r(i, i);
            }
        }
        (0..k)
            .map(|i| inv.iter().map(|col| col[i] * col[i]).sum())
            .collect()
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Euclidean norm, scaled so that squares neither overflow nor underflow.
fn norm(x: &[f64]) -> f64 {
    let scale = x.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    if scale == 0.0 {
        return 0.0;
    }
    scale * x.iter().map(|v| (v / scale).powi(2)).sum::<f64>().sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, x: &[f64]) -> (String, Vec<f64>) {
        (name.to_owned(), x.to_vec())
    }

    #[test]
    fn a_line_through_points_on_it_is_exact() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y: Vec<f64> = x.iter().map(|v| 3.0 - 0.5 * v).collect();
        let f = slope(&x, &y).expect("fit");
        assert_eq!(f.names, ["intercept", "slope"]);
        assert!((f.coef[0] - 3.0).abs() < 1e-12 && (f.coef[1] + 0.5).abs() < 1e-12);
        assert!((f.r_squared - 1.0).abs() < 1e-12);
        assert_eq!(f.df_resid, 3.0);
        assert_eq!(f.n, 5);
    }

    #[test]
    fn textbook_slope() {
        // x = 1..5, y = [2, 4, 5, 4, 5]: b = 0.6, a = 2.2, SSR = 2.4, σ² = 0.8,
        // se(b) = √(0.8/10), se(a) = √(0.8·(1/5 + 9/10)), R² = 1 − 2.4/6 = 0.6.
        let f = slope(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 5.0, 4.0, 5.0]).expect("fit");
        assert!((f.coef[0] - 2.2).abs() < 1e-12 && (f.coef[1] - 0.6).abs() < 1e-12);
        assert!((f.se[1] - 0.08_f64.sqrt()).abs() < 1e-12);
        assert!((f.se[0] - 0.88_f64.sqrt()).abs() < 1e-12);
        assert!((f.r_squared - 0.6).abs() < 1e-12);
        assert!((f.t[1] - 0.6 / 0.08_f64.sqrt()).abs() < 1e-9);
        assert!(f.ci95[1].0 < 0.6 && 0.6 < f.ci95[1].1);
    }

    #[test]
    fn through_the_origin_is_uncentred_and_cell_means_are_centred() {
        // y = 2x + e without an intercept: R² against Σy².
        let x = [1.0, 2.0, 3.0, 4.0];
        let y = [2.1, 3.9, 6.2, 7.8];
        let f = ols(&y, &[col("x", &x)]).expect("fit");
        let b = dot(&x, &y) / dot(&x, &x);
        let ssr: f64 = x.iter().zip(&y).map(|(a, v)| (v - b * a).powi(2)).sum();
        assert!((f.coef[0] - b).abs() < 1e-12);
        assert!((f.r_squared - (1.0 - ssr / dot(&y, &y))).abs() < 1e-12);
        // One dummy per arm: an implicit constant, R² against Σ(y − ȳ)²; coefficients are
        // the arm means.
        let y = [1.0, 2.0, 3.0, 5.0, 6.0, 7.0];
        let a = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0];
        let b = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let f = ols(&y, &[col("a", &a), col("b", &b)]).expect("cell means");
        assert!((f.coef[0] - 2.0).abs() < 1e-12 && (f.coef[1] - 6.0).abs() < 1e-12);
        // SSR = 4, TSS = Σ(y − 4)² = 28.
        assert!((f.r_squared - (1.0 - 4.0 / 28.0)).abs() < 1e-12);
    }

    #[test]
    fn shifting_y_moves_only_the_intercept() {
        let x = [0.5, 1.0, 2.5, 3.0, 4.5, 6.0];
        let pos = [0.0, 1.0, 0.0, 2.0, 1.0, 2.0];
        let y = [0.01, -0.02, 0.03, 0.015, -0.01, 0.02];
        let cols = [
            col("intercept", &[1.0; 6]),
            col("x", &x),
            col("position", &pos),
        ];
        let a = ols(&y, &cols).expect("a");
        let shift = 5000.0_f64.ln();
        let raw: Vec<f64> = y.iter().map(|v| v + shift).collect();
        let b = ols(&raw, &cols).expect("b");
        assert!((b.coef[0] - a.coef[0] - shift).abs() < 1e-12);
        for j in 1..3 {
            assert!((b.coef[j] - a.coef[j]).abs() < 1e-12 * a.se[j], "{j}");
            assert!((b.se[j] / a.se[j] - 1.0).abs() < 1e-9, "{j}");
        }
        assert!((b.r_squared - a.r_squared).abs() < 1e-9);
    }

    #[test]
    fn singular_designs_are_refused_naming_the_column() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [1.0, 0.0, 2.0, 1.0, 3.0];
        let twice: Vec<f64> = x.iter().map(|v| 2.0 * v).collect();
        let e = ols(
            &y,
            &[col("one", &[1.0; 5]), col("x", &x), col("2x", &twice)],
        )
        .expect_err("collinear");
        assert!(matches!(e, Error::Singular { .. }));
        assert!(e.to_string().contains("`2x`"), "{e}");
        let e = ols(&y, &[col("zero", &[0.0; 5])]).expect_err("zero column");
        assert!(e.to_string().contains("`zero`"), "{e}");
        let e = ols(&y[..2], &[col("one", &[1.0; 2]), col("x", &x[..2])]).expect_err("n = k");
        assert!(matches!(e, Error::Singular { .. }), "{e}");
        assert!(slope(&x[..4], &y).is_err());
        assert!(ols(&y, &[]).is_err());
        assert!(slope(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0]).is_err());
    }
}
