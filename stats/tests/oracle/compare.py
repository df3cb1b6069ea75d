"""Compare a regenerated oracle fixture with the committed ``cases.json``.

    python compare.py COMMITTED REGENERATED

The fixture is regenerated from SciPy/statsmodels on every ``make test``. With the pinned
versions its structure, integers, strings and library versions are deterministic, but
its floats are not byte for byte: NumPy dispatches other SIMD kernels on other CPUs (on
a machine with AVX-512, 192 values differed in the last digit, e.g.
``0.9539845772012575`` -> ``0.9539845772012574``). So:

- every float must agree within ``REL_TOL`` = 1e-12 relative (far tighter than the
  1e-9 the Rust tests compare against, far looser than one ulp);
- except the spread of a paired case (``sd`` and ``se`` in ``paired``), which is compared
  within 1e-12 of the *data's* scale, ``max |d|``: a spread far below the data's
  magnitude is ill-conditioned in it. Seen here: ``edge_nearly_constant_d`` (d ≈ 0.012,
  sd ≈ 1e-8) had one ``d`` differ in its last bit between two CPUs (``np.log``'s SIMD
  kernel), and its sd moved by 8.9e-12 relative, 3e-18 absolute: one ulp of the data.
- and a regression's estimates (``coef``, ``ci95``, ``t`` and ``p`` in ``ols``), which
  are compared within 1e-12 of their own uncertainty: a coefficient and its interval at
  the scale of that coefficient's standard error ``se``, a t statistic at the scale 1,
  and a p-value within ``(df_resid + 1)`` × 1e-12 relative (p = 2·F(−|t|) amplifies
  the error of t by |d ln p / d ln t| = (df + 1)·t² / (df + t²) ≤ df + 1; the same
  allowance holds for the t-test p-values ``difference_p`` of ``paired`` and
  ``identity`` and ``p`` of ``differences``, df = n − 1, where a p of 1e-12 moved by
  1.3e-12 relative with one ulp of the data). A paired case's p-values (``difference_p``
  and the TOST ``tost_p*``) also carry its spread's conditioning: t = mean / se, and se is
  compared at the data's scale (above), so t may move by 1e-12 × max(1, max |d| / sd)
  relative and p by (df + 1) times that. Seen here: ``edge_nearly_constant_d``'s
  difference_p (3e-56) moved by 8e-11 relative between two CPUs, its sd by 9e-12. An estimate
  near 0 is ill-conditioned in the data: in the order/time designs (block dummies,
  position and wall-clock minutes nearly collinear) a one-ulp change of the inputs
  moved such values by up to ~5e-12 relative and p-values by ~1e-12 (statsmodels fits
  by SVD; other BLAS kernels round differently), while ~1e-15 of their standard error.
- everything else must be equal: keys, list lengths, integers, strings, booleans, null,
  and the JSON type of each value (an integer never matches a float).

Exit 0 when they agree; otherwise print each difference by its path and exit 1.
"""

import json
import sys

REL_TOL = 1e-12


# Members of a paired case whose tolerance is scaled by the case's data (max |d|).
DATA_SCALED = {"sd", "se"}

# Members of an OLS case compared at the scale of each coefficient's standard error.
SE_SCALED = {"coef", "ci95"}

# t-test p-values (member: sections) compared within (df + 1) × REL_TOL relative (a
# paired case's also times its spread's conditioning, `spread_conditioning`).
T_TEST_P = {"difference_p": ("$.paired[", "$.identity["), "p": ("$.differences[",),
            "tost_p": ("$.paired[",), "tost_p_lower": ("$.paired[",),
            "tost_p_upper": ("$.paired[",)}


def spread_conditioning(obj):
    """How much a paired case's t statistic may move relative to REL_TOL: its se is
    compared at the data's scale max |d|, so relative to itself at max |d| / sd (at least 1)."""
    data = [abs(x) for x in obj.get("d", []) if isinstance(x, float)]
    sd = obj.get("sd")
    if not data or not isinstance(sd, float) or sd <= 0.0:
        return 1.0
    return max(1.0, max(data) / sd)


def float_differs(want, got, scale):
    """Whether two floats differ by more than REL_TOL of the larger of them and `scale`."""
    return abs(want - got) > REL_TOL * max(abs(want), abs(got), scale)


def differences(want, got, path="$", scale=0.0):
    """Yield (path, what) for every way ``got`` differs from ``want``; a float may differ
    by ``REL_TOL`` of ``max(|want|, |got|, scale)``."""
    # `type(...) is` also keeps True apart from 1 (bool is a subclass of int in Python).
    if type(want) is float and type(got) is float:
        if want != got and float_differs(want, got, scale):
            rel = abs(want - got) / max(abs(want), abs(got), scale)
            yield path, f"{want!r} != {got!r} (relative {rel:.1e} > {REL_TOL})"
    elif type(want) is not type(got):
        yield path, f"{type(want).__name__} {want!r} != {type(got).__name__} {got!r}"
    elif isinstance(want, dict):
        for k in sorted(set(want) | set(got)):
            if k not in got:
                yield f"{path}.{k}", "missing in the regenerated fixture"
            elif k not in want:
                yield f"{path}.{k}", "not in the committed fixture"
            else:
                yield from differences(want[k], got[k], f"{path}.{k}", member_scale(path, want, k))
    elif isinstance(want, list):
        if len(want) != len(got):
            yield path, f"{len(want)} items != {len(got)} items"
        for i, (a, b) in enumerate(zip(want, got)):
            # A list of scales gives one per item; a single scale applies to every item.
            item_scale = scale[i] if isinstance(scale, list) else scale
            yield from differences(a, b, f"{path}[{i}]", item_scale)
    elif want != got:
        yield path, f"{want!r} != {got!r}"


def member_scale(path, obj, key):
    """The tolerance scale of ``obj[key]``: the data's magnitude for a paired case's
    spread; for an OLS case each coefficient's standard error for its coefficients and
    intervals (a list, one per coefficient), 1 for its t statistics and
    ``(df_resid + 1)·|p|`` for its p-values; ``(df + 1)·|p|`` for a t-test p-value
    (``T_TEST_P``); else none (plain relative)."""
    if key in DATA_SCALED and path.startswith("$.paired[") and isinstance(obj.get("d"), list):
        return max((abs(x) for x in obj["d"] if isinstance(x, float)), default=0.0)
    if key in T_TEST_P and path.startswith(T_TEST_P[key]) and isinstance(obj[key], float):
        df = obj["df"] if "df" in obj else obj.get("n", 1) - 1
        cond = spread_conditioning(obj) if path.startswith("$.paired[") else 1.0
        return (df + 1) * cond * abs(obj[key])
    if path.startswith("$.ols[") and isinstance(obj.get("se"), list):
        if key in SE_SCALED:
            return [abs(x) if isinstance(x, float) else 0.0 for x in obj["se"]]
        if key == "t":
            return 1.0
        if key == "p" and isinstance(obj.get("df_resid"), float) and isinstance(obj["p"], list):
            return [(obj["df_resid"] + 1) * abs(x) if isinstance(x, float) else 0.0
                    for x in obj["p"]]
    return 0.0


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        want = json.load(f)
    with open(argv[2]) as f:
        got = json.load(f)
    found = list(differences(want, got))
    for path, what in found[:50]:
        print(f"{path}: {what}")
    if found:
        more = f" (first 50 shown)" if len(found) > 50 else ""
        print(f"*** {len(found)} difference(s) between {argv[1]} and {argv[2]}{more}; "
              f"if the oracle changed on purpose, regenerate with "
              f"`python stats/tests/oracle/generate.py` and commit cases.json ***",
              file=sys.stderr)
        return 1
    print(f"oracle fixture: {argv[2]} agrees with {argv[1]} "
          f"(floats within {REL_TOL} relative, all else equal)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
