//! Multiplicity adjustment (study section IV-C): Holm's step-down procedure over the
//! pre-registered primary family (family-wise error rate), Benjamini–Hochberg for large
//! exploratory tables (false discovery rate).
//!
//! Both return adjusted p-values in the input order, monotone in the raw p-values and
//! capped at 1, as statsmodels' `multipletests(method="holm" | "fdr_bh")`.

/// Indices of `p` in ascending order of p (stable, so ties keep their input order).
fn ascending(p: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..p.len()).collect();
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    idx
}

#[allow(
    clippy::cast_precision_loss,
    reason = "family sizes are far below 2^52"
)]
fn as_f64(n: usize) -> f64 {
    n as f64
}

/// Holm adjustment: `p̃₍ᵢ₎ = max_{j ≤ i} min(1, (m − j + 1) · p₍ⱼ₎)` over the sorted p.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut out = vec![0.0; m];
    let mut running = 0.0_f64;
    for (j, &i) in ascending(p).iter().enumerate() {
        let adj = (as_f64(m - j) * p[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

/// Benjamini–Hochberg adjustment: `p̃₍ᵢ₎ = min_{j ≥ i} min(1, m/j · p₍ⱼ₎)`.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut out = vec![0.0; m];
    let order = ascending(p);
    let mut running = 1.0_f64;
    for (j, &i) in order.iter().enumerate().rev() {
        let adj = (as_f64(m) / as_f64(j + 1) * p[i]).min(1.0);
        running = running.min(adj);
        out[i] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_examples() {
        // Holm (1979)-style example: m = 4.
        let p = [0.01, 0.04, 0.03, 0.005];
        assert_eq!(holm(&p), [0.03, 0.06, 0.06, 0.02]);
        let bh = benjamini_hochberg(&p);
        let want = [0.02, 0.04, 0.04, 0.02];
        for (a, b) in bh.iter().zip(want) {
            assert!((a - b).abs() < 1e-15, "{bh:?}");
        }
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.7]), [0.7]);
    }
}
