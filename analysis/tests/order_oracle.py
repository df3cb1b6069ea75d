"""Reference values for the order-and-time check (`campaign::order`, study section VI).

Reads ``order_planted.csv`` and ``order_collinear.csv`` (the runs of two planted campaigns
in ``order.rs``, written by ``rows_to_csv``; the second's runs of nearly equal length make
elapsed time almost block plus position) and writes ``order_oracle.json``, one entry per
cell of either. The design is built here from the raw
columns, independently of the crate, and fitted with statsmodels' formula interface:

    ln(throughput_rps) ~ C(mode, Treatment("x25519")) + C(block) + position
                         + previous_put + elapsed_hours

per cell, where ``elapsed_hours`` = (started_unix_s - min over the whole campaign) / 3600
and ``previous_put`` = 1 if the run before in campaign order (every run of every cell
sorted by started_unix_s, ties by run_id) was a PUT, 0 for the first run.

For each cell and term: ``coef``, ``p`` (``pvalues``) and ``ci95`` (``conf_int(0.05)``)
on the log scale, and ``vif``: statsmodels' ``variance_inflation_factor`` of the term's
column in the fitted design (``fit.model.exog``, intercept included). Run: ``.venv/bin/python analysis/tests/order_oracle.py``.
"""

import json
import pathlib

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.outliers_influence import variance_inflation_factor

HERE = pathlib.Path(__file__).parent
TERMS = {"position": "position", "previous_put": "previous run PUT", "elapsed_hours": "elapsed hours"}


def campaign(name):
    runs = pd.read_csv(HERE / name)
    runs = runs.sort_values(["started_unix_s", "run_id"], kind="stable").reset_index(drop=True)
    runs["elapsed_hours"] = (runs["started_unix_s"] - runs["started_unix_s"].min()) / 3600.0
    runs["previous_put"] = (runs["operation"].shift(1) == "put").astype(float)
    runs["log_tp"] = np.log(runs["throughput_rps"])
    out = {}
    for cell, data in runs.groupby("cell", sort=True):
        # A previous-PUT column that is the same for every run is left out, as the crate does.
        terms = {c: n for c, n in TERMS.items() if data[c].nunique() > 1}
        fit = smf.ols(
            'log_tp ~ C(mode, Treatment("x25519")) + C(block) + ' + " + ".join(terms),
            data=data,
        ).fit()
        ci = fit.conf_int(0.05)
        entry = {"terms": {}, "modes": {}}
        exog = fit.model.exog
        names = fit.model.exog_names
        for column, name in terms.items():
            entry["terms"][name] = {
                "coef": fit.params[column],
                "p": fit.pvalues[column],
                "ci95": [ci.loc[column, 0], ci.loc[column, 1]],
                "vif": variance_inflation_factor(exog, names.index(column)),
            }
        for mode in sorted(set(data["mode"]) - {"x25519"}):
            column = f'C(mode, Treatment("x25519"))[T.{mode}]'
            entry["modes"][mode] = {
                "coef": fit.params[column],
                "ci95": [ci.loc[column, 0], ci.loc[column, 1]],
            }
        out[cell] = entry
    return out


def main():
    out = {}
    for name in ["order_planted.csv", "order_collinear.csv"]:
        out.update(campaign(name))
    (HERE / "order_oracle.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
