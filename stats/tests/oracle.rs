//! Every statistic against SciPy/statsmodels.
//!
//! The reference values in `oracle/cases.json` were produced by `oracle/generate.py`
//! (library versions recorded in the file's `provenance`; `make oracle-check` regenerates
//! them and fails on any difference). Deterministic statistics must agree to 1e-9
//! relative; the bootstraps (of a mean, and of the control attribution's share), Monte
//! Carlo procedures with their own random stream, within a few Monte Carlo standard errors
//! of SciPy's.

#![allow(clippy::unwrap_used, reason = "test code")]

use serde::Deserialize;
use stats::attribution::manifest_share;
use stats::contingency::fisher_exact;
use stats::describe::{mean_interval, variation};
use stats::dist::{norm_ppf, t_cdf, t_ppf};
use stats::identity::{IdentityPair, identity};
use stats::multiplicity::{benjamini_hochberg, holm};
use stats::paired::{Paired, RatioInterval, bootstrap_interval, difference_interval, log_ratios};
use stats::power::repetitions_needed;
use stats::queueing::{erlang_c, mmc_response, predict_knee};
use stats::regression::ols;

#[derive(Deserialize)]
struct Cases {
    t_cdf: Vec<TCdf>,
    t_ppf: Vec<TPpf>,
    norm_ppf: Vec<NPpf>,
    paired: Vec<PairedCase>,
    holm: Vec<Adjust>,
    bh: Vec<Adjust>,
    bootstrap: Vec<Boot>,
    power: Vec<Power>,
    fisher: Vec<Fisher>,
    differences: Vec<DifferenceCase>,
    describe: Vec<DescribeCase>,
    identity: Vec<IdentityCase>,
    ols: Vec<OlsCase>,
    erlang: Vec<Erlang>,
    knee_prediction: Vec<KneeCase>,
    attribution: Vec<Attribution>,
    provenance: serde_json::Value,
}

#[derive(Deserialize)]
struct TCdf {
    x: f64,
    df: f64,
    cdf: f64,
}
#[derive(Deserialize)]
struct TPpf {
    p: f64,
    df: f64,
    ppf: f64,
}
#[derive(Deserialize)]
struct NPpf {
    p: f64,
    ppf: f64,
}
#[derive(Deserialize)]
struct PairedCase {
    name: String,
    mode: Vec<f64>,
    baseline: Vec<f64>,
    margin: f64,
    d: Vec<f64>,
    mean: f64,
    sd: f64,
    se: f64,
    df: f64,
    ci90: [f64; 2],
    ci95: [f64; 2],
    tost_p: f64,
    tost_p_lower: f64,
    tost_p_upper: f64,
    difference_p: f64,
}
#[derive(Deserialize)]
struct Adjust {
    p: Vec<f64>,
    adjusted: Vec<f64>,
}
#[derive(Deserialize)]
struct Boot {
    d: Vec<f64>,
    resamples: u32,
    level: f64,
    ci: [f64; 2],
    mc_se: [f64; 2],
}
#[derive(Deserialize)]
struct Power {
    sd: f64,
    margin: f64,
    alpha: f64,
    family: usize,
    power: f64,
    n_exact: f64,
    n: u32,
    statsmodels_n: f64,
}
#[derive(Deserialize)]
struct Fisher {
    table: [[u64; 2]; 2],
    p: f64,
}
#[derive(Deserialize)]
struct DifferenceCase {
    name: String,
    mode: Vec<f64>,
    baseline: Vec<f64>,
    n: usize,
    mean: f64,
    sd: f64,
    ci95: [f64; 2],
    p: f64,
}
#[derive(Deserialize)]
struct Summary {
    n: usize,
    ratio: f64,
    ci90: [f64; 2],
    ci95: [f64; 2],
    sd: f64,
    difference_p: f64,
}
#[derive(Deserialize)]
struct IdentityCase {
    name: String,
    margin: f64,
    tolerance: f64,
    /// `[mode, baseline]` per measure.
    throughput: [Vec<f64>; 2],
    cpu_per_request: [Vec<f64>; 2],
    cores_used: [Vec<f64>; 2],
    observed: Summary,
    cpu: Summary,
    cores: Summary,
    implied_equal_cores: Summary,
    implied: Summary,
    residual: Summary,
    gap: Summary,
    cpu_tost_p: f64,
    holds: bool,
    cpu_predicts_throughput: bool,
}
#[derive(Deserialize)]
struct Column {
    name: String,
    values: Vec<f64>,
}
#[derive(Deserialize)]
struct OlsCase {
    name: String,
    y: Vec<f64>,
    columns: Vec<Column>,
    singular: bool,
    dependent_column: Option<String>,
    #[serde(default)]
    coef: Vec<f64>,
    #[serde(default)]
    se: Vec<f64>,
    #[serde(default)]
    t: Vec<f64>,
    #[serde(default)]
    p: Vec<f64>,
    #[serde(default)]
    ci95: Vec<[f64; 2]>,
    #[serde(default)]
    df_resid: f64,
    #[serde(default)]
    r_squared: f64,
    #[serde(default)]
    n: usize,
}
#[derive(Deserialize)]
struct Erlang {
    servers: u32,
    offered_load: f64,
    service_time: f64,
    rate: f64,
    erlang_c: f64,
    response: f64,
}
#[derive(Deserialize)]
struct KneeCase {
    service_time: f64,
    peak: f64,
    servers: u32,
    capacity: f64,
    rate: f64,
    fraction_of_capacity: f64,
}
#[derive(Deserialize)]
struct Attribution {
    name: String,
    d_pc: Vec<f64>,
    d_pb: Vec<f64>,
    resamples: u32,
    share: f64,
    deficit_ratio: f64,
    residual_ratio: f64,
    ci: [f64; 2],
    mc_se: [f64; 2],
}

fn cases() -> Cases {
    let text = include_str!("oracle/cases.json");
    serde_json::from_str(text).unwrap()
}

/// Relative agreement, with an absolute floor for values at or near zero.
#[track_caller]
fn close(what: &str, got: f64, want: f64, rel: f64) {
    let tol = rel * want.abs().max(1e-300);
    assert!(
        (got - want).abs() <= tol || got == want,
        "{what}: got {got:e}, SciPy/statsmodels {want:e} (rel. error {:e})",
        ((got - want) / want).abs()
    );
}

const REL: f64 = 1e-9;

/// A p-value against the oracle's. Far in the tail a p-value is ill-conditioned in its
/// input: with sd = 1e-8 (edge_nearly_constant_d) the t statistic carries ~1e-10 relative
/// rounding from the data and p ~ t^-df magnifies it. Below 1e-12, far from any α, 1e-6
/// relative still pins the value; elsewhere [`REL`].
#[track_caller]
fn close_p(what: &str, got: f64, want: f64) {
    let rel = if want < 1e-12 { 1e-6 } else { REL };
    close(what, got, want, rel);
}

/// `(mode, baseline)` pairs from a case's two columns.
fn zip_pairs(mode: &[f64], baseline: &[f64]) -> Vec<(f64, f64)> {
    mode.iter().copied().zip(baseline.iter().copied()).collect()
}

#[test]
fn provenance_is_recorded() {
    let c = cases();
    for key in ["scipy", "statsmodels", "numpy", "generated_by"] {
        assert!(c.provenance.get(key).is_some(), "provenance lacks {key}");
    }
}

#[test]
fn t_distribution() {
    let c = cases();
    for k in &c.t_cdf {
        close(
            &format!("t.cdf({}, {})", k.x, k.df),
            t_cdf(k.x, k.df).unwrap(),
            k.cdf,
            REL,
        );
    }
    for k in &c.t_ppf {
        close(
            &format!("t.ppf({}, {})", k.p, k.df),
            t_ppf(k.p, k.df).unwrap(),
            k.ppf,
            REL,
        );
    }
    for k in &c.norm_ppf {
        close(
            &format!("norm.ppf({})", k.p),
            norm_ppf(k.p).unwrap(),
            k.ppf,
            REL,
        );
    }
}

#[test]
fn paired_ratio_intervals_and_tost() {
    for k in &cases().paired {
        let pairs = zip_pairs(&k.mode, &k.baseline);
        let d = log_ratios(&pairs).unwrap();
        for (a, b) in d.iter().zip(&k.d) {
            close(&format!("{}: d", k.name), *a, *b, 1e-12);
        }
        let p = Paired::from_pairs(&pairs).unwrap();
        assert_eq!(p.df, k.df, "{}", k.name);
        close(&format!("{}: mean", k.name), p.mean, k.mean, REL);
        close(&format!("{}: sd", k.name), p.sd, k.sd, REL);
        close(&format!("{}: se", k.name), p.se, k.se, REL);
        let ci90 = p.ratio_interval(0.90).unwrap();
        let ci95 = p.ratio_interval(0.95).unwrap();
        close(&format!("{}: ci90 lo", k.name), ci90.0, k.ci90[0], REL);
        close(&format!("{}: ci90 hi", k.name), ci90.1, k.ci90[1], REL);
        close(&format!("{}: ci95 lo", k.name), ci95.0, k.ci95[0], REL);
        close(&format!("{}: ci95 hi", k.name), ci95.1, k.ci95[1], REL);
        let t = p.tost(k.margin).unwrap();
        for (what, got, want) in [
            ("tost p", t.p, k.tost_p),
            ("tost p lower", t.p_lower, k.tost_p_lower),
            ("tost p upper", t.p_upper, k.tost_p_upper),
        ] {
            close_p(&format!("{}: {what}", k.name), got, want);
        }
        let dp = p.difference_p().unwrap();
        close_p(&format!("{}: difference_p", k.name), dp, k.difference_p);
        let r = RatioInterval::of(&d).unwrap();
        assert_eq!(r.n, k.d.len(), "{}", k.name);
        assert_eq!(
            (r.ci90, r.ci95, r.sd, r.difference_p),
            (ci90, ci95, p.sd, dp)
        );
        close(&format!("{}: ratio", k.name), r.ratio, k.mean.exp(), REL);
    }
}

#[test]
fn holm_and_benjamini_hochberg() {
    let c = cases();
    for (name, f, set) in [
        ("holm", holm as fn(&[f64]) -> Vec<f64>, &c.holm),
        ("fdr_bh", benjamini_hochberg, &c.bh),
    ] {
        for k in set {
            let got = f(&k.p);
            assert_eq!(got.len(), k.adjusted.len());
            for (g, w) in got.iter().zip(&k.adjusted) {
                close(&format!("{name} {:?}", k.p), *g, *w, REL);
            }
        }
    }
}

#[test]
fn bootstrap_within_monte_carlo_error() {
    for (i, k) in cases().bootstrap.iter().enumerate() {
        let (lo, hi) = bootstrap_interval(&k.d, k.resamples, 20_261_130, k.level).unwrap();
        let sd = stats::Paired::from_log_ratios(&k.d).unwrap().sd;
        for (end, got, want, se) in [
            ("lower", lo, k.ci[0], k.mc_se[0]),
            ("upper", hi, k.ci[1], k.mc_se[1]),
        ] {
            // Five Monte Carlo standard errors, with a floor for clustered small-n resamples
            // (n = 5 has only 126 distinct resamples, so SciPy's endpoint can sit in a tight
            // cluster while ours lands in the next one).
            let tol = 5.0 * se + 0.02 * sd;
            assert!(
                (got - want).abs() <= tol,
                "case {i} {end}: got {got}, SciPy {want}, tolerance {tol}"
            );
        }
    }
}

#[test]
fn power_normal_approximation() {
    for k in &cases().power {
        let r = repetitions_needed(k.sd, k.margin, k.alpha, k.family, k.power).unwrap();
        let what = format!(
            "n(sd {}, margin {}, family {}, power {})",
            k.sd, k.margin, k.family, k.power
        );
        close(&what, r.exact, k.n_exact, REL);
        close(&what, r.exact, k.statsmodels_n, REL);
        assert_eq!(r.needed, k.n, "{what}");
    }
}

#[test]
fn fisher_exact_two_sided() {
    let c = cases();
    assert!(c.fisher.len() >= 30, "{} Fisher cases", c.fisher.len());
    for k in &c.fisher {
        let got = fisher_exact(k.table).unwrap();
        close(&format!("fisher_exact({:?})", k.table), got, k.p, REL);
    }
}

#[test]
fn paired_differences() {
    for k in &cases().differences {
        let pairs = zip_pairs(&k.mode, &k.baseline);
        let d = difference_interval(&pairs).unwrap();
        assert_eq!(d.n, k.n, "{}", k.name);
        close(&format!("{}: mean", k.name), d.mean, k.mean, REL);
        close(&format!("{}: ci95 lo", k.name), d.ci95.0, k.ci95[0], REL);
        close(&format!("{}: ci95 hi", k.name), d.ci95.1, k.ci95[1], REL);
        close(&format!("{}: sd", k.name), d.sd, k.sd, REL);
        close(&format!("{}: p", k.name), d.p, k.p, REL);
    }
}

#[derive(Deserialize)]
struct DescribeCase {
    name: String,
    x: Vec<f64>,
    level: f64,
    n: usize,
    mean: f64,
    sd: f64,
    ci: [f64; 2],
    variation: Option<f64>,
}

/// One arm's mean with its t interval and its coefficient of variation (Tables VII, VIII,
/// X; section VI), at 1e-12 relative: the figures are plain moments and one t quantile.
#[test]
fn describe_mean_interval_and_variation() {
    const TIGHT: f64 = 1e-12;
    for k in &cases().describe {
        let m = mean_interval(&k.x, k.level).unwrap();
        assert_eq!(m.n, k.n, "{}", k.name);
        close(&format!("{}: mean", k.name), m.mean, k.mean, TIGHT);
        close(&format!("{}: sd", k.name), m.sd, k.sd, TIGHT);
        close(&format!("{}: ci lo", k.name), m.ci.0, k.ci[0], TIGHT);
        close(&format!("{}: ci hi", k.name), m.ci.1, k.ci[1], TIGHT);
        match k.variation {
            Some(v) => close(
                &format!("{}: variation", k.name),
                variation(&k.x).unwrap(),
                v,
                TIGHT,
            ),
            None => assert!(
                variation(&k.x).is_err(),
                "{}: a zero mean has no CV",
                k.name
            ),
        }
    }
}

#[track_caller]
fn summary(what: &str, got: &RatioInterval, want: &Summary) {
    assert_eq!(got.n, want.n, "{what}: n");
    close(&format!("{what}: ratio"), got.ratio, want.ratio, REL);
    close(&format!("{what}: ci90 lo"), got.ci90.0, want.ci90[0], REL);
    close(&format!("{what}: ci90 hi"), got.ci90.1, want.ci90[1], REL);
    close(&format!("{what}: ci95 lo"), got.ci95.0, want.ci95[0], REL);
    close(&format!("{what}: ci95 hi"), got.ci95.1, want.ci95[1], REL);
    close(&format!("{what}: sd"), got.sd, want.sd, REL);
    close_p(
        &format!("{what}: difference_p"),
        got.difference_p,
        want.difference_p,
    );
}

#[test]
fn cpu_accounting_identity() {
    let c = cases();
    assert!(c.identity.len() >= 4);
    for k in &c.identity {
        let pair = |m: &[Vec<f64>; 2], i: usize| (m[0][i], m[1][i]);
        let pairs: Vec<IdentityPair> = (0..k.throughput[0].len())
            .map(|i| IdentityPair {
                throughput: pair(&k.throughput, i),
                cpu_per_request: pair(&k.cpu_per_request, i),
                cores_used: pair(&k.cores_used, i),
            })
            .collect();
        let id = identity(&pairs, k.margin, k.tolerance).unwrap();
        for (what, got, want) in [
            ("observed", &id.observed, &k.observed),
            ("cpu", &id.cpu, &k.cpu),
            ("cores", &id.cores, &k.cores),
            (
                "implied_equal_cores",
                &id.implied_equal_cores,
                &k.implied_equal_cores,
            ),
            ("implied", &id.implied, &k.implied),
            ("residual", &id.residual, &k.residual),
            ("gap", &id.gap, &k.gap),
        ] {
            summary(&format!("{}: {what}", k.name), got, want);
        }
        close_p(
            &format!("{}: cpu_tost_p", k.name),
            id.cpu_tost_p,
            k.cpu_tost_p,
        );
        assert_eq!(id.holds, k.holds, "{}: holds", k.name);
        assert_eq!(
            id.cpu_predicts_throughput, k.cpu_predicts_throughput,
            "{}: cpu_predicts_throughput",
            k.name
        );
    }
}

#[test]
fn ordinary_least_squares() {
    let c = cases();
    assert!(c.ols.iter().any(|k| k.singular) && c.ols.iter().any(|k| !k.singular));
    for k in &c.ols {
        let columns: Vec<(String, Vec<f64>)> = k
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.values.clone()))
            .collect();
        let fit = ols(&k.y, &columns);
        if k.singular {
            let e = fit.expect_err(&k.name);
            assert!(
                matches!(e, stats::Error::Singular { .. }),
                "{}: {e}",
                k.name
            );
            if let Some(col) = &k.dependent_column {
                assert!(
                    e.to_string().contains(&format!("`{col}`")),
                    "{}: {e}",
                    k.name
                );
            }
            continue;
        }
        let f = fit.unwrap();
        let names: Vec<&str> = k.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(f.names, names, "{}", k.name);
        assert_eq!(f.n, k.n, "{}", k.name);
        assert_eq!(f.df_resid, k.df_resid, "{}", k.name);
        close(&format!("{}: R²", k.name), f.r_squared, k.r_squared, REL);
        for (j, name) in names.iter().enumerate() {
            let what = format!("{} {name}", k.name);
            close(&format!("{what}: coef"), f.coef[j], k.coef[j], REL);
            close(&format!("{what}: se"), f.se[j], k.se[j], REL);
            close(&format!("{what}: t"), f.t[j], k.t[j], REL);
            close(&format!("{what}: ci95 lo"), f.ci95[j].0, k.ci95[j][0], REL);
            close(&format!("{what}: ci95 hi"), f.ci95[j].1, k.ci95[j][1], REL);
            close_p(&format!("{what}: p"), f.p[j], k.p[j]);
        }
        // The order/time designs are stored as log(throughput / 5000 req/s) (generate.py
        // says why); fitted on raw log throughput, only the intercept moves.
        if k.name.starts_with("order_time") {
            let shift = 5000.0_f64.ln();
            let raw: Vec<f64> = k.y.iter().map(|y| y + shift).collect();
            let g = ols(&raw, &columns).unwrap();
            close(
                &format!("{}: raw intercept", k.name),
                g.coef[0],
                k.coef[0] + shift,
                REL,
            );
            close(
                &format!("{}: raw R²", k.name),
                g.r_squared,
                k.r_squared,
                REL,
            );
            for (j, name) in names.iter().enumerate() {
                let what = format!("{} (raw) {name}", k.name);
                close(&format!("{what}: se"), g.se[j], k.se[j], REL);
                if j > 0 {
                    close(&format!("{what}: coef"), g.coef[j], k.coef[j], REL);
                    close(&format!("{what}: t"), g.t[j], k.t[j], REL);
                    close(&format!("{what}: p"), g.p[j], k.p[j], REL);
                }
            }
        }
    }
}

#[test]
fn erlang_c_and_mmc_response() {
    for k in &cases().erlang {
        let what = format!("c = {}, a = {}", k.servers, k.offered_load);
        close(
            &format!("{what}: Erlang C"),
            erlang_c(k.servers, k.offered_load).unwrap(),
            k.erlang_c,
            REL,
        );
        close(
            &format!("{what}: response"),
            mmc_response(k.service_time, k.servers, k.rate).unwrap(),
            k.response,
            REL,
        );
    }
}

#[test]
fn knee_predicted_by_mmc() {
    for k in &cases().knee_prediction {
        let what = format!("S = {}, peak = {}", k.service_time, k.peak);
        let p = predict_knee(k.service_time, k.peak).unwrap();
        assert_eq!(p.servers, k.servers, "{what}");
        close(&format!("{what}: capacity"), p.capacity, k.capacity, REL);
        close(&format!("{what}: rate"), p.rate, k.rate, REL);
        close(
            &format!("{what}: fraction"),
            p.fraction_of_capacity,
            k.fraction_of_capacity,
            REL,
        );
    }
}

#[test]
fn control_attribution_within_monte_carlo_error() {
    for k in &cases().attribution {
        let s = manifest_share(&k.d_pc, &k.d_pb, k.resamples, 20_261_204).unwrap();
        assert_eq!(s.n, k.d_pc.len(), "{}", k.name);
        close(&format!("{}: share", k.name), s.share, k.share, REL);
        close(
            &format!("{}: deficit ratio", k.name),
            s.deficit_ratio,
            k.deficit_ratio,
            REL,
        );
        close(
            &format!("{}: residual ratio", k.name),
            s.residual_ratio,
            k.residual_ratio,
            REL,
        );
        let (lo, hi) = s.ci90.unwrap();
        for (end, got, want, se) in [
            ("lower", lo, k.ci[0], k.mc_se[0]),
            ("upper", hi, k.ci[1], k.mc_se[1]),
        ] {
            // Five Monte Carlo standard errors, with a floor of 2 % of the interval's width
            // for the clustered resamples of small n (as the bootstrap of a mean above).
            let tol = 5.0 * se + 0.02 * (k.ci[1] - k.ci[0]);
            assert!(
                (got - want).abs() <= tol,
                "{} {end}: got {got}, SciPy {want}, tolerance {tol}",
                k.name
            );
        }
    }
}
