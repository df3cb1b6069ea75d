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
              ``difference_p`` is ``scipy.stats.ttest_1samp(d, 0).pvalue`` (two-sided
              p of mean d = 0), asserted to equal ``2 * t.cdf(-|mean / se|, df)``
              to 1e-12 relative.
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

``differences`` Paired DIFFERENCES mode - baseline (stage times in microseconds,
              values may be zero or negative; not logs). ``d = mode - baseline``;
              ``mean``, ``sd`` (ddof=1); ``ci95`` is ``scipy.stats.t.interval(0.95,
              n - 1, loc=mean, scale=scipy.stats.sem(d))``; ``p`` is
              ``scipy.stats.ttest_rel(mode, baseline).pvalue``.
``describe``  One arm's absolute figures over its runs, unpaired (Tables VII, VIII, X;
              section VI): ``x`` per-run values (key-establishment µs, server CPU µs per
              request, RSS growth bytes that may be zero or negative, throughput), ``mean``,
              ``sd`` (ddof=1), ``ci`` = ``scipy.stats.t.interval(level, n - 1, loc=mean,
              scale=scipy.stats.sem(x))`` at ``level`` (0.95, and 0.90 for one set),
              ``variation`` = ``scipy.stats.variation(x, ddof=1)`` (null for a zero mean).
``identity``  The CPU accounting identity on synthetic runs (n = 5, 10, 20 pairs
              with nearly equal cores and CPU ratios 1.046, 0.99, 2.1, and one
              n = 10 set whose mode uses 5 % more cores): per run, cores used U
              (about 15.9) and CPU per request C (about 1.71 ms) are drawn, and
              throughput T = U / C times a lognormal measurement factor (sd
              0.003); margin 0.05, tolerance 0.02. From ``d_obs = log(T_m / T_b)``,
              ``d_cpu = log(C_m / C_b)``, ``d_cores = log(U_m / U_b)`` the seven
              log-ratio series
              ``observed`` = d_obs, ``cpu`` = d_cpu, ``cores`` = d_cores,
              ``implied_equal_cores`` = -d_cpu, ``implied`` = d_cores - d_cpu,
              ``residual`` = d_obs - (d_cores - d_cpu), ``gap`` = d_obs + d_cpu
              are each summarised as ``n``, ``ratio`` = exp(mean), ``ci90``/``ci95``
              = exp of ``scipy.stats.t.interval(level, n - 1, loc=mean,
              scale=scipy.stats.sem(x))``, ``sd`` (ddof=1) and ``difference_p`` =
              ``scipy.stats.ttest_1samp(x, 0).pvalue``. ``cpu_tost_p`` is
              ``ttost_paired(log(C_m), log(C_b), low=log(1 - margin),
              upp=log(1 + margin))[0]``. ``holds`` / ``cpu_predicts_throughput``:
              whether the 90 % interval of ``residual`` / ``gap`` lies inside
              [1 - tolerance, 1 + tolerance] (the script asserts that no endpoint
              is within 1e-6 of a bound, so the booleans are not borderline).
``ols``       Ordinary least squares: ``statsmodels.api.OLS(y, X).fit()``
              (nonrobust) on named columns: ``coef`` = params, ``se`` = bse,
              ``t`` = tvalues, ``p`` = pvalues, ``ci95`` = conf_int(0.05),
              ``df_resid``, ``r_squared`` = rsquared, ``n`` = nobs. Designs: a
              simple slope; the order/time regression of a campaign (log
              throughput relative to 5000 req/s on treatment-coded arm dummies,
              block fixed effects, position in block and wall-clock minutes since
              the first run) with 2 arms x 10 blocks and 3 arms x 8 blocks (the
              reference rate only moves the intercept; raw log throughput, about
              8.5, made the small coefficients sensitive to its last bits at the
              1e-12 level compare.py checks); a regression through the origin
              (statsmodels' k_constant 0, uncentred R^2) and a cell-means design
              (a dummy per arm, no intercept column: an implicit constant, centred
              R^2), the script asserting statsmodels' ``k_constant`` for each.
              Cases with ``singular: true`` are rank-deficient designs (a column
              twice another; an evenly ticking clock that is a linear combination
              of the intercept, block dummies and position; no more observations
              than columns) and hold no fit (statsmodels would fit them with a
              pseudo-inverse): ``dependent_column`` is the first column j with
              ``numpy.linalg.matrix_rank(X[:, :j + 1]) <= j`` (null if every
              leading block has full rank, i.e. only n <= k makes it singular).
``erlang``    M/M/c by an independent route: with a = offered load,
              P = ``scipy.stats.poisson.pmf(c, a)`` * c / (c - a) and
              Q = ``scipy.stats.poisson.cdf(c - 1, a)``, ``erlang_c`` = P / (P + Q)
              (the e^-a factors cancel); ``response`` = S + erlang_c * S / (c - a)
              at ``rate`` = a / S; for c in {1, 2, 5, 10, 32, 256} and loads
              a / c in {0.05, 0.3, 0.5, 0.8, 0.95, 0.999}, S = 0.002 s.
``knee_prediction`` For (service_time S, peak) pairs: ``servers`` c = max(1,
              floor(peak * S + 0.5)) (no pair lies within 1e-6 of a half),
              ``capacity`` = c / S, ``rate`` = the root of response(lambda) - 2 S
              on (0, capacity) by ``scipy.optimize.brentq`` (rtol 4 eps), with the
              response computed as in ``erlang``; ``fraction_of_capacity`` =
              rate / capacity.
``attribution`` Control attribution: per block log throughputs of P1, C2, B2
              (block effect + arm level + noise) give ``d_pc = log(P1 / C2)`` and
              ``d_pb = log(P1 / B2)``; ``share`` = 1 - mean(d_pc) / mean(d_pb),
              ``deficit_ratio`` = exp(mean(d_pb)), ``residual_ratio`` =
              exp(mean(d_pc)); ``ci`` is ``scipy.stats.bootstrap((d_pc, d_pb),
              lambda a, b, axis=-1: 1 - mean(a, axis) / mean(b, axis),
              paired=True, vectorized=True, n_resamples=20000,
              confidence_level=0.90, method="percentile", random_state=seed)``
              (seed drawn from the section's generator) and ``mc_se`` the
              standard deviation (ddof=1) of each endpoint over 20 reruns with 20
              other seeds, as in ``bootstrap``. Includes the study-like case
              (n = 10, P1/C2 about 0.967, P1/B2 about 0.960, per-run log noise
              0.002, so sd of d about 0.003).

Data are synthetic and deterministic. One ``numpy.random.default_rng(20261130)``
drives the sections ``paired`` to ``fisher``, in the order above (``difference_p``
draws nothing). Each later section has its own generator, so adding one moves no
existing value: ``differences`` ``default_rng(20261201)``, ``identity``
``default_rng(20261202)``, ``ols`` ``default_rng(20261203)``, ``attribution``
``default_rng(20261204)``; ``erlang`` and ``knee_prediction`` draw nothing.
Library versions go into ``"provenance"``; values may move in the last bits with
other versions.

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
import statsmodels.api as sm
from scipy.stats import norm, t
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.weightstats import ttost_paired

SEED = 20261130
DIFFERENCES_SEED = 20261201
IDENTITY_SEED = 20261202
OLS_SEED = 20261203
ATTRIBUTION_SEED = 20261204
DESCRIBE_SEED = 20261205
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


def close_rel(a, b, tol):
    """|a - b| <= tol relative to the larger magnitude."""
    return abs(a - b) <= tol * max(abs(a), abs(b))


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

    difference_p = float(scipy.stats.ttest_1samp(d, 0.0).pvalue)
    by_hand = float(2 * t.cdf(-abs(mean / se), df))
    assert close_rel(difference_p, by_hand, 1e-12), (name, difference_p, by_hand)
    case["difference_p"] = difference_p
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


# --------------------------------------------------------------------------- differences


def difference_case(name, mode, baseline):
    mode = np.asarray(mode, dtype=float)
    baseline = np.asarray(baseline, dtype=float)
    d = mode - baseline
    n = d.size
    mean = float(np.mean(d))
    lo, hi = t.interval(0.95, n - 1, loc=mean, scale=scipy.stats.sem(d))
    return {"name": name, "mode": mode.tolist(), "baseline": baseline.tolist(), "n": n,
            "mean": mean, "sd": float(np.std(d, ddof=1)), "ci95": [float(lo), float(hi)],
            "p": float(scipy.stats.ttest_rel(mode, baseline).pvalue)}


def difference_cases():
    rng = np.random.default_rng(DIFFERENCES_SEED)
    cases = []
    # Stage times in microseconds at one worker (Table XVI): a level, a true
    # difference, run-to-run noise.
    for n, level, shift, noise in [(5, 31.0, 6.4, 1.2), (5, 52.0, 4.6, 0.8),
                                   (5, 48.0, -3.1, 2.0), (10, 210.0, 0.0, 4.0),
                                   (20, 1710.0, 79.0, 25.0), (2, 12.0, 16.2, 3.0)]:
        baseline = level + rng.normal(0.0, noise, n)
        mode = baseline + shift + rng.normal(0.0, noise, n)
        cases.append(difference_case(f"n{n}_level{level}_shift{shift:+}", mode, baseline))
    # Values at and below zero (e.g. a difference of differences).
    cases.append(difference_case("zeros_and_negatives", [0.0, -1.5, 2.0, -0.25, 0.0, 3.5],
                                 [0.0, -2.0, 0.5, 0.0, -1.0, 1.5]))
    return cases


# --------------------------------------------------------------------------- describe


def describe_case(name, x, level=0.95):
    x = np.asarray(x, dtype=float)
    n = x.size
    mean = float(np.mean(x))
    lo, hi = t.interval(level, n - 1, loc=mean, scale=scipy.stats.sem(x))
    variation = None if mean == 0.0 else float(scipy.stats.variation(x, ddof=1))
    return {"name": name, "x": x.tolist(), "level": level, "n": n, "mean": mean,
            "sd": float(np.std(x, ddof=1)), "ci": [float(lo), float(hi)],
            "variation": variation}


def describe_cases():
    rng = np.random.default_rng(DESCRIBE_SEED)
    cases = []
    # Key establishment per request at one worker, µs (Table VIII: 45 to 1,486 µs through
    # the study's binding; far less natively), five or ten runs.
    for n, level, noise in [(5, 45.0, 0.9), (5, 89.0, 2.1), (5, 1486.0, 30.0),
                            (10, 12.5, 0.4), (2, 3.1, 0.2), (30, 0.85, 0.05)]:
        cases.append(describe_case(f"kem_n{n}_{level}us", level + rng.normal(0.0, noise, n)))
    # Server CPU per request (µs) and throughput (requests/s), Table X and section VI.
    cases.append(describe_case("server_cpu_n5", 210.0 + rng.normal(0.0, 6.0, 5)))
    cases.append(describe_case("throughput_n10", 4700.0 * np.exp(rng.normal(0.0, 0.022, 10))))
    # RSS growth in bytes: zeros, negatives and one large run (Table X's 756 MiB).
    cases.append(describe_case("rss_growth_mixed", [0.0, -4096.0, 20.0 * 2**20,
                                                    756.0 * 2**20, 1.5 * 2**20]))
    # A mean of zero: no coefficient of variation.
    cases.append(describe_case("zero_mean", [-2.0, 2.0, -1.0, 1.0]))
    # The 90 % level.
    cases.append(describe_case("kem_n5_level90", 47.0 + rng.normal(0.0, 1.1, 5), level=0.90))
    return cases


# --------------------------------------------------------------------------- identity

IDENTITY_MARGIN = 0.05
IDENTITY_TOLERANCE = 0.02


def ratio_summary(x):
    """The RatioInterval of log ratios x, from SciPy."""
    x = np.asarray(x, dtype=float)
    n = x.size
    mean = float(np.mean(x))
    out = {"n": n, "ratio": math.exp(mean), "sd": float(np.std(x, ddof=1)),
           "difference_p": float(scipy.stats.ttest_1samp(x, 0.0).pvalue)}
    for key, level in (("ci90", 0.90), ("ci95", 0.95)):
        lo, hi = t.interval(level, n - 1, loc=mean, scale=scipy.stats.sem(x))
        out[key] = [math.exp(lo), math.exp(hi)]
    return out


def inside(ci, tolerance, what):
    lo, hi = ci
    for end, bound in ((lo, 1 - tolerance), (hi, 1 + tolerance)):
        assert abs(end - bound) > 1e-6, (what, ci, tolerance)
    return bool(lo >= 1 - tolerance and hi <= 1 + tolerance)


def identity_case(rng, name, n, cpu_shift, cores_factor):
    c_b = 1.71e-3 * np.exp(rng.normal(0.0, 0.01, n))
    c_m = c_b * math.exp(cpu_shift) * np.exp(rng.normal(0.0, 0.01, n))
    u_b = 15.9 * np.exp(rng.normal(0.0, 0.002, n))
    u_m = u_b * cores_factor * np.exp(rng.normal(0.0, 0.002, n))
    t_b = u_b / c_b * np.exp(rng.normal(0.0, 0.003, n))
    t_m = u_m / c_m * np.exp(rng.normal(0.0, 0.003, n))
    d_obs, d_cpu, d_cores = np.log(t_m / t_b), np.log(c_m / c_b), np.log(u_m / u_b)
    case = {"name": name, "margin": IDENTITY_MARGIN, "tolerance": IDENTITY_TOLERANCE,
            "throughput": [t_m.tolist(), t_b.tolist()],
            "cpu_per_request": [c_m.tolist(), c_b.tolist()],
            "cores_used": [u_m.tolist(), u_b.tolist()],
            "observed": ratio_summary(d_obs), "cpu": ratio_summary(d_cpu),
            "cores": ratio_summary(d_cores),
            "implied_equal_cores": ratio_summary(-d_cpu),
            "implied": ratio_summary(d_cores - d_cpu),
            "residual": ratio_summary(d_obs - (d_cores - d_cpu)),
            "gap": ratio_summary(d_obs + d_cpu)}
    low, upp = math.log(1 - IDENTITY_MARGIN), math.log(1 + IDENTITY_MARGIN)
    case["cpu_tost_p"] = float(ttost_paired(np.log(c_m), np.log(c_b), low=low, upp=upp)[0])
    case["holds"] = inside(case["residual"]["ci90"], IDENTITY_TOLERANCE, name)
    case["cpu_predicts_throughput"] = inside(case["gap"]["ci90"], IDENTITY_TOLERANCE, name)
    return case


def identity_cases():
    rng = np.random.default_rng(IDENTITY_SEED)
    cases = [
        # ML-KEM at 500 workers: 4.6 % more CPU, equal cores.
        identity_case(rng, "n5_cpu+4.6%", 5, math.log(1.046), 1.0),
        identity_case(rng, "n10_cpu+4.6%", 10, math.log(1.046), 1.0),
        # 64 KiB PUT: slightly less CPU.
        identity_case(rng, "n20_cpu-1%", 20, math.log(0.99), 1.0),
        # RSA-4096: more than twice the CPU.
        identity_case(rng, "n10_cpu+110%", 10, math.log(2.1), 1.0),
        # 128 workers: the costlier mode uses 5 % more cores.
        identity_case(rng, "n10_cpu+4.6%_cores+5%", 10, math.log(1.046), 1.05),
    ]
    assert all(c["holds"] for c in cases)
    assert [c["cpu_predicts_throughput"] for c in cases] == [True] * 4 + [False]
    return cases


# --------------------------------------------------------------------------- OLS


def ols_fit(name, y, columns, k_constant):
    """statsmodels OLS of y on named columns [(name, values)]."""
    y = np.asarray(y, dtype=float)
    X = np.column_stack([np.asarray(v, dtype=float) for _, v in columns])
    model = sm.OLS(y, X)
    assert model.k_constant == k_constant, (name, model.k_constant)
    res = model.fit()
    assert res.df_resid == y.size - X.shape[1], name
    ci = res.conf_int(0.05)
    return {"name": name, "y": y.tolist(),
            "columns": [{"name": c, "values": np.asarray(v, dtype=float).tolist()} for c, v in columns],
            "singular": False, "dependent_column": None,
            "coef": res.params.tolist(), "se": res.bse.tolist(), "t": res.tvalues.tolist(),
            "p": res.pvalues.tolist(), "ci95": ci.tolist(), "df_resid": float(res.df_resid),
            "r_squared": float(res.rsquared), "n": int(res.nobs)}


def ols_singular(name, y, columns):
    X = np.column_stack([np.asarray(v, dtype=float) for _, v in columns])
    dependent = None
    for j in range(X.shape[1]):
        if np.linalg.matrix_rank(X[:, :j + 1]) <= j:
            dependent = columns[j][0]
            break
    assert dependent is not None or X.shape[0] <= X.shape[1], name
    return {"name": name, "y": np.asarray(y, dtype=float).tolist(),
            "columns": [{"name": c, "values": np.asarray(v, dtype=float).tolist()} for c, v in columns],
            "singular": True, "dependent_column": dependent}


def campaign_design(rng, arms, blocks, effects, even_clock=False):
    """Runs of a randomized complete block design: every block runs each arm once in a
    random order. Columns: intercept, treatment-coded arm dummies (arms[0] the
    reference), block fixed effects (block 1 the reference), position in block and
    wall-clock minutes since the first run; y is log(throughput / 5000 req/s)."""
    rows = []
    clock = 0.0
    for b in range(blocks):
        order = rng.permutation(len(arms))
        for pos, a in enumerate(order):
            if even_clock:
                minutes = b * len(arms) * 0.5 + pos * 0.5
            else:
                clock += (25.0 + rng.uniform(2.0, 9.0)) / 60.0
                minutes = clock
            rows.append((a, b, pos, minutes))
        clock += rng.uniform(0.5, 3.0)
    a_idx = np.array([r[0] for r in rows])
    b_idx = np.array([r[1] for r in rows])
    pos = np.array([float(r[2]) for r in rows])
    minutes = np.array([r[3] for r in rows])
    block_effect = rng.normal(0.0, 0.02, blocks)
    # log(throughput / 5000 req/s): relative to a reference rate rather than raw log
    # throughput (about 8.5), which changes only the intercept but keeps the small
    # coefficients from carrying rounding of that magnitude (with raw log throughput, a
    # one-ulp change of y moved block coefficients and p-values by ~1e-12 relative,
    # compare.py's tolerance).
    y = (np.array(effects)[a_idx] + block_effect[b_idx] + 0.002 * pos + 0.0001 * minutes
         + rng.normal(0.0, 0.01, len(rows)))
    columns = [("intercept", np.ones(len(rows)))]
    columns += [(f"mode[{arms[i]}]", (a_idx == i).astype(float)) for i in range(1, len(arms))]
    columns += [(f"block[{j + 1}]", (b_idx == j).astype(float)) for j in range(1, blocks)]
    columns += [("position", pos), ("minutes", minutes)]
    return y, columns


def ols_cases():
    rng = np.random.default_rng(OLS_SEED)
    cases = []
    x = np.arange(1.0, 21.0)
    y = 2.0 + 0.3 * x + rng.normal(0.0, 0.8, x.size)
    cases.append(ols_fit("slope", y, [("intercept", np.ones(x.size)), ("slope", x)], 1))
    y, cols = campaign_design(rng, ["B2", "P1"], 10, [0.0, -0.04])
    cases.append(ols_fit("order_time_2arms_10blocks", y, cols, 1))
    y, cols = campaign_design(rng, ["B2", "P1", "P3"], 8, [0.0, -0.04, -0.05])
    cases.append(ols_fit("order_time_3arms_8blocks", y, cols, 1))
    x = np.linspace(0.5, 6.0, 12)
    y = 1.7 * x + rng.normal(0.0, 0.5, x.size)
    cases.append(ols_fit("through_the_origin", y, [("x", x)], 0))
    arm = np.repeat([0, 1, 2], 5)
    pos = rng.integers(0, 3, arm.size).astype(float)
    y = np.array([1.0, 1.4, 0.8])[arm] + 0.05 * pos + rng.normal(0.0, 0.1, arm.size)
    cols = [(f"arm[{i}]", (arm == i).astype(float)) for i in range(3)] + [("position", pos)]
    cases.append(ols_fit("cell_means_implicit_constant", y, cols, 1))

    x = np.arange(1.0, 9.0)
    y = 1.0 + 0.5 * x + rng.normal(0.0, 0.3, x.size)
    cases.append(ols_singular("twice_a_column", y, [("intercept", np.ones(x.size)), ("x", x),
                                                    ("2x", 2.0 * x)]))
    y, cols = campaign_design(rng, ["B2", "P1"], 8, [0.0, -0.04], even_clock=True)
    cases.append(ols_singular("evenly_ticking_clock", y, cols))
    cases.append(ols_singular("n_equals_k", [1.0, 2.5, 2.0],
                              [("intercept", np.ones(3)), ("x", [1.0, 2.0, 3.0]),
                               ("x2", [1.0, 4.0, 9.0])]))
    assert [c["dependent_column"] for c in cases if c["singular"]] == ["2x", "minutes", None]
    return cases


# --------------------------------------------------------------------------- queueing

ERLANG_SERVERS = [1, 2, 5, 10, 32, 256]
ERLANG_LOADS = [0.05, 0.3, 0.5, 0.8, 0.95, 0.999]
ERLANG_SERVICE = 0.002
KNEE_PAIRS = [(0.002, 5000.0), (0.0005, 800.0), (0.0005, 4000.0), (0.0171, 300.0),
              (0.004, 8000.0), (0.0016, 160000.0), (0.0123, 3000.0), (0.001, 1700.0)]


def poisson_erlang_c(c, a):
    tail = scipy.stats.poisson.pmf(c, a) * c / (c - a)
    return float(tail / (scipy.stats.poisson.cdf(c - 1, a) + tail))


def mmc_response(s, c, rate):
    a = rate * s
    return s + poisson_erlang_c(c, a) * s / (c - a)


def erlang_cases():
    cases = []
    for c in ERLANG_SERVERS:
        for rho in ERLANG_LOADS:
            a = rho * c
            rate = a / ERLANG_SERVICE
            cases.append({"servers": c, "offered_load": a, "service_time": ERLANG_SERVICE,
                          "rate": rate, "erlang_c": poisson_erlang_c(c, a),
                          "response": mmc_response(ERLANG_SERVICE, c, rate)})
    return cases


def knee_prediction_cases():
    cases = []
    for s, peak in KNEE_PAIRS:
        x = peak * s
        assert abs(x - math.floor(x) - 0.5) > 1e-6, (s, peak)
        c = max(1, math.floor(x + 0.5))
        capacity = c / s
        rate = scipy.optimize.brentq(lambda lam: mmc_response(s, c, lam) - 2 * s,
                                     0.0, capacity * (1 - 1e-12), xtol=1e-300,
                                     rtol=4 * np.finfo(float).eps, maxiter=500)
        cases.append({"service_time": s, "peak": peak, "servers": c, "capacity": capacity,
                      "rate": float(rate), "fraction_of_capacity": float(rate / capacity)})
    assert sorted({c["servers"] for c in cases}) == [1, 2, 5, 10, 32, 37, 256], cases
    return cases


# --------------------------------------------------------------------------- attribution


def share_statistic(a, b, axis=-1):
    return 1 - np.mean(a, axis=axis) / np.mean(b, axis=axis)


def share_ci(d_pc, d_pb, seed):
    res = scipy.stats.bootstrap((d_pc, d_pb), share_statistic, paired=True, vectorized=True,
                                n_resamples=BOOT_RESAMPLES, confidence_level=BOOT_LEVEL,
                                method="percentile", random_state=seed)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def attribution_cases():
    rng = np.random.default_rng(ATTRIBUTION_SEED)
    cases = []
    # (name, blocks, P1, C2 levels against B2 = 1, per-run log noise)
    for name, n, p1, c2, noise in [
        ("study_like_manifest", 10, 0.960, 0.993, 0.002),
        ("n5_noisy", 5, 0.960, 0.993, 0.004),
        ("n20", 20, 0.955, 0.985, 0.003),
        ("binding_like_most_of_it", 10, 0.963, 0.9615, 0.002),
        ("control_worse_than_p1", 10, 0.97, 0.96, 0.002),
    ]:
        block = rng.normal(0.0, 0.02, n)
        log_b2 = block + rng.normal(0.0, noise, n)
        log_c2 = block + math.log(c2) + rng.normal(0.0, noise, n)
        log_p1 = block + math.log(p1) + rng.normal(0.0, noise, n)
        d_pc, d_pb = log_p1 - log_c2, log_p1 - log_b2
        seeds = rng.integers(0, 2**32, size=1 + BOOT_MC_RERUNS)
        lo, hi = share_ci(d_pc, d_pb, int(seeds[0]))
        reruns = np.array([share_ci(d_pc, d_pb, int(s)) for s in seeds[1:]])
        mc_se = reruns.std(axis=0, ddof=1)
        share = float(1 - np.mean(d_pc) / np.mean(d_pb))
        assert lo < share < hi, (name, lo, share, hi)
        cases.append({"name": name, "d_pc": d_pc.tolist(), "d_pb": d_pb.tolist(),
                      "resamples": BOOT_RESAMPLES, "share": share,
                      "deficit_ratio": math.exp(np.mean(d_pb)),
                      "residual_ratio": math.exp(np.mean(d_pc)),
                      "ci": [lo, hi], "mc_se": [float(mc_se[0]), float(mc_se[1])]})
    study = cases[0]
    assert 0.10 < study["share"] < 0.30 and 0.955 < study["deficit_ratio"] < 0.965, study
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
        "differences": difference_cases(),
        "describe": describe_cases(),
        "identity": identity_cases(),
        "ols": ols_cases(),
        "erlang": erlang_cases(),
        "knee_prediction": knee_prediction_cases(),
        "attribution": attribution_cases(),
    }
    with out.open("w") as f:
        json.dump(cases, f, indent=2, sort_keys=True, allow_nan=False)
        f.write("\n")
    print(f"wrote {out} ({len(paired)} paired, {len(vectors)} p-vectors, "
          f"{len(cases['bootstrap'])} bootstrap, {len(cases['power'])} power, "
          f"{len(cases['fisher'])} Fisher, {len(cases['differences'])} difference, "
          f"{len(cases['describe'])} describe, "
          f"{len(cases['identity'])} identity, {len(cases['ols'])} OLS, "
          f"{len(cases['erlang'])} Erlang C, {len(cases['knee_prediction'])} knee, "
          f"{len(cases['attribution'])} attribution cases)")


if __name__ == "__main__":
    main()
