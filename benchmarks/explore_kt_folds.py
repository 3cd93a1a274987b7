"""The engine's learner model on the validation folds of the knowledge-tracing benchmark files
(never their test files): item refinement and a prototype of per-topic learning and novelty.

    .venv/bin/python benchmarks/explore_kt_folds.py DATA_DIR [--splits assist2009 assist2015 statics builder]
                                                             [--variants base b ab topic ab+topic] [--settings JSON]

DATA_DIR as for ``bench_kt_real.py``. Folds: the DKVMN repository's five ``*_train{k}.csv`` /
``*_valid{k}.csv`` pairs (ASSIST2009, ASSIST2015, STATICS); for builder five folds by learner of
``builder_train.csv`` (``ResponseLog.folds(5, seed=0)``). Per split the model's settings are chosen
by :func:`learnloop.evaluate.fit_options` on 3 folds of the train file (as ``bench_kt_real.py``
does; ``--settings`` gives them instead, a JSON object per split), items calibrated on each fold's
training part; the mean validation AUC and log loss over the five folds are printed per variant:

* ``base``: the static calibration (Rasch, ability spread estimated);
* ``b`` / ``ab``: ``EngineModel(refine="b" / "ab")``, the items fitted to the model's own
  next-response predictions on the fold's training part;
* ``topic``: a prototype the engine's model does not have: per-topic learning after a right and
  after a wrong answer and per-topic novelty (PFA's per-skill learning rates), each topic's three
  values fitted, as the item refinement, by Gauss-Newton steps on the model's own predictions
  (the derivative of the logit taken as the number of earlier right / wrong answers on the topic,
  and −1 on the first answer on it), ridge-penalised toward the global settings;
* ``ab+topic``: both, the items refined first.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from learnloop.datasets import ResponseLog, align, read_item_skills, read_three_line
from learnloop.evaluate import EngineModel, fit_options, metrics
from learnloop.tracing import LearnerModel
from learnloop.tracing.ability import update_ability, update_additive
from learnloop.tracing.irt import _PI_OVER_8

STEMS = {"assist2009": "assist2009_updated", "assist2015": "assist2015", "statics": "STATICS"}
VARIANTS = ("base", "b", "ab", "topic", "ab+topic")


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


# -- the prototype: per-topic gains and novelty ---------------------------------------------------
def trace_topic(model: LearnerModel, pos: list[int], sc: list[float], gain: Any, fail: Any, nov: Any) -> np.ndarray:
    """``learnloop.tracing.replay.trace`` with ``practice_gain``, ``failure_gain`` and ``novelty``
    read per topic (lists indexed by topic)."""
    state = model.new_state()
    ability = state.ability.tolist()
    momentum = state.momentum.tolist()
    overall = len(ability) - 1
    chains, succ, b_of, a_of, item_topic = model._chains, model._succ, model._b, model._a, model._item_topic
    topic_var, drift, parent_w, pre_w = model.topic_var, model.drift, model.parent_weight, model.prerequisite_weight
    rho, q = model.momentum_decay, model.momentum_var
    fast, additive = q > 0.0, model.hierarchy == "additive"
    out = np.empty(len(pos))

    def belief(node: int) -> tuple[float, float]:
        row = ability[node]
        if row[2] > 0.0 or node == overall:
            return row[0], row[1]
        for level, anc in enumerate(chains[node][1:], start=1):
            row = ability[anc]
            if row[2] > 0.0 or anc == overall:
                return row[0], row[1] + topic_var * level
        raise AssertionError("unreachable")

    for k, (i, s) in enumerate(zip(pos, sc, strict=True)):
        b, a, t = b_of[i], a_of[i], item_topic[i]
        new = ability[t][2] <= 0.0
        if additive:
            rows = [ability[n] for n in chains[t]]
            m, v = sum(r[0] for r in rows), sum(r[1] for r in rows)
            if fast:
                m, v = m + rho * momentum[0], v + rho * rho * momentum[1] + q
        else:
            m, v = belief(t)
        if new:  # an unmet topic: its items are nov[t] harder, for the prediction and the first update
            b += nov[t]
        z = a * (m - b) / math.sqrt(1.0 + _PI_OVER_8 * a * a * v)
        out[k] = 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0
        if additive:
            means, variances = [r[0] for r in rows], [r[1] for r in rows]
            if fast:
                means.append(rho * momentum[0])
                variances.append(rho * rho * momentum[1] + q - drift)
            update_additive(means, variances, b=b, score=s, a=a, drift=drift)
            if fast:
                momentum[0], momentum[1] = means.pop(), variances.pop()
            for r, m2, v2 in zip(rows, means, variances, strict=True):
                r[0], r[1], r[2] = m2, v2, r[2] + 1.0
        else:
            targets = [(t, 1.0)] + [(n, parent_w) for n in chains[t][1:]] + [(n, pre_w) for n in succ[t]]
            priors = [belief(n) for n, _ in targets]
            for (node, weight), (pm, pv) in zip(targets, priors, strict=True):
                if weight > 0.0:
                    m2, v2 = update_ability(pm, pv, b=b, score=s, a=a, weight=weight, drift=drift)
                    row = ability[node]
                    row[0], row[1], row[2] = m2, v2, row[2] + weight
        ability[t][0] += s * gain[t] + (1.0 - s) * fail[t]
    return out


def predict_topic(em: EngineModel, log: ResponseLog, gain: np.ndarray, fail: np.ndarray, nov: np.ndarray) -> np.ndarray:
    cm = em.catalog_model(log)
    position = np.asarray([cm.index.position(i) for i in log.catalog_item_ids], dtype=np.intp)
    g, f, n = gain.tolist(), fail.tolist(), nov.tolist()
    out = np.empty(log.n_responses)
    bounds = np.flatnonzero(np.r_[log.first, True]).tolist()
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        pos = position[log.item[start:stop]].tolist()
        out[start:stop] = trace_topic(cm.model, pos, log.correct[start:stop].tolist(), g, f, n)
    return out


def earlier_on_topic(log: ResponseLog, topic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The learner's right and wrong answers on the same topic before each response."""
    key = log.learner.astype(np.int64) * (int(topic.max()) + 1) + topic
    order = np.argsort(key, kind="stable")
    k, y = key[order], log.correct[order]
    start = np.r_[True, k[1:] != k[:-1]]
    group = np.cumsum(start) - 1
    right, seen = np.cumsum(y) - y, np.arange(y.size, dtype=np.float64)
    first = np.flatnonzero(start)
    r_out, n_out = np.empty(y.size), np.empty(y.size)
    r_out[order] = right - right[first][group]
    n_out[order] = seen - seen[first][group]
    return r_out, n_out - r_out


def fit_topics(
    em: EngineModel, train: ResponseLog, *, steps: int = 2, ridge: float = 50.0, ridge_novelty: float = 20.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-topic (gain after a right answer, after a wrong one, novelty) by Gauss-Newton steps."""
    cm = em.catalog_model(train)
    n_topics = cm.model.topics.n_topics
    g0, f0, n0 = cm.model.practice_gain, cm.model.failure_gain, cm.model.novelty
    gain, fail, nov = np.full(n_topics, g0), np.full(n_topics, f0), np.full(n_topics, n0)
    position = np.asarray([cm.index.position(i) for i in train.catalog_item_ids], dtype=np.intp)
    topic = np.asarray(cm.model._item_topic)[position[train.item]]
    right, wrong = earlier_on_topic(train, topic)
    first = (right + wrong) == 0
    y = train.correct

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(topic, weights=values, minlength=n_topics)

    for _ in range(steps):
        p = predict_topic(em, train, gain, fail, nov)
        w, r = p * (1.0 - p), y - p
        nov = nov + (-total(r * first) - ridge_novelty * (nov - n0)) / (total(w * first) + ridge_novelty)
        g1, g2 = total(r * right) - ridge * (gain - g0), total(r * wrong) - ridge * (fail - f0)
        h11, h22, h12 = total(w * right * right) + ridge, total(w * wrong * wrong) + ridge, total(w * right * wrong)
        det = h11 * h22 - h12 * h12
        gain, fail = gain + (h22 * g1 - h12 * g2) / det, fail + (h11 * g2 - h12 * g1) / det
    return gain, fail, nov


def run(split: str, root: Path, variants: list[str], settings: dict[str, Any] | None) -> None:
    train_file, folds = load_folds(root, split)
    if settings is None:
        fit = fit_options(train_file, folds=3, progress=False, refine=())
        settings = {k: v for k, v in fit.options.as_kwargs().items() if k != "memory_model"}
    print(f"\n## {split}: settings {json.dumps(settings)}\n", flush=True)
    print("| variant | " + " | ".join(f"fold {k}" for k in range(1, 6)) + " | mean AUC | mean log loss |")
    print("|---|" + "---|" * 7)
    scores: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for train, valid in folds:
        static = EngineModel(settings).fit(train).calibration_
        for variant in variants:
            refine = {"b": "b", "ab": "ab", "ab+topic": "ab"}.get(variant)
            model = EngineModel(settings, refine=refine)
            model.calibration_ = dict(static)
            if refine:
                model.refine_items(train)
            if variant.endswith("topic"):
                p = predict_topic(model, valid, *fit_topics(model, train))
            else:
                p = model.predict(valid)
            m = metrics(valid.correct, p)
            scores[variant].append((m["auc"], m["log_loss"]))
    for variant in variants:
        auc, loss = np.asarray(scores[variant]).T
        cells = " | ".join(f"{a:.4f}" for a in auc)
        print(f"| {variant} | {cells} | {auc.mean():.4f} | {loss.mean():.4f} |", flush=True)


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
