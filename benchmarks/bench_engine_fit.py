"""Engine.fit on public learning logs: the engine that fits itself beside EngineModel with fit_options' choices.

    .venv/bin/python benchmarks/bench_engine_fit.py DATA_DIR [--splits assist2009 assist2015 statics ct]
                                                             [--folds 3] [--seed 0] [--write-docs]

DATA_DIR holds the files (nothing is downloaded; searched recursively): the DKVMN
repository's ``data/`` (https://github.com/jennyzhang0215/DKVMN: ``assist2009_updated_{train,test}.csv``,
``assist2015_{train,test}.csv``, ``STATICS_{train,test}.csv`` with ``STATICS_qid_sid_sname``) and
``ct.csv`` (the KDD Cup 2010 Cognitive Tutor subset of https://github.com/CAHLR/pyBKT-examples,
a timestamped DataShop export, split 70/30 by learner with ``--seed``) and ``largerawsample.csv``
(split ``statcloze``, not run unless named: the statistics cloze practice log the LKT R package ships
as ``data/largerawsample.rda``, converted to CSV as ``bench_forgetting_real.py`` says; timed; split
70/30 by learner with ``--seed``).

Protocol, per log: (a) ``fit_options`` chooses the settings on ``--folds`` folds of the train
learners (seed ``--seed``) and ``fit.model()``, fitted on the whole train file, predicts the test file
by the next-response protocol (``learnloop.evaluate``); the issue's "defaults" are
``EngineModel()`` through the same protocol. (b) An Engine on a memory store gets the log's
items and catalog (one topic per skill, as ``ResponseLog.catalog`` makes it), ingests the train
learners' events and runs ``Engine.fit`` (the same folds and seed; ``holdout`` 0.2 of the train
learners for the guard; the forgetting term tried on a timed log only); then each test learner's
answers are predicted with ``Engine.predict`` at the answer's time and ingested after it, one by one
(the same protocol, through the engine's own state). (c) The engine's defaults: the learner model
of the engine's catalog with the default settings and no calibration (``LogModel(calibrate=False)`` on
``engine.catalog_index``, which predicts as the engine does: ``tests/engine/fitting``) on the test file.
The test file is read once for all the figures of a
log. BLAS threads are pinned to 1; seconds are wall-clock on the machine it runs on.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import functools
import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from learnloop import Engine
from learnloop.datasets import ResponseLog, align, read_csv, read_datashop, read_item_skills, read_three_line
from learnloop.engine import EventColumns, LogModel
from learnloop.evaluate import EngineModel, fit_options
from learnloop.tracing import auc

FILES = {
    "assist2009": ("assist2009_updated_train.csv", "assist2009_updated_test.csv"),
    "assist2015": ("assist2015_train.csv", "assist2015_test.csv"),
    "statics": ("STATICS_train.csv", "STATICS_test.csv"),
}
NAMES = {
    "assist2009": "ASSISTments 2009",
    "assist2015": "ASSISTments 2015",
    "statics": "STATICS",
    "ct": "ct.csv",
    "statcloze": "statistics cloze (timed)",
}
#: the columns of ``largerawsample.csv`` (see ``bench_forgetting_real.py``)
STATCLOZE = {"learner": "student", "item": "item", "correct": "correct", "skill": "skill", "time": "time"}
START, END = "<!-- bench_engine_fit:start -->", "<!-- bench_engine_fit:end -->"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "models.md"


def find(root: Path, name: str) -> Path:
    found = sorted(root.rglob(name))
    if not found:
        sys.exit(f"{name} not found under {root}")
    return found[0]


def load(root: Path, split: str, seed: int) -> tuple[ResponseLog, ResponseLog]:
    if split in ("ct", "statcloze"):
        whole = (
            read_datashop(find(root, "ct.csv"))
            if split == "ct"
            else read_csv(find(root, "largerawsample.csv"), **STATCLOZE)
        )
        train, test = whole.split(0.3, seed=seed)
        aligned = align(train, test)
    else:
        skills = read_item_skills(find(root, "STATICS_qid_sid_sname")) if split == "statics" else None
        train_file, test_file = (find(root, f) for f in FILES[split])
        aligned = align(read_three_line(train_file, item_skills=skills), read_three_line(test_file, item_skills=skills))
    return aligned[0], aligned[1]


def ingest(engine: Engine, log: ResponseLog, app: str = "default") -> None:
    for user, events in tqdm(list(log.events("log")), desc="ingesting the train learners", unit="learner"):
        for start in range(0, len(events), 5_000):
            engine.upsert_events(user, events[start : start + 5_000], app=app)


def engine_protocol(engine: Engine, log: ResponseLog, *, app: str, desc: str) -> np.ndarray:
    """Each answer predicted by ``Engine.predict`` at its time, then ingested (the next-response protocol)."""
    out = np.empty(log.n_responses)
    k = 0
    with tqdm(total=log.n_responses, desc=desc, unit="answer") as bar:
        for user, events in log.events("log"):
            for event in events:
                engine.clock = functools.partial(datetime.fromisoformat, event["timestamp"])
                item = event["item_id"]
                out[k] = engine.predict(user, "log", [item], topic_id=event["topic_id"], app=app)[item]
                engine.upsert_events(user, [event], app=app)
                k += 1
            bar.update(len(events))
    return out


def run(split: str, root: Path, *, folds: int, seed: int) -> dict[str, Any]:
    train, test = load(root, split, seed)
    print(f"{split}: train {train!r}, test {test!r}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    fit = fit_options(train, folds=folds, seed=seed, progress=True)
    search_seconds = time.perf_counter() - t0
    fitted_model = fit.model().fit(train)
    p_fitted_model = fitted_model.predict(test)
    p_default_model = EngineModel().fit(train).predict(test)

    items, catalog = train.catalog("log")
    engine = Engine(seed=0)
    for app in ("default", "defaults"):
        engine.upsert_items(items, app=app)
        engine.upsert_catalog(catalog, app=app)
    ingest(engine, train)
    t0 = time.perf_counter()
    result = engine.fit("log", folds=folds, seed=seed, forgetting=train.timed)
    fit_seconds = time.perf_counter() - t0
    print(result, file=sys.stderr, flush=True)
    p_engine = engine_protocol(engine, test, app="default", desc="test learners, engine after Engine.fit")
    # the engine's defaults: no calibration, the default settings; its learner model run on the test file
    # (LogModel on the engine's catalog predicts as the engine does: tests/engine/fitting)
    defaults = LogModel(engine.learner_options_for("log", app="defaults"), calibrate=False)
    defaults.index = engine.catalog_index("log", app="defaults")
    p_engine_default = defaults.predict(EventColumns(
        test.learner, test.item, test.correct, test.time, test.learner_ids, train.catalog_item_ids, test.timed
    ))  # fmt: skip
    y = test.correct
    return {
        "split": split,
        "train": train.n_responses,
        "test": test.n_responses,
        "learners": [int(train.present_learners().size), int(test.present_learners().size)],
        "auc_model_fitted": auc(y, p_fitted_model),
        "auc_model_default": auc(y, p_default_model),
        "auc_engine_fit": auc(y, p_engine),
        "auc_engine_default": auc(y, p_engine_default),
        "fit_seconds": fit_seconds,
        "search_seconds": search_seconds,
        "kept": result.kept,
        "held_out": (result.old_log_loss, result.new_log_loss),
        "chosen": None if result.chosen is None else result.chosen.describe(),
        "options_fit": {
            "refine": fit.refine,
            "topic_rates": fit.topic_rates,
            "echo": fit.echo,
            "forgetting": fit.forgetting,
        },  # fmt: skip
    }


def table(rows: list[dict[str, Any]], folds: int, seed: int) -> str:
    out = [
        "| log | train / test answers | EngineModel (fit_options) | engine after Engine.fit | difference "
        "| EngineModel() defaults | engine defaults | Engine.fit kept | Engine.fit seconds (answers/s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        diff = r["auc_engine_fit"] - r["auc_model_fitted"]
        out.append(
            f"| {NAMES[r['split']]} | {r['train']:,} / {r['test']:,} | {r['auc_model_fitted']:.4f} "
            f"| {r['auc_engine_fit']:.4f} | {diff:+.4f} | {r['auc_model_default']:.4f} "
            f"| {r['auc_engine_default']:.4f} | {r['kept']} (held-out log loss {r['held_out'][0]:.4f} → "
            f"{r['held_out'][1]:.4f}) | {r['fit_seconds']:.0f} s ({r['train'] / r['fit_seconds']:,.0f}) |"
        )
    out += [
        "",
        f"Test AUC, next-response protocol; settings chosen on {folds} folds of the train learners, seed "
        f"{seed}. `Engine.fit` searches on 80 % of the train learners and compares with the settings in use "
        "on the other 20 % before storing; `fit_options` searches on all of them. Engine defaults: the "
        "engine's learner model with the default settings and no calibration (the items' cold-start "
        "difficulties); EngineModel() calibrates the items on the train file.",
        "",
    ]
    for r in rows:
        c = r["chosen"]
        if c is not None:
            out.append(f"- {NAMES[r['split']]}: Engine.fit chose {c}; fit_options chose {r['options_fit']}.")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--splits", nargs="*", default=["ct", "statics", "assist2009", "assist2015"])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write-docs", action="store_true", help=f"put the table into {DOCS.name}")
    parser.add_argument(
        "--results", type=Path, help="keep each log's row there (JSON) and build the table from every row kept"
    )
    args = parser.parse_args()
    rows = []
    for split in args.splits:
        rows.append(run(split, args.data_dir, folds=args.folds, seed=args.seed))
        print(table(rows, args.folds, args.seed), flush=True)
        if args.results is not None:
            args.results.mkdir(parents=True, exist_ok=True)
            (args.results / f"{split}.json").write_text(json.dumps(rows[-1]))
    if args.results is not None:
        kept = {p.stem: json.loads(p.read_text()) for p in args.results.glob("*.json")}
        rows = [kept[split] for split in NAMES if split in kept]
    text = table(rows, args.folds, args.seed)
    if args.write_docs:
        doc = DOCS.read_text()
        if START not in doc or END not in doc:
            sys.exit(f"{DOCS} has no {START} ... {END} markers")
        pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
        DOCS.write_text(pattern.sub(lambda _: f"{START}\n{text}\n{END}", doc))
        print(f"written to {DOCS}")


if __name__ == "__main__":
    main()
