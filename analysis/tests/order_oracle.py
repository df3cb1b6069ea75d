"""Reference values for the order-and-time check (`campaign::order`, study section VI).

Reads ``order_planted.csv`` (the runs of the planted campaign in ``order.rs``, written by
``rows_to_csv``) and writes ``order_oracle.json``. The design is built here from the raw
columns, independently of the crate, and fitted with statsmodels' formula interface:

    ln(throughput_rps) ~ C(mode, Treatment("x25519")) + C(block) + position
                         + previous_put + elapsed_hours

per cell, where ``elapsed_hours`` = (started_unix_s - min over the whole campaign) / 3600
and ``previous_put`` = 1 if the run before in campaign order (every run of every cell
sorted by started_unix_s, ties by run_id) was a PUT, 0 for the first run.

For each cell and term: ``coef``, ``p`` (``pvalues``) and ``ci95`` (``conf_int(0.05)``)
on the log scale. Run: ``.venv/bin/python analysis/tests/order_oracle.py``.
"""

import json
import pathlib

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

HERE = pathlib.Path(__file__).parent
TERMS = {"position": "position", "previous_put": "previous run PUT", "elapsed_hours": "elapsed hours"}


def main():
    runs = pd.read_csv(HERE / "order_planted.csv")
    runs = runs.sort_values(["started_unix_s", "run_id"], kind="stable").reset_index(drop=True)
    runs["elapsed_hours"] = (runs["started_unix_s"] - runs["started_unix_s"].min()) / 3600.0
    runs["previous_put"] = (runs["operation"].shift(1) == "put").astype(float)
    runs["log_tp"] = np.log(runs["throughput_rps"])
    out = {}
    for cell, data in runs.groupby("cell", sort=True):
        fit = smf.ols(
            'log_tp ~ C(mode, Treatment("x25519")) + C(block) + position + previous_put + elapsed_hours',
            data=data,
        ).fit()
        ci = fit.conf_int(0.05)
        entry = {"terms": {}, "modes": {}}
        for column, name in TERMS.items():
            entry["terms"][name] = {
                "coef": fit.params[column],
                "p": fit.pvalues[column],
                "ci95": [ci.loc[column, 0], ci.loc[column, 1]],
            }
        for mode in sorted(set(data["mode"]) - {"x25519"}):
            column = f'C(mode, Treatment("x25519"))[T.{mode}]'
            entry["modes"][mode] = {
                "coef": fit.params[column],
                "ci95": [ci.loc[column, 0], ci.loc[column, 1]],
            }
        out[cell] = entry
    (HERE / "order_oracle.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
