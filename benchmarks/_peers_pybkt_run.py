"""Run pyBKT on a data file; executed by the peer environment's interpreter.

usage: python _peers_pybkt_run.py DATA.npz OUT.npz REPEATS

DATA.npz holds train_/test_ user, skill, correct arrays (events in time order).
OUT.npz receives the fit times, the fitted prior/learn/guess/slip per skill,
the one-step predictions for the test events in their given order, and the
process's RSS just before the first fit and its peak RSS after the fits (MB).
"""

from __future__ import annotations

import os
import resource
import sys
import time

import numpy as np
import pandas as pd
from pyBKT.models import Model


def frame(z: np.lib.npyio.NpzFile, part: str) -> pd.DataFrame:
    n = z[f"{part}_user"].size
    return pd.DataFrame(
        {
            "order_id": np.arange(n),
            "user_id": z[f"{part}_user"],
            "skill_name": np.char.add("s", z[f"{part}_skill"].astype(str)),
            "correct": z[f"{part}_correct"].astype(int),
            "row": np.arange(n),
        }
    )


def main() -> None:
    data, out, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with np.load(data) as z:
        train, test = frame(z, "train"), frame(z, "test")
        n_skills = int(z["n_skills"])
    times = []
    model = None
    with open("/proc/self/statm") as f:
        rss_before = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    for r in range(repeats):
        model = Model(seed=r, num_fits=5, parallel=False)
        t = time.perf_counter()
        model.fit(data=train.copy())
        times.append(time.perf_counter() - t)
    assert model is not None
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    coef = model.coef_
    params = np.array(
        [
            [
                float(coef[f"s{k}"]["prior"]),
                float(np.ravel(coef[f"s{k}"]["learns"])[0]),
                float(np.ravel(coef[f"s{k}"]["guesses"])[0]),
                float(np.ravel(coef[f"s{k}"]["slips"])[0]),
            ]
            for k in range(n_skills)
        ]
    )
    pred = model.predict(data=test.copy()).sort_values("row")["correct_predictions"].to_numpy(dtype=float)
    np.savez(out, times=np.array(times), params=params, pred=pred, rss_before=rss_before, rss_peak=rss_peak)


if __name__ == "__main__":
    main()
