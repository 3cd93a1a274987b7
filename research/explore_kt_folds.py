"""The engine's learner model on the validation folds of the knowledge-tracing benchmark files
(never their test files): item refinement, per-topic learning rates and novelty, the answer echo.

    .venv/bin/python research/explore_kt_folds.py DATA_DIR [--splits assist2009 assist2015 statics builder]
                                                             [--variants base b ab topic b+topic ab+topic
                                                                         echo topic+echo b+topic+echo ab+topic+echo]
                                                             [--settings JSON]

DATA_DIR as for ``bench_kt_real.py``. Folds: the DKVMN repository's five ``*_train{k}.csv`` /
``*_valid{k}.csv`` pairs (ASSIST2009, ASSIST2015, STATICS); for builder five folds by learner of
``builder_train.csv`` (``ResponseLog.folds(5, seed=0)``). Per split the model's settings are chosen
by :func:`learnloop.evaluate.fit_options` on 3 folds of the train file (as ``bench_kt_real.py``
does; ``--settings`` gives them instead, a JSON object per split), items calibrated on each fold's
training part; the mean validation AUC and log loss over the five folds are printed per variant:

* ``base``: the static calibration (Rasch, ability spread estimated);
* ``b`` / ``ab``: ``EngineModel(refine="b" / "ab")``, the items fitted to the model's own
  next-response predictions on the fold's training part;
* ``topic``: ``EngineModel(topic_rates=True)``, per-topic learning after a right and after a wrong
  answer and per-topic novelty (PFA's per-skill learning rates), each topic's three values fitted,
  as the item refinement, by Gauss-Newton steps on the model's own predictions on the fold's
  training part (:func:`learnloop.tracing.rates.fit_topic_rates`), ridge-penalised toward the
  global settings;
* ``b+topic`` / ``ab+topic``: both, the items refined first;
* ``echo``, ``topic+echo``, ``b+topic+echo``, ``ab+topic+echo``: then the answer echo
  (``EngineModel(echo=True)``, :mod:`learnloop.tracing.echo`) fitted on the fold's training part: a
  prediction-only term in the learner's previous answer, weighted per (previous skill, skill) pair.

With an echo variant the table has a last column: the mean validation AUC on the rows that are not
copies — leaving out the rows after a (previous skill, skill) switch whose fitted echo weight (switch
plus pair) is at least 2, found by the first echo variant of the list on each fold, for every variant
(as ``explore_assist09.py`` measures it): ASSIST2009's files write a problem tagged with several
skills once per skill, the same answer on consecutive rows.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from learnloop.datasets import ResponseLog, align, read_item_skills, read_three_line
from learnloop.evaluate import EngineModel, fit_options, metrics
from learnloop.tracing import rates
from learnloop.tracing.echo import Echo, previous_answers

STEMS = {"assist2009": "assist2009_updated", "assist2015": "assist2015", "statics": "STATICS"}
VARIANTS = (
    "base", "b", "ab", "topic", "b+topic", "ab+topic", "echo", "topic+echo", "b+topic+echo", "ab+topic+echo"
)  # fmt: skip


def find(root: Path, name: str) -> Path:
    found = sorted(root.rglob(name))
    if not found:
        sys.exit(f"{name} not found under {root}")
    return found[0]


def load_folds(root: Path, split: str) -> tuple[ResponseLog, list[tuple[ResponseLog, ResponseLog]]]:
    """The train file and its five (train, validation) folds."""
    if split == "builder":
        train = read_three_line(find(root, "builder_train.csv"))
        return train, train.folds(5, seed=0)
    stem = STEMS[split]
    skills = read_item_skills(find(root, "STATICS_qid_sid_sname")) if split == "statics" else None
    train = read_three_line(find(root, f"{stem}_train.csv"), item_skills=skills)
    pairs = [
        align(
            read_three_line(find(root, f"{stem}_train{k}.csv"), item_skills=skills),
            read_three_line(find(root, f"{stem}_valid{k}.csv"), item_skills=skills),
        )
        for k in range(1, 6)
    ]
    return train, [(a, b) for a, b in pairs]


def earlier_on_topic(log: ResponseLog, topic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The learner's right and wrong answers on the same topic before each response."""
    return rates.earlier_on_topic(log.learner, topic, log.correct)


def copies(model: EngineModel, log: ResponseLog, cut: float = 2.0) -> np.ndarray:
    """The rows after a skill switch whose fitted echo weight (switch plus pair) is at least ``cut``."""
    assert model.echo_ is not None
    cm = model.catalog_model(log)
    echo = Echo.from_doc(model.echo_, cm.index.topic_ids)
    position = np.asarray([cm.index.position(i) for i in log.catalog_item_ids], dtype=np.intp)
    topic = cm.index.item_topic[position[log.item]]
    prev, _ = previous_answers(topic, log.correct, log.first)
    switch = (prev >= 0) & (prev != topic)
    return switch & (echo.switch + echo.pair_weight(prev, topic) >= cut)


def run(split: str, root: Path, variants: list[str], settings: dict[str, Any] | None) -> None:
    train_file, folds = load_folds(root, split)
    if settings is None:
        fit = fit_options(train_file, folds=3, progress=False, refine=(), topic_rates=False, echo=False)
        settings = {k: v for k, v in fit.options.as_kwargs().items() if k != "memory_model"}
    print(f"\n## {split}: settings {json.dumps(settings)}\n", flush=True)
    echoed = any(v.endswith("echo") for v in variants)
    rest_head = " AUC without copied rows |" if echoed else ""
    print("| variant | " + " | ".join(f"fold {k}" for k in range(1, 6)) + " | mean AUC | mean log loss |" + rest_head)
    print("|---|" + "---|" * (8 if echoed else 7))
    scores: dict[str, list[tuple[float, ...]]] = {v: [] for v in variants}
    for train, valid in folds:
        static = EngineModel(settings).fit(train).calibration_
        predictions, rest = {}, np.ones(valid.n_responses, dtype=bool)
        for variant in variants:
            refine = {"b": "b", "ab": "ab"}.get(variant.split("+")[0])
            model = EngineModel(settings, refine=refine)
            model.calibration_ = dict(static)
            if refine:
                model.refine_items(train)
            if "topic" in variant:
                model.fit_topic_rates(train)
            if variant.endswith("echo"):
                model.fit_echo(train)
                if rest.all():
                    rest = ~copies(model, valid)
            predictions[variant] = model.predict(valid)
        for variant, p in predictions.items():
            m = metrics(valid.correct, p)
            scores[variant].append((m["auc"], m["log_loss"], metrics(valid.correct[rest], p[rest])["auc"]))
    for variant in variants:
        auc, loss, auc_rest = np.asarray(scores[variant]).T
        cells = " | ".join(f"{a:.4f}" for a in auc)
        tail = f" {auc_rest.mean():.4f} |" if echoed else ""
        print(f"| {variant} | {cells} | {auc.mean():.4f} | {loss.mean():.4f} |{tail}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--splits", nargs="+", default=["assist2009", "assist2015", "statics", "builder"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--settings", type=json.loads, default=None, help="JSON: {split: {option: value}}")
    args = parser.parse_args()
    for split in args.splits:
        run(split, args.data_dir, args.variants, None if args.settings is None else args.settings[split])


if __name__ == "__main__":
    main()
