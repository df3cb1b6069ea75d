"""Tests of compare.py, the numeric check behind `make oracle-check` (run by it).

The case that made `make test` fail on a machine with AVX-512 (issue 16 item 9): the same
pinned SciPy/statsmodels wrote 192 floats that differ in the last digit. Those must pass;
any real change must not.
"""

import copy
import unittest

from compare import REL_TOL, differences

BASE = {
    "meta": {"scipy": "1.16.3", "generated_by": "stats/tests/oracle/generate.py"},
    "paired": [{"n": 5, "ci90": [0.9539845772012575, 1.02], "ok": True, "note": None}],
    "power": [{"n": 12, "n_exact": 11.3}],
}


def changed(path_fn):
    c = copy.deepcopy(BASE)
    path_fn(c)
    return list(differences(BASE, c))


class Compare(unittest.TestCase):
    def test_identical(self):
        self.assertEqual(list(differences(BASE, copy.deepcopy(BASE))), [])

    def test_last_digit_of_a_float_passes(self):
        # Seen on an AVX-512 machine with the pinned versions: ...575 -> ...574.
        def f(c):
            c["paired"][0]["ci90"][0] = 0.9539845772012574
        self.assertEqual(changed(f), [])

    def test_a_real_change_of_a_float_fails(self):
        def f(c):
            c["paired"][0]["ci90"][0] *= 1 + 100 * REL_TOL
        d = changed(f)
        self.assertEqual(len(d), 1)
        self.assertEqual(d[0][0], "$.paired[0].ci90[0]")

    def test_the_spread_of_nearly_constant_data_is_compared_at_the_data_scale(self):
        # edge_nearly_constant_d as two CPUs computed it: one d differs in its last bit.
        want = {"paired": [{"d": [0.01199999539999841, 0.012000007179565625],
                            "sd": 1.0000000032500606e-08, "se": 3.1622776704459733e-09,
                            "mean": 0.012000001289782}]}
        got = copy.deepcopy(want)
        got["paired"][0]["d"][0] = 0.011999995399998409
        got["paired"][0]["sd"] = 1.000000003258927e-08
        got["paired"][0]["se"] = 3.1622776704740114e-09
        self.assertEqual(list(differences(want, got)), [])
        # A spread that really changed (1e-5 relative, 1e-13 absolute at scale 0.012) fails,
        # and so does the same change of the mean, which is not data-scaled.
        got["paired"][0]["sd"] = 1.00001e-08
        self.assertEqual([p for p, _ in differences(want, got)], ["$.paired[0].sd"])
        got = copy.deepcopy(want)
        got["paired"][0]["mean"] *= 1 + 1e-11
        self.assertEqual([p for p, _ in differences(want, got)], ["$.paired[0].mean"])

    def test_regression_estimates_are_compared_at_their_standard_error(self):
        want = {"ols": [{"coef": [8.5, 1.0e-4], "se": [0.01, 2.0e-3], "t": [850.0, 0.05],
                         "ci95": [[8.48, 8.52], [-3.0e-7, 4.2e-3]], "p": [1e-30, 0.96],
                         "df_resid": 9.0}]}
        got = copy.deepcopy(want)
        # A coefficient near 0 moved by 1e-11 relative (5e-13 of its se), its t alike,
        # and an interval end near 0 by 1e-15 (3e-9 relative, 5e-13 of the se): within
        # tolerance.
        got["ols"][0]["coef"][1] *= 1 + 1e-11
        got["ols"][0]["t"][1] *= 1 + 1e-11
        got["ols"][0]["ci95"][1][0] += 1e-15
        # A p-value moved by 5e-12 relative, within (df_resid + 1)·1e-12.
        got["ols"][0]["p"][0] *= 1 + 5e-12
        self.assertEqual(list(differences(want, got)), [])
        # The same change of the large coefficient or of a standard error, a change of a
        # p-value beyond (df_resid + 1)·1e-12, is a real difference.
        for path, change in [
            ("$.ols[0].coef[0]", lambda c: c["coef"].__setitem__(0, 8.5 * (1 + 1e-10))),
            ("$.ols[0].se[1]", lambda c: c["se"].__setitem__(1, 2.0e-3 * (1 + 1e-10))),
            ("$.ols[0].p[1]", lambda c: c["p"].__setitem__(1, 0.96 * (1 + 1e-10))),
            ("$.ols[0].p[0]", lambda c: c["p"].__setitem__(0, 1e-30 * (1 + 2e-11))),
            ("$.ols[0].ci95[1][1]", lambda c: c["ci95"][1].__setitem__(1, 4.2e-3 + 1e-13)),
        ]:
            with self.subTest(path=path):
                got = copy.deepcopy(want)
                change(got["ols"][0])
                self.assertEqual([p for p, _ in differences(want, got)], [path])
        # The scaling belongs to the ols section only.
        other = {"identity": copy.deepcopy(want["ols"])}
        got = copy.deepcopy(other)
        got["identity"][0]["coef"][1] *= 1 + 1e-11
        self.assertEqual([p for p, _ in differences(other, got)], ["$.identity[0].coef[1]"])

    def test_t_test_p_values_are_allowed_their_conditioning(self):
        want = {"identity": [{"gap": {"n": 10, "difference_p": 1.7e-12, "ratio": 1.05}}],
                "differences": [{"n": 5, "p": 0.003, "mean": 6.4}],
                "paired": [{"df": 9, "difference_p": 2e-8, "tost_p": 2e-8}]}
        got = copy.deepcopy(want)
        got["identity"][0]["gap"]["difference_p"] *= 1 + 5e-12
        got["differences"][0]["p"] *= 1 + 4e-12
        got["paired"][0]["difference_p"] *= 1 + 9e-12
        self.assertEqual(list(differences(want, got)), [])
        got["identity"][0]["gap"]["difference_p"] *= 1 + 2e-11
        got["differences"][0]["mean"] *= 1 + 4e-12
        got["paired"][0]["tost_p"] *= 1 + 2e-11
        self.assertEqual([p for p, _ in differences(want, got)],
                         ["$.differences[0].mean", "$.identity[0].gap.difference_p",
                          "$.paired[0].tost_p"])

    def test_p_values_of_a_nearly_constant_paired_case_carry_its_spread_conditioning(self):
        # edge_nearly_constant_d as two CPUs computed it: sd 1e-8 of data 0.012, so se (and
        # t) may move by 1.2e6 × REL_TOL relative; difference_p moved by 8e-11.
        want = {"paired": [{"df": 9, "d": [0.012, 0.011999982], "sd": 1.0e-08,
                            "difference_p": 3.1206109610944915e-56,
                            "tost_p": 6.520115886701129e-61}]}
        got = copy.deepcopy(want)
        got["paired"][0]["difference_p"] = 3.120610960845479e-56
        got["paired"][0]["tost_p"] *= 1 + 5e-8
        self.assertEqual(list(differences(want, got)), [])
        got["paired"][0]["difference_p"] *= 1 + 1e-4
        self.assertEqual([p for p, _ in differences(want, got)],
                         ["$.paired[0].difference_p"])

    def test_integers_strings_bools_null_and_types_must_be_equal(self):
        cases = [
            lambda c: c["paired"][0].__setitem__("n", 6),
            lambda c: c["paired"][0].__setitem__("n", 5.0),
            lambda c: c["power"][0].__setitem__("n_exact", 11),
            lambda c: c["meta"].__setitem__("scipy", "1.16.4"),
            lambda c: c["paired"][0].__setitem__("ok", 1),
            lambda c: c["paired"][0].__setitem__("ok", False),
            lambda c: c["paired"][0].__setitem__("note", 0),
        ]
        for i, f in enumerate(cases):
            with self.subTest(case=i):
                self.assertEqual(len(changed(f)), 1)

    def test_structure_must_be_equal(self):
        self.assertTrue(changed(lambda c: c["paired"][0]["ci90"].append(1.0)))
        self.assertTrue(changed(lambda c: c["meta"].pop("scipy")))
        self.assertTrue(changed(lambda c: c["meta"].__setitem__("extra", 1)))
        self.assertTrue(changed(lambda c: c.__setitem__("paired", {})))


if __name__ == "__main__":
    unittest.main()
