"""Forgetting on a public timestamped log: no forgetting, the FSRS defaults and the fitted term, by gap.

    .venv/bin/python benchmarks/bench_forgetting_real.py DATA_DIR [--files ct.csv ...]
        [--csv FILE ... --columns learner=user_id,item=problem_id,correct=correct,skill=skill_id,time=start_time]
        [--test-size 0.3] [--seed 0] [--folds 3]

One table per log, each run alone on its own split. DATA_DIR holds ``ct.csv`` (nothing is
downloaded; searched recursively): the
subset of the KDD Cup 2010 Cognitive Tutor Algebra I 2006-2007 data (11
students, 18,220 steps, Step Start Time from September 2006 to May 2007)
published as ``data/ct.csv`` in https://github.com/CAHLR/pyBKT-examples (blob
1aab4c0, first committed in 3a6f05b), read with
:func:`learnloop.datasets.read_datashop` (an item is a problem's step, its
skills the ``KC(Default)`` components). Any other DataShop step export given
with ``--files`` is run the same way (e.g. the KDD Cup 2010 ``algebra_2005_2006_train.txt``).
The first 120 steps of each student of ``ct.csv`` are committed under ``tests/data/``
(``kddcup2010_ct_head.tsv``: ``bench_forgetting_real.py tests/data --files
kddcup2010_ct_head.tsv``); the whole file is 4 MiB or more. A fork's comma-separated
copy whose ``Step Start Time`` lost its date (``18:00.0``) carries no gaps and is not read.
A second timed log, spaced over days: the statistics cloze practice sample the LKT R package
ships (https://github.com/Optimal-Learning-Lab/LKT, ``data/largerawsample.rda``, blob 741b711;
478 students, 55,122 answers), turned into ``largerawsample.csv`` as ``docs/models.md`` shows and
read with ``--csv largerawsample.csv --columns
learner=student,item=item,correct=correct,skill=skill,time=time``.
``--csv`` reads timed logs in a table of named columns with
:func:`learnloop.datasets.read_csv` (``--columns``: which column is the learner, the item, the
answer, the skill and the time; the default names are those of ASSISTments 2012-2013's
``2012-2013-data-with-predictions-4-final.csv``; ASSISTments 2017's are
``learner=studentId,item=problemId,correct=correct,skill=skill,time=startTime``).

Protocol, per log: the learners are split once (``--test-size`` of them, seed
``--seed``) into train and test; :func:`learnloop.evaluate.fit_options` chooses
every setting on ``--folds`` folds of the train learners, the forgetting term
last (none, the FSRS defaults or the term fitted to each fold's training part:
the one with the lowest mean validation log loss, none unless it lowers it).
Then three models with the settings chosen (items, rates and echo as chosen)
are fitted on the whole train part and replay the test learners once, each
answer predicted from the same learner's earlier answers only: no forgetting,
the FSRS-4.5 defaults (clock 1, recall weight 1) and the fitted term (clock and
weights fitted to the train part's gaps). The test predictions are scored per
gap since the learner's previous answer on the same skill (the answer's first
skill): AUC and ECE (10 equal-width bins). The test part is read once for the
whole table. BLAS threads are pinned to 1.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import math
import time
from pathlib import Path

from learnloop.datasets import ResponseLog, align, read_csv, read_datashop
from learnloop.evaluate import GAP_BINS, EngineModel, by_gap, fit_options

MODELS = (("no forgetting", None), ("FSRS defaults", "fsrs"), ("fitted", "fitted"))


def _find(root: Path, name: str) -> Path:
    found = sorted(root.rglob(name))
    if not found:
        raise SystemExit(f"{name} not found under {root}")
    return found[0]


def _cell(value: float, digits: int = 3) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def run(name: str, log: ResponseLog, *, test_size: float, seed: int, folds: int) -> str:
    train, test = log.split(test_size, seed=seed)
    train, test = align(train, test)
    t0 = time.perf_counter()
    fit = fit_options(train, folds=folds, seed=seed, progress=True)
    search = time.perf_counter() - t0
    tried = {t["forgetting"]: loss for t, loss in fit.tried if "forgetting" in t}
    before = min(loss for t, loss in fit.tried if "forgetting" not in t)  # the best without the term
    rows: dict[str, list[dict[str, object]]] = {}
    fitted_doc = None
    for label, kind in MODELS:
        model: EngineModel = fit.model()
        model.forgetting = kind
        model.fit(train)
        if kind == "fitted":
            fitted_doc = model.forgetting_
        rows[label] = by_gap(test, model.predict(test))
    out = [
        f"### {name}",
        "",
        f"{log.n_learners} learners, {log.n_responses:,} answers, {log.n_skills} skills; train "
        f"{train.n_responses:,} answers of {len(train.present_learners())} learners, test "
        f"{test.n_responses:,} of {len(test.present_learners())} (split by learner, seed {seed}); "
        f"settings search on {folds} folds of the train learners: {search:.0f} s.",
        "",
        "| gap since the last answer on the skill | test answers | share right | "
        + " | ".join(f"AUC {label}" for label, _ in MODELS)
        + " | "
        + " | ".join(f"ECE {label}" for label, _ in MODELS)
        + " |",
        "|---|---|---|" + "---|" * (2 * len(MODELS)),
    ]
    for k, (label, _, _) in enumerate([*GAP_BINS, ("all", 0.0, 0.0)]):
        first = rows[MODELS[0][0]][k]
        if not first["n"]:
            out.append(f"| {label} | 0 | — |" + " — |" * (2 * len(MODELS)))
            continue
        aucs = " | ".join(_cell(rows[m][k]["auc"]) for m, _ in MODELS)  # type: ignore[arg-type]
        eces = " | ".join(_cell(rows[m][k]["ece"]) for m, _ in MODELS)  # type: ignore[arg-type]
        out.append(f"| {label} | {first['n']:,} | {_cell(first['correct'], 2)} | {aucs} | {eces} |")  # type: ignore[arg-type]
    out += [
        "",
        f"Chosen on the folds: forgetting = {fit.forgetting!r}; mean validation log loss {before:.4f} "
        f"without the term, {tried.get('fsrs', float('nan')):.4f} with the FSRS defaults, "
        f"{tried.get('fitted', float('nan')):.4f} with the fitted term.",
        f"Settings: {fit.options}; refine={fit.refine!r}, topic_rates={fit.topic_rates}, echo={fit.echo}.",
    ]
    if fitted_doc is not None:
        own = fitted_doc["topic_scale"]
        out.append(
            f"Fitted on the whole train part: clock x{fitted_doc['time_scale']:g} FSRS's, recall weight "
            f"{fitted_doc['scale']:.3f} ({len(own)} skills with a weight of their own, "
            f"{min(own.values(), default=float('nan')):.3f} to {max(own.values(), default=float('nan')):.3f})."
        )
    return "\n".join(out)


def _columns(spec: str) -> dict[str, str]:
    pairs = [part.split("=", 1) for part in spec.split(",") if part.strip()]
    out = {key.strip(): value.strip() for key, value in pairs}
    missing = {"learner", "item", "correct", "time"} - out.keys()
    if missing:
        raise SystemExit(f"--columns names no {', '.join(sorted(missing))} column")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path, nargs="?", default=None)
    parser.add_argument("--files", nargs="*", default=["ct.csv"], help="DataShop step exports under DATA_DIR")
    parser.add_argument("--csv", nargs="*", type=Path, default=[], help="timed logs with named columns")
    parser.add_argument(
        "--columns",
        default="learner=user_id,item=problem_id,correct=correct,skill=skill_id,time=start_time",
        help="the --csv files' columns",
    )
    parser.add_argument("--test-size", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folds", type=int, default=3)
    args = parser.parse_args()
    logs: list[tuple[str, ResponseLog]] = []
    if args.data_dir is not None:
        logs += [(name, read_datashop(_find(args.data_dir, name))) for name in args.files]
    columns = _columns(args.columns)
    logs += [(path.name, read_csv(path, encoding="latin-1", **columns)) for path in args.csv]
    if not logs:
        parser.error("give DATA_DIR (DataShop exports) and/or --csv FILE ...")
    for name, log in logs:
        if not log.timed:
            raise SystemExit(f"{name}: the log has no times, its gaps would be made up")
        print(run(name, log, test_size=args.test_size, seed=args.seed, folds=args.folds), flush=True)
        print()


if __name__ == "__main__":
    main()
