"""The next-response protocol and its result table."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from learnloop._types import FloatArray
from learnloop.datasets import ResponseLog, align
from learnloop.evaluate._models import Model
from learnloop.tracing import MemoryModel, auc, expected_calibration_error, log_loss, memory_trace

__all__ = ["GAP_BINS", "Report", "Result", "by_gap", "evaluate", "metrics", "reliability", "skill_gaps"]

#: the gap bins of :func:`by_gap`: label, lower and upper bound of the gap in days (NaN: no earlier answer)
GAP_BINS: tuple[tuple[str, float, float], ...] = (
    ("first answer on the skill", math.nan, math.nan),
    ("< 1 hour", 0.0, 1.0 / 24.0),
    ("1 hour to 1 day", 1.0 / 24.0, 1.0),
    ("1 day to 1 week", 1.0, 7.0),
    (">= 1 week", 7.0, math.inf),
)


def metrics(y: FloatArray, p: FloatArray) -> dict[str, float]:
    """AUC, RMSE, log loss and expected calibration error (10 bins) of predictions ``p``."""
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    return {
        "auc": auc(y, p),
        "rmse": float(np.sqrt(np.mean((y - p) ** 2))),
        "log_loss": log_loss(y, p),
        "ece": expected_calibration_error(y, p),
    }


def reliability(y: FloatArray, p: FloatArray, *, n_bins: int = 10) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per equal-width bin of the predictions: mean prediction, observed rate, count (empty bins left out)."""
    bins = np.minimum((np.asarray(p) * n_bins).astype(np.intp), n_bins - 1)
    count = np.bincount(bins, minlength=n_bins)
    keep = count > 0
    mean_p = np.bincount(bins, np.asarray(p, dtype=np.float64), n_bins)[keep] / count[keep]
    rate = np.bincount(bins, np.asarray(y, dtype=np.float64), n_bins)[keep] / count[keep]
    return mean_p, rate, count[keep].astype(np.float64)


def skill_gaps(log: ResponseLog) -> FloatArray:
    """Days since the same learner's previous answer on the same skill (its item's first skill; items
    without one share a skill), NaN on the first: the gap a memory of the skill has to bridge."""
    skill = np.where(log.item_skill[log.item] >= 0, log.item_skill[log.item], log.n_skills)
    group = log.learner.astype(np.int64) * (log.n_skills + 1) + skill
    return memory_trace(MemoryModel(), group, log.time, log.correct)[1]


def by_gap(log: ResponseLog, predictions: FloatArray) -> list[dict[str, Any]]:
    """The predictions' figures per gap bin of :data:`GAP_BINS` (:func:`skill_gaps`), and over all:
    ``{"gap", "n", "correct", "mean_p", "auc", "ece", "log_loss"}`` (AUC NaN in a bin with one outcome)."""
    p = np.asarray(predictions, dtype=np.float64)
    y = log.correct
    gap = skill_gaps(log)
    rows = []
    masks = [(label, np.isnan(gap) if math.isnan(lo) else (gap >= lo) & (gap < hi)) for label, lo, hi in GAP_BINS]
    for label, mask in [*masks, ("all", np.ones(y.size, dtype=bool))]:
        n = int(mask.sum())
        if not n:
            rows.append({"gap": label, "n": 0})
            continue
        yy, pp = y[mask], p[mask]
        both = bool(((yy >= 0.5).any()) and ((yy < 0.5).any()))
        rows.append(
            {
                "gap": label,
                "n": n,
                "correct": float(yy.mean()),
                "mean_p": float(pp.mean()),
                "auc": auc(yy, pp) if both else math.nan,
                "ece": expected_calibration_error(yy, pp),
                "log_loss": log_loss(yy, pp),
            }
        )
    return rows


@dataclass(frozen=True)
class Result:
    """One model's figures on one test log (its predictions kept for plots)."""

    model: str
    auc: float
    rmse: float
    log_loss: float
    ece: float
    fit_seconds: float
    predict_seconds: float
    n_responses: int
    predictions: FloatArray = field(repr=False, compare=False)

    @property
    def responses_per_second(self) -> float:
        """Test responses replayed (with a prediction before each) per second."""
        return self.n_responses / self.predict_seconds if self.predict_seconds > 0 else float("inf")


@dataclass(frozen=True)
class Report:
    """The result table of :func:`evaluate`: ``str()`` is a Markdown table, :meth:`rows` plain
    dicts (``pandas.DataFrame(report.rows())`` makes a frame)."""

    results: tuple[Result, ...]
    truth: FloatArray = field(repr=False)
    label: str = ""

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "data": self.label,
                "model": r.model,
                "auc": r.auc,
                "rmse": r.rmse,
                "log_loss": r.log_loss,
                "ece": r.ece,
                "fit_s": r.fit_seconds,
                "predict_s": r.predict_seconds,
                "responses_per_s": r.responses_per_second,
            }
            for r in self.results
        ]

    def __str__(self) -> str:
        head = "| model | AUC | RMSE | log loss | ECE | fit | replay |\n|---|---|---|---|---|---|---|"
        lines = [
            f"| {r.model} | {r.auc:.3f} | {r.rmse:.3f} | {r.log_loss:.3f} | {r.ece:.3f} | {r.fit_seconds:.2f} s | "
            f"{r.predict_seconds:.2f} s ({r.responses_per_second:,.0f}/s) |"
            for r in self.results
        ]
        return "\n".join([head, *lines])

    def __getitem__(self, model: str) -> Result:
        for r in self.results:
            if r.model == model:
                return r
        raise KeyError(model)

    def reliability_plot(self, ax: Any = None, *, n_bins: int = 10) -> Any:
        """Observed rate against mean prediction per bin, one line per model (matplotlib)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(4.5, 4.5))
        ax.plot([0, 1], [0, 1], color="0.7", linestyle="--", linewidth=1)
        for r in self.results:
            mean_p, rate, _ = reliability(self.truth, r.predictions, n_bins=n_bins)
            ax.plot(mean_p, rate, marker="o", markersize=3, label=f"{r.model} (ECE {r.ece:.3f})")
        ax.set_xlabel("predicted P(correct)")
        ax.set_ylabel("observed share correct")
        ax.set_title(f"Reliability{': ' + self.label if self.label else ''}")
        ax.legend(fontsize="small")
        return ax


def evaluate(models: Sequence[Model], train: ResponseLog, test: ResponseLog, *, label: str = "") -> Report:
    """Fit each model on ``train`` and predict every response of ``test`` from the same
    learner's earlier responses only (each test response predicted once). The logs are
    put on one vocabulary first (:func:`learnloop.datasets.align`)."""
    train, test = align(train, test)
    results = []
    for model in models:
        t0 = time.perf_counter()
        model.fit(train)
        t1 = time.perf_counter()
        p = np.asarray(model.predict(test), dtype=np.float64)
        t2 = time.perf_counter()
        if p.shape != (test.n_responses,) or not np.all(np.isfinite(p)):
            raise ValueError(f"model {model.name!r} gave {p.shape} predictions for {test.n_responses} responses")
        results.append(
            Result(
                model.name,
                **metrics(test.correct, p),
                fit_seconds=t1 - t0,
                predict_seconds=t2 - t1,
                n_responses=test.n_responses,
                predictions=p,
            )  # fmt: skip
        )
    return Report(tuple(results), test.correct.copy(), label)
