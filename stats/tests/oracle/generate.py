"""Independent reference values ("oracle") for the Rust `stats` crate.

Writes ``cases.json`` next to this file. Every value in it comes from SciPy or
statsmodels, never from the crate, so the Rust tests compare against an
independent implementation. Keys of ``cases.json``:

``t_cdf``     ``scipy.stats.t.cdf(x, df)`` on a grid of x and df.
``t_ppf``     ``scipy.stats.t.ppf(p, df)`` on a grid of p and df.
``norm_ppf``  ``scipy.stats.norm.ppf(p)``, including p = 1e-6 and 1 - 1e-6.
``paired``    Paired throughput comparisons (synthetic, ~40 data sets plus
              hand-picked edge cases). ``d = ln(mode / baseline)``; mean, sd
              (ddof=1), se = sd / sqrt(n), df = n - 1.
              ``ci90``/``ci95`` are on the ratio scale: the exp of
              ``scipy.stats.t.interval(level, df, loc=mean, scale=se)``,
              asserted to agree with ``mean -+ t.ppf(0.95 resp. 0.975, df) * se``
              to 1e-12.
              ``tost_p``, ``tost_p_lower``, ``tost_p_upper`` are pvalue, p1, p2
              of ``statsmodels.stats.weightstats.ttost_paired(log(mode),
              log(baseline), low=log(1 - margin), upp=log(1 + margin))``,
              asserted to equal ``max(1 - t.cdf(tL, df), t.cdf(tU, df))`` with
              tL = (mean - log(1 - margin)) / se, tU = (mean - log(1 + margin)) / se
              to 1e-10. (statsmodels gets log(mode) - log(baseline), the stored
              ``d`` is log(mode / baseline); the two differ by a few ulps only.)
``holm``/``bh`` ``statsmodels.stats.multitest.multipletests(p, alpha=0.05,
              method="holm" resp. "fdr_bh")[1]``, adjusted p-values in input
              order. The same input vectors are used for both.
``bootstrap`` Percentile bootstrap CI of the MEAN of ``d`` (log scale, not
              exponentiated): ``scipy.stats.bootstrap((d,), np.mean,
              n_resamples=20000, confidence_level=0.90, method="percentile",
              random_state=seed)``. SciPy takes the endpoints with
              ``scipy.stats.quantile(..., method="linear")`` (type 7).
              ``mc_se`` is the standard deviation (ddof=1) of each endpoint
              over 20 reruns with 20 other seeds: the Monte Carlo noise a
              Rust bootstrap (with its own RNG) has to be compared within.
``power``     Sample size of a TOST at true ratio 1, normal approximation:
              delta = log(1 + margin), a = alpha / family,
              n_exact = ((norm.ppf(1 - a) + norm.ppf(1 - (1 - power) / 2)) * sd / delta) ** 2,
              n = max(2, ceil(n_exact)).
              ``statsmodels_n`` is the root in nobs1 of
              ``statsmodels.stats.power.NormalIndPower().power(effect_size=delta/sd,
              nobs1, alpha=a, ratio=0, alternative="larger") = 1 - (1 - power) / 2``
              found with ``scipy.optimize.brentq`` to full precision.
              Why not ``NormalIndPower().solve_power(...)`` directly: with
              ratio=0 (one-sample mode) it computes the right power function,
              but its root search starts at nobs1 >= 2, so for n_exact < 2
              (about half of this grid) it warns ConvergenceWarning and
              returns nan; where it converges it is only accurate to its
              solver tolerance (observed up to ~7e-7 relative). The script
              still calls solve_power and asserts it is within 1e-6 relative
              of n_exact wherever it converges (and that it only fails for
              n_exact < 2).
``fisher``    Two-sided Fisher exact test on hand-picked 2x2 tables (small,
              unbalanced, zero cells and zero margins, ties, thousands of
              counts): ``p`` is ``scipy.stats.fisher_exact(table,
              alternative="two-sided").pvalue``. SciPy counts a table as "at
              most as probable" within 1 + 1e-14 relative, R's fisher.test and
              the crate within 1 + 1e-7; the script asserts that, for every
              table, the sum of ``scipy.stats.hypergeom.pmf`` over the tables
              within 1 + 1e-7 agrees with SciPy's p to 1e-10 (so no case lies
              between the two tolerances).

Data are synthetic and deterministic: one ``numpy.random.default_rng(20261130)``
drives everything, in the order of the sections above. Library versions go
into ``"provenance"``; values may move in the last bits with other versions.

Regenerate (from the repository root):

    .venv/bin/python -m pip install -r requirements.txt
    .venv/bin/python stats/tests/oracle/generate.py
"""

import argparse
import itertools
import json
import math
import platform
import warnings
from pathlib import Path

import numpy as np
import scipy
import scipy.optimize
import scipy.stats
import statsmodels
from scipy.stats import norm, t
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.weightstats import ttost_paired

SEED = 20261130
OUT = Path(__file__).with_name("cases.json")

DFS = [1, 2, 3, 4, 7, 9, 19, 29, 60, 200]
T_CDF_X = [-6, -3.2, -2.0, -1.0, -0.3, 0.0, 0.25, 1.1, 1.833, 2.5, 4.0, 7.5]
T_PPF_P = [0.001, 0.0125, 0.025, 0.05, 0.1, 0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 0.99375]
NORM_PPF_P = [1e-6, 0.001, 0.00625, 0.025, 0.05, 0.2, 0.5, 0.8, 0.9, 0.95, 0.975, 0.99375, 0.999, 1 - 1e-6]

PAIRED_NS = [2, 3, 5, 10, 20, 50]
PAIRED_SHIFTS = [-0.10, -0.04, -0.02, 0.0, 0.01, 0.03, 0.08]
PAIRED_NOISES = [0.005, 0.02, 0.06]
MARGINS = [0.02, 0.05, 0.10]
PAIRED_GRID_CASES = 36

BOOT_RESAMPLES = 20000
BOOT_LEVEL = 0.90
BOOT_MC_RERUNS = 20

POWER_SDS = [0.005, 0.01, 0.02, 0.04, 0.08]
POWER_ALPHA = 0.05
POWER_FAMILIES = [1, 8]
POWER_POWERS = [0.8, 0.9]

FISHER_TIE_TOLERANCE = 1e-7  # R's fisher.test relErr, and the crate's
FISHER_TABLES = [
    # small, hand-checkable
    [[1, 9], [11, 3]], [[0, 5], [5, 0]], [[3, 3], [3, 3]], [[8, 2], [1, 5]],
    [[1, 0], [0, 1]], [[2, 1], [1, 2]], [[1, 2], [3, 4]], [[7, 1], [2, 6]],
    [[10, 0], [0, 10]],
    # zero cells, and zero margins (p = 1)
    [[0, 10], [3, 7]], [[0, 20], [5, 15]], [[4, 0], [6, 10]], [[0, 1], [1, 0]],
    [[0, 0], [0, 0]], [[0, 3], [0, 4]], [[2, 0], [5, 0]], [[0, 12], [0, 0]],
    # unbalanced arms or rates
    [[1, 99], [10, 90]], [[0, 200], [4, 46]], [[2, 48], [0, 500]], [[3, 997], [12, 988]],
    [[25, 5], [2, 1]], [[1, 30], [0, 2]],
    # invalid runs out of a campaign's blocks
    [[0, 40], [3, 37]], [[2, 38], [2, 38]], [[5, 115], [1, 119]],
    # thousands of counts; equal rows make exact ties between mirror tables
    [[120, 880], [160, 840]], [[500, 500], [480, 520]], [[30, 1970], [55, 1945]],
    [[1500, 1500], [1400, 1600]], [[10, 9990], [40, 9960]], [[2000, 1000], [1000, 2000]],
]


def close(a, b, tol):
    """|a - b| <= tol, relative for |values| > 1."""
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


# --------------------------------------------------------------------------- distributions


def t_cdf_cases():
    return [
        {"x": float(x), "df": float(df), "cdf": float(t.cdf(x, df))}
        for df in DFS
        for x in T_CDF_X
    ]


def t_ppf_cases():
    return [
        {"p": float(p), "df": float(df), "ppf": float(t.ppf(p, df))}
        for df in DFS
        for p in T_PPF_P
    ]


def norm_ppf_cases():
    return [{"p": float(p), "ppf": float(norm.ppf(p))} for p in NORM_PPF_P]


# --------------------------------------------------------------------------- paired


def paired_case(name, baseline, mode, margin):
    """One paired comparison: CIs on the ratio scale and the TOST p-values."""
    baseline = np.asarray(baseline, dtype=float)
    mode = np.asarray(mode, dtype=float)
    d = np.log(mode / baseline)
    n = d.size
    mean = float(np.mean(d))
    sd = float(np.std(d, ddof=1))
    se = sd / math.sqrt(n)
    df = n - 1

    case = {"name": name, "mode": mode.tolist(), "baseline": baseline.tolist(),
            "margin": margin, "d": d.tolist(), "mean": mean, "sd": sd, "se": se,
            "df": df}

    for key, level, q_p in (("ci90", 0.90, 0.95), ("ci95", 0.95, 0.975)):
        q = t.ppf(q_p, df)
        lo, hi = mean - q * se, mean + q * se
        s_lo, s_hi = t.interval(level, df, loc=mean, scale=se)
        assert close(lo, s_lo, 1e-12) and close(hi, s_hi, 1e-12), (name, key, lo, s_lo, hi, s_hi)
        case[key] = [math.exp(s_lo), math.exp(s_hi)]

    low, upp = np.log(1 - margin), np.log(1 + margin)
    p, (t1, p1, df1), (t2, p2, df2) = ttost_paired(np.log(mode), np.log(baseline), low=low, upp=upp)
    assert df1 == df2 == df, (name, df1, df2, df)
    t_low = (mean - low) / se
    t_upp = (mean - upp) / se
    by_hand = max(1 - t.cdf(t_low, df), t.cdf(t_upp, df))
    assert abs(p - by_hand) <= 1e-10, (name, p, by_hand)
    case.update(tost_p=float(p), tost_p_lower=float(p1), tost_p_upper=float(p2))
    return case


def synth_baseline(rng, n):
    """n baseline runs: a level log-uniform in 1000..20000 req/s, 3 % lognormal run noise."""
    level = math.exp(rng.uniform(math.log(1000), math.log(20000)))
    return level * np.exp(rng.normal(0.0, 0.03, n))


def exact_log_ratios(rng, n, mean, sd):
    """n values with sample mean `mean` and sample sd `sd` (ddof=1), up to rounding."""
    z = rng.normal(size=n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + sd * z


def paired_cases(rng):
    cases = []
    noise_margin = list(itertools.product(PAIRED_NOISES, MARGINS))
    for i in range(PAIRED_GRID_CASES):
        n = PAIRED_NS[i % len(PAIRED_NS)]
        shift = PAIRED_SHIFTS[i % len(PAIRED_SHIFTS)]
        noise, margin = noise_margin[i % len(noise_margin)]
        baseline = synth_baseline(rng, n)
        mode = baseline * np.exp(shift + rng.normal(0.0, noise, n))
        cases.append(paired_case(f"n{n}_shift{shift:+.2f}_noise{noise}_margin{margin}",
                                 baseline, mode, margin))

    # Hand-picked edge cases, built from exact log-ratios d then mode = baseline * exp(d).
    def edge(name, n, mean, sd, margin):
        baseline = synth_baseline(rng, n)
        mode = baseline * np.exp(exact_log_ratios(rng, n, mean, sd))
        return paired_case(name, baseline, mode, margin)

    cases.append(edge("edge_n2_equivalent", 2, 0.003, 0.004, 0.05))
    cases.append(edge("edge_n2_noisy", 2, 0.01, 0.05, 0.02))
    nearly_constant = edge("edge_nearly_constant_d", 10, 0.012, 1e-8, 0.05)
    assert 0 < nearly_constant["sd"] < 1e-7, nearly_constant["sd"]
    cases.append(nearly_constant)

    # Mean of d at a margin boundary (log scale) +- 1e-9: one of the one-sided
    # p-values is 0.5 up to ~1e-7, on a known side.
    tiny = 1e-9
    for side, bound in (("upper", math.log(1 + 0.05)), ("lower", math.log(1 - 0.05))):
        for sign, label in ((+1, "plus"), (-1, "minus")):
            case = edge(f"edge_mean_at_{side}_bound_{label}_1e-9", 10, bound + sign * tiny, 0.02, 0.05)
            offset = case["mean"] - bound
            assert abs(offset - sign * tiny) < 1e-13, (case["name"], offset)
            cases.append(case)
    return cases


# --------------------------------------------------------------------------- multiple testing


def p_vectors(rng):
    """Input p-value vectors: lengths 1..100, ties, exact 0 and 1, unsorted, large p."""
    uniform20 = rng.uniform(size=20)
    mixed20 = np.concatenate([rng.beta(0.5, 30, size=8), rng.uniform(size=12)])
    mixed20 = np.round(mixed20, 2)  # rounding makes ties (and exact zeros)
    rng.shuffle(mixed20)
    uniform100 = rng.uniform(size=100)
    mixed100 = np.concatenate([rng.beta(0.4, 25, size=25), rng.uniform(size=72), [0.0, 1.0, 1.0]])
    mixed100[10:14] = mixed100[9]  # a run of ties among the small ones
    rng.shuffle(mixed100)
    return [
        [0.03],
        [0.0],
        [1.0],
        [0.01, 0.04],
        [0.04, 0.01],
        [0.6, 0.6],
        [0.9, 0.95],
        [0.02, 0.5, 0.01],
        [0.0, 1.0, 0.5],
        [0.04, 0.04, 0.04],
        [1e-12, 3e-8, 2e-5],
        [0.2, 0.001, 0.04, 0.04, 0.9, 0.013, 0.5, 0.0],
        [0.3, 0.5, 0.7, 0.2, 0.9, 0.15, 0.4, 1.0],
        uniform20.tolist(),
        mixed20.tolist(),
        uniform100.tolist(),
        mixed100.tolist(),
    ]


def adjusted_cases(vectors, method):
    return [
        {"p": [float(x) for x in p],
         "adjusted": [float(x) for x in multipletests(p, alpha=0.05, method=method)[1]]}
        for p in vectors
    ]


# --------------------------------------------------------------------------- bootstrap


def bootstrap_ci(d, seed):
    res = scipy.stats.bootstrap((d,), np.mean, n_resamples=BOOT_RESAMPLES,
                                confidence_level=BOOT_LEVEL, method="percentile",
                                random_state=seed)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def bootstrap_cases(rng):
    samples = [
        rng.normal(0.01, 0.02, size=5),
        rng.normal(-0.03, 0.01, size=10),
        0.01 + 0.03 * (np.exp(rng.normal(size=10)) - 1),  # right-skewed
        rng.normal(0.0, 0.05, size=20),
        np.append(rng.normal(0.005, 0.01, size=19), -0.15),  # one outlier
        rng.normal(0.02, 0.03, size=40),
    ]
    cases = []
    for d in samples:
        seeds = rng.integers(0, 2**32, size=1 + BOOT_MC_RERUNS)
        lo, hi = bootstrap_ci(d, int(seeds[0]))
        reruns = np.array([bootstrap_ci(d, int(s)) for s in seeds[1:]])
        mc_se = reruns.std(axis=0, ddof=1)
        assert lo < np.mean(d) < hi
        cases.append({"d": d.tolist(), "resamples": BOOT_RESAMPLES, "level": BOOT_LEVEL,
                      "ci": [lo, hi], "mc_se": [float(mc_se[0]), float(mc_se[1])]})
    return cases


# --------------------------------------------------------------------------- power


def statsmodels_nobs(effect_size, alpha, target_power):
    """Root in nobs1 of statsmodels' one-sample (ratio=0) one-sided z-test power."""
    analysis = NormalIndPower()

    def excess(nobs1):
        return analysis.power(effect_size=effect_size, nobs1=nobs1, alpha=alpha,
                              ratio=0, alternative="larger") - target_power

    return scipy.optimize.brentq(excess, 1e-9, 1e7, xtol=1e-300, rtol=1e-15, maxiter=500)


def power_cases():
    cases = []
    for sd, margin, family, power in itertools.product(POWER_SDS, MARGINS, POWER_FAMILIES, POWER_POWERS):
        delta = math.log(1 + margin)
        assert delta <= abs(math.log(1 - margin))
        a = POWER_ALPHA / family
        per_side = 1 - (1 - power) / 2
        n_exact = float(((norm.ppf(1 - a) + norm.ppf(per_side)) * sd / delta) ** 2)
        sm_n = statsmodels_nobs(delta / sd, a, per_side)
        assert abs(sm_n - n_exact) <= 1e-9 * n_exact, (sd, margin, family, power, sm_n, n_exact)

        with warnings.catch_warnings():
            # Below its bracket (nobs1 >= 2) solve_power warns and returns nan; checked below.
            warnings.simplefilter("ignore")
            solved = NormalIndPower().solve_power(effect_size=delta / sd, alpha=a, power=per_side,
                                                  ratio=0, alternative="larger")
        if np.isfinite(solved):
            assert abs(solved - n_exact) <= 1e-6 * n_exact, (sd, margin, family, power, solved, n_exact)
        else:
            assert n_exact < 2, (sd, margin, family, power, n_exact)

        cases.append({"sd": sd, "margin": margin, "alpha": POWER_ALPHA, "family": family,
                      "power": power, "n_exact": n_exact, "n": max(2, math.ceil(n_exact)),
                      "statsmodels_n": float(sm_n)})
    return cases


# --------------------------------------------------------------------------- Fisher


def fisher_within_tolerance(table):
    """Sum of the hypergeometric pmf over the tables with the margins of ``table`` at most
    (1 + FISHER_TIE_TOLERANCE) times as probable as it; 1 for a zero margin."""
    (a, b), (c, d) = table
    r1, r2, k = a + b, c + d, a + c
    if 0 in (r1, r2, k, b + d):
        return 1.0
    x = np.arange(max(0, k - r2), min(k, r1) + 1)
    pmf = scipy.stats.hypergeom.pmf(x, r1 + r2, r1, k)
    observed = scipy.stats.hypergeom.pmf(a, r1 + r2, r1, k)
    return min(1.0, float(pmf[pmf <= observed * (1 + FISHER_TIE_TOLERANCE)].sum()))


def fisher_cases():
    cases = []
    for table in FISHER_TABLES:
        p = float(scipy.stats.fisher_exact(table, alternative="two-sided").pvalue)
        by_hand = fisher_within_tolerance(table)
        assert abs(p - by_hand) <= 1e-10 * max(p, 1e-300), (table, p, by_hand)
        assert 0 < p <= 1, (table, p)
        cases.append({"table": table, "p": p})
    return cases


# --------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT,
                    help="where to write the cases (default: cases.json beside this script)")
    out = ap.parse_args().out
    rng = np.random.default_rng(SEED)  # drawn from in this order: paired, p-vectors, bootstrap
    paired = paired_cases(rng)
    vectors = p_vectors(rng)
    cases = {
        "provenance": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "statsmodels": statsmodels.__version__,
            "generated_by": "stats/tests/oracle/generate.py",
        },
        "t_cdf": t_cdf_cases(),
        "t_ppf": t_ppf_cases(),
        "norm_ppf": norm_ppf_cases(),
        "paired": paired,
        "holm": adjusted_cases(vectors, "holm"),
        "bh": adjusted_cases(vectors, "fdr_bh"),
        "bootstrap": bootstrap_cases(rng),
        "power": power_cases(),
        "fisher": fisher_cases(),
    }
    with out.open("w") as f:
        json.dump(cases, f, indent=2, sort_keys=True, allow_nan=False)
        f.write("\n")
    print(f"wrote {out} ({len(paired)} paired, {len(vectors)} p-vectors, "
          f"{len(cases['bootstrap'])} bootstrap, {len(cases['power'])} power, "
          f"{len(cases['fisher'])} Fisher cases)")


if __name__ == "__main__":
    main()
