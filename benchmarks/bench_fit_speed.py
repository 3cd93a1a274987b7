"""What the settings search and the replay cost on public logs: seconds of ``fit_options``, answers/s of the replay.

    .venv/bin/python benchmarks/bench_fit_speed.py [--datashop FILE ...] [--three-line TRAIN TEST]
                                                   [--simulated [ANSWERS]] [--repeats 3] [--folds 3]
                                                   [--test-size 0.3] [--seed 0]

Nothing is downloaded. ``--datashop``: DataShop step exports as the KDD Cup 2010 files publish them
(e.g. ``data/ct.csv`` of https://github.com/CAHLR/pyBKT-examples, a subset of KDD Cup 2010 Cognitive
Tutor Algebra I 2006-2007: 11 students, 18,220 steps over 12,559 problem steps, most seen once),
read with :func:`learnloop.datasets.read_datashop` and split once by learner (``--test-size``,
``--seed``). ``--three-line``: a train and a test file in the 3-line format (e.g. the DKVMN
repository's ``data/assist2009_updated/assist2009_updated_{train,test}.csv``,
https://github.com/jennyzhang0215/DKVMN).

``--simulated [ANSWERS]`` (default 100,000): a SIMULATED log of the KDD Cup 2010 kind, for want of a
public one of that size (the KDD Cup files are 100 MB to 3 GB; no public repository holds a slice of
about 100,000 answers under 4 MB). Its train part has about ANSWERS answers (the test part, drawn
from the same world, 3/7 as many): ct.csv's item frequencies scaled up, not its content. Each item
(a problem step) is answered by a geometric number of learners with mean 1.45, ct.csv's answers per
item (18,220 / 12,559), so the median item is answered once and 99.7 % at most 5 times (ct.csv: 99 %);
items belong to 112 skills (Algebra I 2005-2006's count of knowledge components) and sit at a place in
the curriculum, which learners go through in order; 100 learners of equal expected length (about
1,430 answers each, as Algebra I 2005-2006's 813,661 steps over 575 students), 30 of them the test
part. A learner answers right with probability sigmoid(ability + skill deviation + 0.25 sqrt(answers
so far on the skill) - difficulty), ability N(0, 1), deviation N(0, 0.5), difficulty N(-1.2, 1) (about
75 % right, as in KDD Cup 2010); answers 30 s apart, a day between sessions of 60. Figures on it
are labelled "simulated".

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
import math
import statistics
import time
from pathlib import Path

import numpy as np

from learnloop.datasets import ResponseLog, align, from_columns, read_datashop, read_three_line
from learnloop.evaluate import fit_options
from learnloop.tracing import auc


def describe(log: ResponseLog) -> str:
    seen = np.bincount(log.item, minlength=log.n_items)
    seen = seen[seen > 0]
    return (
        f"{log.n_responses:,} answers of {len(log.present_learners())} learners over {seen.size:,} items "
        f"(median answers per item {np.median(seen):g}, {np.mean(seen <= 5):.0%} seen at most 5 times)"
    )


def simulated_log(answers: int, *, seed: int = 0) -> tuple[ResponseLog, ResponseLog]:
    """``(train, test)``: the simulated log of the KDD Cup 2010 kind described in the module docstring."""
    rng = np.random.default_rng(seed)
    n_learners, n_test, n_skills = 100, 30, 112
    total = answers * n_learners / (n_learners - n_test)
    n_items = int(round(total / 1.45))
    count = rng.geometric(1.0 / 1.45, n_items)  # learners answering each item
    count = np.minimum(count, n_learners)
    skill = rng.integers(0, n_skills, n_items)
    place = rng.random(n_items)  # where the item sits in the curriculum
    difficulty = rng.normal(-1.2, 1.0, n_items)
    item = np.repeat(np.arange(n_items), count)
    # each item's learners: distinct, drawn at random
    learner = np.concatenate([rng.choice(n_learners, c, replace=False) for c in count.tolist()])
    order = np.lexsort((place[item] + rng.normal(0.0, 0.02, item.size), learner))
    item, learner = item[order], learner[order]
    ability = rng.normal(0.0, 1.0, n_learners)
    deviation = rng.normal(0.0, 0.5, (n_learners, n_skills))
    seen = np.zeros((n_learners, n_skills))
    correct = np.empty(item.size)
    step = np.arange(item.size) - np.repeat(np.flatnonzero(np.r_[True, learner[1:] != learner[:-1]]),
                                           np.diff(np.r_[np.flatnonzero(np.r_[True, learner[1:] != learner[:-1]]), item.size]))  # fmt: skip
    draws = rng.random(item.size).tolist()
    base = (ability[learner] + deviation[learner, skill[item]] - difficulty[item]).tolist()
    for k, (u, s) in enumerate(zip(learner.tolist(), skill[item].tolist(), strict=True)):
        z = base[k] + 0.25 * math.sqrt(seen[u, s])
        correct[k] = float(draws[k] < 1.0 / (1.0 + math.exp(-z)))
        seen[u, s] += 1.0
    time = 1.7e9 + (step // 60) * 86400.0 + (step % 60) * 30.0
    log = from_columns(
        {
            "learner": [f"s{u}" for u in learner.tolist()],
            "item": [f"p{i}" for i in item.tolist()],
            "correct": correct.tolist(),
            "skill": [f"kc{skill[i]}" for i in item.tolist()],
            "time": time.tolist(),
        },
        learner="learner", item="item", correct="correct", skill="skill", time="time",
    )  # fmt: skip
    is_test = np.array([int(name[1:]) >= n_learners - n_test for name in log.learner_ids])
    return log.select(np.flatnonzero(~is_test)), log.select(np.flatnonzero(is_test))


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
    parser.add_argument("--simulated", nargs="?", type=int, const=100_000, default=None, metavar="ANSWERS")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--test-size", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not args.datashop and args.three_line is None and args.simulated is None:
        parser.error("give --datashop FILE ..., --three-line TRAIN TEST and/or --simulated")
    if args.simulated is not None:
        train, test = simulated_log(args.simulated, seed=args.seed)
        run(f"simulated KDD Cup 2010 kind ({args.simulated:,} train answers)", train, test, folds=args.folds,
            repeats=args.repeats)  # fmt: skip
    for path in args.datashop:
        train, test = read_datashop(path).split(args.test_size, seed=args.seed)
        run(path.name, train, test, folds=args.folds, repeats=args.repeats)
    if args.three_line is not None:
        train_file, test_file = args.three_line
        run(train_file.stem, read_three_line(train_file), read_three_line(test_file), folds=args.folds,
            repeats=args.repeats)  # fmt: skip


if __name__ == "__main__":
    main()
