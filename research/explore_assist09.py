"""Where the engine's online model loses AUC on ASSIST2009, measured on the DKVMN repository's five
train/validation folds only (``*_train{k}.csv`` / ``*_valid{k}.csv``; the ``*_test.csv`` files are
never opened), and which online-computable terms close the gap.

    .venv/bin/python research/explore_assist09.py DATA_DIR [--splits assist2009 assist2015 statics]
                                                    [--settings JSON] [--folds 1 2 3 4 5] [--cache DIR]

DATA_DIR holds the DKVMN ``data/`` folders (as for ``bench_kt_real.py``). Per split the engine's settings
are chosen by :func:`learnloop.evaluate.fit_options` on 3 folds of the train file (the union of each
train/valid pair; ``--settings`` gives them instead: ``{split: {"settings": {...}, "refine": ...}}``).
Per fold the engine's model (:class:`learnloop.evaluate.EngineModel`, items calibrated and, if chosen,
refined on the fold's training part) predicts every response of the training part and of the
validation part, each from the same learner's earlier responses only. Then it prints:

* **the data**: how often a response equals the learner's previous one, how often the previous row is on
  another skill, and the same-skill runs (ASSIST2009's 3-line files repeat the row of a problem tagged
  with several skills once per skill, with the same answer, one after the other);
* **the models**, as mean validation AUC / log loss over the folds: the engine; the previous response of
  the learner alone; PFA and Best-LR (logistic regressions on counts of earlier right and wrong answers,
  fitted on the fold's training part); and logistic mixes of the engine's logit with terms computed from
  the learner's earlier responses (previous answer, previous answer after a skill switch, an exponentially
  decayed residual across skills as in R-PFA, a per-(previous skill, skill) weight on the previous answer,
  position in the current skill run), their weights fitted on the fold's training part (where the engine's
  items were calibrated: its logit is slightly optimistic there), scored on the validation part; also their
  AUC on the rows after a skill switch, on the rows on the previous row's skill, and without the *echo rows*
  (rows after a (previous skill, skill) pair whose fitted weight on the previous answer is at least 2: the
  copies of a multi-skill problem's answer; the table of the data gives their share and how often they
  equal the previous answer).

Every feature of a response is built from rows of the same learner strictly before it.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.signal import lfilter

sys.path.insert(0, str(Path(__file__).resolve().parent))

from explore_kt_folds import earlier_on_topic, load_folds

from learnloop.datasets import ResponseLog
from learnloop.evaluate import EngineModel, fit_options, metrics

DECAYS = (0.3, 0.5, 0.7, 0.9)
MIN_PAIR = 20  # (previous skill, skill) pairs seen fewer times in a fold's training part get no weight of their own


# -- features, each from the same learner's earlier rows only ----------------------------------------------------------
def shift(x: np.ndarray, first: np.ndarray, fill: float = 0.0) -> np.ndarray:
    """x of the learner's previous row (``fill`` on a learner's first row)."""
    out = np.empty(x.shape, dtype=np.float64)
    out[0] = fill
    out[1:] = x[:-1]
    out[first] = fill
    return out


def decayed(x: np.ndarray, first: np.ndarray, decay: float) -> np.ndarray:
    """sum over the learner's earlier rows j of decay**(t-1-j) x_j (0 on the first row): S <- decay S + x."""
    out = np.empty(x.size)
    bounds = np.flatnonzero(np.r_[first, True]).tolist()
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        # S_t = decay S_{t-1} + x_{t-1}
        out[start] = 0.0
        if stop - start > 1:
            out[start + 1 : stop] = lfilter([1.0], [1.0, -decay], x[start : stop - 1])
    return out


def before(x: np.ndarray, learner: np.ndarray) -> np.ndarray:
    """sum of x over the learner's earlier rows."""
    c = np.cumsum(x) - x
    first = np.r_[True, learner[1:] != learner[:-1]]
    base = c[first][np.cumsum(first) - 1]
    return c - base


class Rows:
    """The per-response quantities of one log the models are built from."""

    def __init__(self, log: ResponseLog, p: np.ndarray) -> None:
        self.y = log.correct.astype(np.float64)
        self.first = log.first
        self.item = log.item
        self.skill = log.item_skill[log.item]
        self.n_skills = log.n_skills
        self.n_items = log.n_items
        self.p = np.clip(p, 1e-6, 1 - 1e-6)
        self.z = np.log(self.p / (1.0 - self.p))
        f = self.first
        sign = 2.0 * self.y - 1.0
        self.prev = shift(sign, f)  # previous answer, +1 / -1, 0 on the first row
        prev_skill = shift(self.skill.astype(np.float64), f, fill=-1.0).astype(np.intp)
        self.prev_skill = prev_skill
        self.switch = (~f) & (prev_skill != self.skill)
        self.same = (~f) & (prev_skill == self.skill)
        # n-th row of the current same-skill run (0: first of the run)
        start = f | (prev_skill != self.skill)
        run_id = np.cumsum(start) - 1
        self.run_pos = np.arange(self.y.size) - np.flatnonzero(start)[run_id]
        right_s, wrong_s = earlier_on_topic(log, self.skill)
        self.right_s, self.wrong_s = right_s, wrong_s
        self.right, self.wrong = before(self.y, log.learner), before(1.0 - self.y, log.learner)
        self.resid = {d: decayed(self.y - self.p, f, d) for d in DECAYS}
        self.outcome = {d: decayed(sign, f, d) for d in DECAYS}


# -- logistic regression (L2, L-BFGS) ---------------------------------------------------------------------------------
class Logit:
    """Logistic regression on a (sparse) design; column 0 may be an unpenalised intercept."""

    def __init__(self, l2: float = 1.0, free: int = 0) -> None:
        self.l2, self.free = l2, free

    def fit(self, x: sp.csr_matrix, y: np.ndarray) -> Logit:
        n, k = x.shape
        pen = np.full(k, self.l2 / n)
        pen[: self.free] = 0.0
        xt = x.T.tocsr()

        def f(w: np.ndarray) -> tuple[float, np.ndarray]:
            z = x @ w
            ll = np.logaddexp(0.0, z) - y * z
            g = xt @ (1.0 / (1.0 + np.exp(-z)) - y) / n
            return float(ll.mean() + 0.5 * pen @ (w * w)), g + pen * w

        self.w = minimize(f, np.zeros(k), jac=True, method="L-BFGS-B", options={"maxiter": 500}).x
        return self

    def predict(self, x: sp.csr_matrix) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(x @ self.w)))


def dense(*cols: np.ndarray) -> sp.csr_matrix:
    return sp.csr_matrix(np.column_stack(cols))


def onehot(index: np.ndarray, n: int, value: np.ndarray | None = None) -> sp.csr_matrix:
    v = np.ones(index.size) if value is None else value
    return sp.csr_matrix((v, (np.arange(index.size), index)), shape=(index.size, n))


def pair_index(r: Rows, pairs: dict[int, int]) -> np.ndarray:
    """Column of each row's (previous skill, skill) pair after a switch (-1: none or rare)."""
    key = r.prev_skill.astype(np.int64) * (r.n_skills + 1) + r.skill
    out = np.asarray([pairs.get(k, -1) for k in key.tolist()], dtype=np.intp)
    out[~r.switch] = -1
    return out


# The designs: each takes (rows, fitted state from the training rows) and returns a sparse design; ``state`` is
# filled on the training rows (e.g. the pair vocabulary) and reused on the validation rows.
Design = Callable[[Rows, dict[str, Any]], sp.csr_matrix]


def d_prev_alone(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    return dense(np.ones_like(r.z), r.prev)


def d_pfa(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    k = r.n_skills
    return sp.hstack([onehot(r.skill, k), onehot(r.skill, k, r.right_s), onehot(r.skill, k, r.wrong_s)]).tocsr()


def d_best_lr(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    k = r.n_skills
    lr, lw = np.log1p(r.right_s), np.log1p(r.wrong_s)
    return sp.hstack(
        [
            dense(np.ones_like(r.z), np.log1p(r.right), np.log1p(r.wrong)),
            onehot(r.item, r.n_items),
            onehot(r.skill, k, lr),
            onehot(r.skill, k, lw),
        ]
    ).tocsr()


def d_best_lr_prev(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    return sp.hstack([d_best_lr(r, s), dense(r.prev * r.same, r.prev * r.switch)]).tocsr()


def d_engine(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    return dense(np.ones_like(r.z), r.z)


def d_engine_prev(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    return dense(np.ones_like(r.z), r.z, r.prev)


def d_engine_prev_switch(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    return dense(np.ones_like(r.z), r.z, r.prev * r.same, r.prev * r.switch)


def d_engine_prev_alternation(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    alt = two_back(r) & r.switch
    return dense(np.ones_like(r.z), r.z, r.prev * r.same, r.prev * (r.switch & ~alt), r.prev * alt)


def resid_design(kind: str, switch: bool) -> Design:
    def design(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
        cols = [np.ones_like(r.z), r.z, (r.resid if kind == "resid" else r.outcome)[s["decay"]]]
        if switch:
            cols += [r.prev * r.same, r.prev * r.switch]
        return dense(*cols)

    return design


def d_engine_pairs(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    if "pairs" not in s:  # training rows: the pairs seen often enough
        key = (r.prev_skill.astype(np.int64) * (r.n_skills + 1) + r.skill)[r.switch]
        values, counts = np.unique(key, return_counts=True)
        s["pairs"] = {int(v): j for j, v in enumerate(values[counts >= MIN_PAIR].tolist())}
    col = pair_index(r, s["pairs"])
    has = col >= 0
    pairs = sp.csr_matrix((r.prev[has], (np.flatnonzero(has), col[has])), shape=(r.z.size, max(len(s["pairs"]), 1)))
    base = [np.ones_like(r.z), r.z, r.prev * r.same, r.prev * r.switch]
    return sp.hstack([dense(*base), pairs]).tocsr()


def d_engine_all(r: Rows, s: dict[str, Any]) -> sp.csr_matrix:
    run = np.log1p(r.run_pos)
    extra = dense(r.resid[s["decay"]], run, run * r.prev, r.switch.astype(np.float64))
    return sp.hstack([d_engine_pairs(r, s), extra]).tocsr()


# name -> (design, unpenalised leading columns, ridge, searches the decay)
MODELS: dict[str, tuple[Design, int, float, bool]] = {
    "previous response alone (logistic)": (d_prev_alone, 2, 0.0, False),
    "PFA (per-skill intercept, rights, wrongs)": (d_pfa, 0, 1.0, False),
    "Best-LR (item, log(1+rights/wrongs) total and per skill)": (d_best_lr, 3, 1.0, False),
    "Best-LR + previous answer (same skill / after a switch)": (d_best_lr_prev, 3, 1.0, False),
    "engine, recalibrated (a + b z)": (d_engine, 2, 0.0, False),
    "engine + previous answer": (d_engine_prev, 4, 0.0, False),
    "engine + previous answer, same skill / after a switch": (d_engine_prev_switch, 4, 0.0, False),
    "engine + previous answer, same skill / switch / alternation A B A": (d_engine_prev_alternation, 5, 0.0, False),
    "engine + decayed residual (R-PFA, all skills)": (resid_design("resid", False), 3, 0.0, True),
    "engine + decayed outcomes (all skills)": (resid_design("outcome", False), 3, 0.0, True),
    "engine + decayed residual + previous answer by switch": (resid_design("resid", True), 5, 0.0, True),
    "engine + previous answer by (previous skill, skill) pair": (d_engine_pairs, 4, 1.0, False),
    "engine + all of the above + run position": (d_engine_all, 4, 1.0, True),
}


def fit_design(name: str, tr: Rows, va: Rows) -> np.ndarray:
    design, free, l2, search = MODELS[name]
    best: tuple[float, np.ndarray] | None = None
    for decay in DECAYS if search else (None,):
        s: dict[str, Any] = {"decay": decay}
        x_tr = design(tr, s)
        model = Logit(l2=l2, free=free).fit(x_tr, tr.y)
        loss = metrics(tr.y, model.predict(x_tr))["log_loss"]
        if best is None or loss < best[0]:
            best = (loss, model.predict(design(va, s)))
            chosen[name] = (decay, model.w[:6].round(3).tolist())
            if "pairs" in s:
                echo = np.zeros(len(s["pairs"]) + 1)
                echo[:-1] = model.w[4 : 4 + len(s["pairs"])] + model.w[3]  # pair weight + global switch weight
                copies[name] = echo[pair_index(va, s["pairs"])]
    assert best is not None
    return best[1]


chosen: dict[str, Any] = {}
copies: dict[str, np.ndarray] = {}


# -- the data ---------------------------------------------------------------------------------------------------------
def describe(r: Rows) -> dict[str, float]:
    m = ~r.first
    y_prev = (r.prev + 1.0) / 2.0
    eq = (r.y == y_prev) & m
    start = r.first | r.switch
    lens = np.diff(np.r_[np.flatnonzero(start), r.y.size])
    per_row = np.repeat(lens, lens)
    return {
        "responses": float(r.y.size),
        "P(right)": r.y.mean(),
        "P(answer = previous)": eq[m].mean(),
        "P(previous row on another skill)": r.switch[m].mean(),
        "P(answer = previous | another skill)": eq[r.switch].mean(),
        "P(answer = previous | same skill)": eq[r.same].mean(),
        "P(right | previous right, another skill)": r.y[r.switch & (r.prev > 0)].mean(),
        "P(right | previous wrong, another skill)": r.y[r.switch & (r.prev < 0)].mean(),
        "P(skill = skill two rows back, previous another)": two_back(r)[r.switch].mean(),
        "mean same-skill run (rows)": lens.mean(),
        "share of rows in runs of >= 10": (per_row >= 10).mean(),
    }


def two_back(r: Rows) -> np.ndarray:
    """The skill two rows back (same learner) equals this row's: the alternation of a multi-skill problem."""
    sk2 = np.full(r.y.size, -1, dtype=np.intp)
    sk2[2:] = r.skill[:-2]
    ok = np.ones(r.y.size, dtype=bool)
    ok[r.first] = False
    ok[np.flatnonzero(r.first) + 1] = False
    return ok & (sk2 == r.skill)


def engine_predictions(
    split: str, root: Path, spec: dict[str, Any], k: int, train: ResponseLog, valid: ResponseLog, cache: Path | None
) -> tuple[np.ndarray, np.ndarray]:
    path = None if cache is None else cache / f"{split}_fold{k}.npz"
    if path is not None and path.exists():
        z = np.load(path)
        if z["train"].size == train.n_responses and z["valid"].size == valid.n_responses:
            return z["train"], z["valid"]
    model = EngineModel(spec["settings"], refine=spec.get("refine")).fit(train)
    p_tr, p_va = model.predict(train), model.predict(valid)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, train=p_tr, valid=p_va)
    return p_tr, p_va


def run(
    split: str, root: Path, spec: dict[str, Any] | None, which: list[int], cache: Path | None, models: list[str]
) -> None:
    train_file, folds = load_folds(root, split)
    if spec is None:
        fit = fit_options(train_file, folds=3, progress=False)
        spec = {
            "settings": {k: v for k, v in fit.options.as_kwargs().items() if k != "memory_model"},
            "refine": fit.refine,
        }
    print(f"\n## {split}\n\nengine settings: `{json.dumps(spec)}`\n", flush=True)
    stats: list[dict[str, float]] = []
    scores: dict[str, list[tuple[float, float]]] = {"engine (fold predictions)": [], **{m: [] for m in models}}
    split_auc: dict[str, list[tuple[float, float]]] = {m: [] for m in scores}
    for k in which:
        train, valid = folds[k - 1]
        p_tr, p_va = engine_predictions(split, root, spec, k, train, valid, cache)
        tr, va = Rows(train, p_tr), Rows(valid, p_va)
        stats.append(describe(va))
        copies.clear()
        preds = {"engine (fold predictions)": va.p}
        pair_model = "engine + previous answer by (previous skill, skill) pair"
        for name in models:
            preds[name] = fit_design(name, tr, va)
        for name, p in preds.items():
            m = metrics(va.y, p)
            scores[name].append((m["auc"], m["log_loss"]))
            rest = ~(va.switch & (copies[pair_model] >= 2.0)) if pair_model in copies else np.ones(va.y.size, bool)
            split_auc[name].append(
                (
                    metrics(va.y[va.switch], p[va.switch])["auc"],
                    metrics(va.y[va.same], p[va.same])["auc"],
                    metrics(va.y[rest], p[rest])["auc"],
                )
            )
        if pair_model in copies:
            echo = copies[pair_model]
            y_prev = (va.prev + 1.0) / 2.0
            for cut in (1.0, 2.0, 3.0):
                strong = va.switch & (echo >= cut)
                stats[-1][f"share of rows after a pair with echo weight >= {cut:g}"] = strong.mean()
                stats[-1][f"P(answer = previous | echo weight >= {cut:g})"] = (va.y == y_prev)[strong].mean()
        print(f"fold {k}: " + "; ".join(f"{n}: {v}" for n, v in chosen.items() if "engine" in n)[:400], flush=True)
    print("\n| validation rows (fold mean) | value |\n|---|---|")
    for key in stats[0]:
        print(f"| {key} | {np.mean([s[key] for s in stats]):.4f} |")
    print(
        "\n| model | " + " | ".join(f"fold {k}" for k in which) + " | mean AUC | mean log loss |"
        " AUC after a skill switch | AUC same skill | AUC without echo rows |"
    )
    print("|---|" + "---|" * (len(which) + 5))
    for name, vals in scores.items():
        auc, loss = np.asarray(vals).T
        sw, same, rest = np.asarray(split_auc[name]).T
        cells = " | ".join(f"{a:.4f}" for a in auc)
        print(
            f"| {name} | {cells} | {auc.mean():.4f} | {loss.mean():.4f} | {sw.mean():.4f} | {same.mean():.4f} | {rest.mean():.4f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument(
        "--splits",
        nargs="+",
        default=["assist2009", "assist2015", "statics"],
        choices=["assist2009", "assist2015", "statics"],
    )
    parser.add_argument(
        "--settings",
        type=json.loads,
        default=None,
        help='JSON: {split: {"settings": {option: value}, "refine": null | "b" | "ab"}}',
    )
    parser.add_argument("--folds", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--cache", type=Path, default=None, help="directory to keep the engine's fold predictions")
    args = parser.parse_args()
    for split in args.splits:
        spec = None if args.settings is None else args.settings.get(split)
        run(split, args.data_dir, spec, args.folds, args.cache, args.models)


if __name__ == "__main__":
    main()
