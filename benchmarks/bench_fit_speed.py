"""What the settings search and the replay cost on public logs: seconds of ``fit_options``, answers/s of the replay.

    .venv/bin/python benchmarks/bench_fit_speed.py [--datashop FILE ...] [--three-line TRAIN TEST]
                                                   [--repeats 3] [--folds 3] [--test-size 0.3] [--seed 0]

Nothing is downloaded. ``--datashop``: DataShop step exports as the KDD Cup 2010 files publish them
(e.g. ``data/ct.csv`` of https://github.com/CAHLR/pyBKT-examples, a subset of KDD Cup 2010 Cognitive
Tutor Algebra I 2006-2007: 11 students, 18,220 steps over 12,559 problem steps, most seen once),
read with :func:`learnloop.datasets.read_datashop` and split once by learner (``--test-size``,
``--seed``). ``--three-line``: a train and a test file in the 3-line format (e.g. the DKVMN
repository's ``data/assist2009_updated/assist2009_updated_{train,test}.csv``,
https://github.com/jennyzhang0215/DKVMN).

Per log: :func:`learnloop.evaluate.fit_options` with its defaults (the settings search, then the
refinement, per-topic rates, echo and, on a timed log, forgetting) on ``--folds`` folds of the train
learners, timed once; then the fitted model (``fit.model()``) is fitted on the whole train part and
replays the test learners (each answer predicted from the same learner's earlier ones, as
:func:`learnloop.evaluate.evaluate` does) ``--repeats`` times: the median seconds and answers/s are
printed, and the validation log loss and test AUC so that two versions can be compared for equal
results. BLAS threads are pinned to 1.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from learnloop.datasets import ResponseLog, align, read_datashop, read_three_line
from learnloop.evaluate import fit_options
from learnloop.tracing import auc


def describe(log: ResponseLog) -> str:
    seen = np.bincount(log.item, minlength=log.n_items)
    seen = seen[seen > 0]
    return (
        f"{log.n_responses:,} answers of {len(log.present_learners())} learners over {seen.size:,} items "
        f"(median answers per item {np.median(seen):g}, {np.mean(seen <= 5):.0%} seen at most 5 times)"
    )


def run(name: str, train: ResponseLog, test: ResponseLog, *, folds: int, repeats: int) -> dict[str, float]:
    train, test = align(train, test)
    print(f"### {name}\ntrain: {describe(train)}\ntest: {describe(test)}", flush=True)
    t0 = time.perf_counter()
    fit = fit_options(train, folds=folds, progress=True)
    search = time.perf_counter() - t0
    model = fit.model(progress=False)
    t0 = time.perf_counter()
    model.fit(train)
    fit_s = time.perf_counter() - t0
    seconds, p = [], np.empty(0)
    for _ in range(repeats):
        t0 = time.perf_counter()
        p = model.predict(test)
        seconds.append(time.perf_counter() - t0)
    replay = statistics.median(seconds)
    out = {
        "search_s": search,
        "fit_s": fit_s,
        "replay_s": replay,
        "replay_per_s": test.n_responses / replay,
        "valid_log_loss": fit.log_loss,
        "test_auc": auc(test.correct, p),
    }
    print(
        f"settings search ({folds} folds, {len(fit.tried)} settings tried): {search:.1f} s; "
        f"fit on the train part {fit_s:.2f} s; replay of the test part {replay:.3f} s "
        f"({out['replay_per_s']:,.0f} answers/s, median of {repeats})\n"
        f"validation log loss {fit.log_loss:.4f}, test AUC {out['test_auc']:.4f}\n{fit!r}\n",
        flush=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datashop", nargs="*", type=Path, default=[])
    parser.add_argument("--three-line", nargs=2, type=Path, metavar=("TRAIN", "TEST"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--test-size", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not args.datashop and args.three_line is None:
        parser.error("give --datashop FILE ... and/or --three-line TRAIN TEST")
    for path in args.datashop:
        train, test = read_datashop(path).split(args.test_size, seed=args.seed)
        run(path.name, train, test, folds=args.folds, repeats=args.repeats)
    if args.three_line is not None:
        train_file, test_file = args.three_line
        run(train_file.stem, read_three_line(train_file), read_three_line(test_file), folds=args.folds,
            repeats=args.repeats)  # fmt: skip


if __name__ == "__main__":
    main()
