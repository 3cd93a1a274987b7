"""The search for a catalog's learner-model settings on folds of its learners (one implementation:
``learnloop.evaluate.fit_options`` and :meth:`learnloop.Engine.fit` both run :func:`search_options`)."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from tqdm.auto import tqdm

from learnloop.content import CatalogIndex
from learnloop.engine.fitting.model import LogModel
from learnloop.engine.fitting.responses import Responses
from learnloop.engine.options import LearnerOptions
from learnloop.tracing import log_loss

__all__ = ["DEFAULT_GRID", "Search", "Stopped", "search_options"]

#: the values tried for each setting, in the order the coordinate search visits them; a
#: tuple of names is one coordinate whose values are tuples (settings that only act together)
DEFAULT_GRID: dict[str | tuple[str, ...], tuple[Any, ...]] = {
    "hierarchy": ("nested", "additive"),
    "drift": (0.0, 0.005, 0.02, 0.05, 0.1),
    "topic_var": (0.1, 0.3, 0.6, 1.0),
    "prior_var": (0.5, 1.0, 2.0),
    "practice_gain": (0.0, 0.02, 0.05, 0.1),
    "failure_gain": (-0.05, 0.0, 0.02, 0.05),
    "novelty": (0.0, 0.3, 0.6, 1.0),
    ("momentum_var", "momentum_decay"): ((0.0, 0.0),) + tuple(itertools.product((0.3, 1.0, 2.0), (0.5, 0.7, 0.9))),
    "prerequisite_gating": (0.0, 0.5, 1.0, 2.0, 4.0),
}


class Stopped(KeyboardInterrupt):
    """The search was asked to stop (its ``stop`` event set, or its callable true): handled as Ctrl-C."""


@dataclass(frozen=True)
class Search:
    """What :func:`search_options` chose: the settings, their mean validation log loss, every setting tried
    with its score (in order), whether it stopped early, and the item refinement, per-topic rates,
    answer echo and forgetting term kept (``LogModel``'s arguments of the same names)."""

    #: the values the search tries for each setting (``learnloop.evaluate.DEFAULT_GRID``)
    DEFAULT_GRID: ClassVar[Mapping[str | tuple[str, ...], tuple[Any, ...]]] = DEFAULT_GRID

    options: LearnerOptions
    log_loss: float
    tried: tuple[tuple[dict[str, Any], float], ...]
    interrupted: bool
    refine: str | None
    topic_rates: bool
    echo: bool
    forgetting: str | None
    calibration: bool | str


def _valid(options: dict[str, Any]) -> bool:
    return not (options.get("momentum_var", 0.0) > 0.0 and options.get("hierarchy") != "additive")


def _stopper(stop: threading.Event | Callable[[], bool] | None) -> Callable[[], None]:
    def check() -> None:
        if stop is not None and (stop.is_set() if isinstance(stop, threading.Event) else stop()):
            raise Stopped()

    return check


def search_options(
    train: Responses,
    *,
    start: LearnerOptions | Mapping[str, Any] | None = None,
    grid: Mapping[str | tuple[str, ...], Sequence[Any]] | None = None,
    folds: int = 3,
    rounds: int = 2,
    seed: int = 0,
    progress: bool = True,
    index: CatalogIndex | None = None,
    calibration: bool | str = True,
    refine: Sequence[str] = ("b", "ab"),
    topic_rates: bool = True,
    echo: bool = True,
    forgetting: bool = True,
    model: type[LogModel] = LogModel,
    stop: threading.Event | Callable[[], bool] | None = None,
) -> Search:
    """Coordinate search of the learner model's settings on ``folds`` folds of ``train``'s learners,
    then the item refinement, per-topic rates, answer echo and forgetting term, each kept if it lowers
    the mean validation log loss (``learnloop.evaluate.fit_options`` describes the steps). ``model``:
    the class each fold's model is made of; ``stop``: an event (or a callable) checked before each
    setting is scored, which stops the search as Ctrl-C does (``interrupted`` in the result).
    """
    check = _stopper(stop)
    grid = dict(DEFAULT_GRID if grid is None else grid)
    names = {n for key in grid for n in ((key,) if isinstance(key, str) else key)}
    current = {k: v for k, v in dataclasses.asdict(LearnerOptions.of(start)).items() if k in names or k == "hierarchy"}
    base = LearnerOptions.of(start)
    if "prerequisite_gating" in names and current.get("prerequisite_gating") is None:
        current["prerequisite_gating"] = 0.0  # searched: fitted from here on (None is "not fitted")
    parts = train.folds(folds, seed=seed)
    calibrated = [model(calibrate=calibration, index=index).fit(fold_train).calibration_ for fold_train, _ in parts]
    cache: dict[tuple[Any, ...], float] = {}
    tried: list[tuple[dict[str, Any], float]] = []

    def score(options: dict[str, Any]) -> float:
        key = tuple(sorted(options.items()))
        if key not in cache:
            check()
            losses = []
            for (_, valid), b in zip(parts, calibrated, strict=True):
                fold_model = model(dataclasses.replace(base, **options), index=index)
                fold_model.calibration_ = b
                losses.append(log_loss(valid.correct, fold_model.predict(valid)))
            cache[key] = float(np.mean(losses))
            tried.append((dict(options), cache[key]))
        return cache[key]

    steps = rounds * sum(len(v) for v in grid.values())
    best = score(current)
    interrupted = False
    with tqdm(total=steps, disable=not progress, desc="fitting learner options", unit="setting") as bar:
        try:
            for _ in range(rounds):
                before = best
                for name, values in grid.items():
                    for value in values:
                        bar.update(1)
                        changes = dict(zip(name, value, strict=True)) if isinstance(name, tuple) else {name: value}
                        candidate = {**current, **changes}
                        if not _valid(candidate):
                            continue
                        loss = score(candidate)
                        if loss < best - 1e-7:
                            best, current = loss, candidate
                    bar.set_postfix(log_loss=f"{best:.4f}")
                if best >= before - 1e-6:
                    break
        except KeyboardInterrupt:
            interrupted = True
    chosen = dataclasses.replace(base, **current)
    more = _Steps(parts, model, chosen, index, calibrated, best, tried, check)
    refined: str | None = None
    per_topic = echoed = False
    forgot: str | None = None
    try:
        for kind in () if interrupted else refine:
            if (fitted := more.kept({"refine": kind}, "refine_items", refine=kind)) is not None:
                refined, more.calibration = kind, [m.calibration_ for m in fitted]
        if (
            topic_rates
            and not interrupted
            and (fitted := more.kept({"topic_rates": True}, "fit_topic_rates")) is not None
        ):
            per_topic, more.rates = True, [m.topic_rates_ for m in fitted]
        if echo and not interrupted and (fitted := more.kept({"echo": True}, "fit_echo")) is not None:
            echoed, more.echoes = True, [m.echo_ for m in fitted]
        for kind in ("fsrs", "fitted") if forgetting and train.timed and not interrupted else ():
            if more.kept({"forgetting": kind}, "fit_forgetting", forgetting=kind) is not None:
                forgot = kind
    except KeyboardInterrupt:
        interrupted = True
    return Search(chosen, more.best, tuple(tried), interrupted, refined, per_topic, echoed, forgot, calibration)


class _Steps:
    """The steps after the coordinate search, on its folds: each fits one more part of the model
    (item refinement, per-topic rates, echo, forgetting) on every fold's training learners, on top
    of the parts kept so far, and is kept if it lowers the best mean validation log loss."""

    def __init__(
        self,
        parts: Sequence[tuple[Responses, Responses]],
        model: type[LogModel],
        options: LearnerOptions,
        index: CatalogIndex | None,
        calibration: list[Mapping[str, Mapping[str, float]]],
        best: float,
        tried: list[tuple[dict[str, Any], float]],
        check: Callable[[], None],
    ) -> None:
        self.parts, self.model, self.options, self.index = parts, model, options, index
        self.best, self.tried, self.check = best, tried, check
        #: per fold, the parts kept so far (``LogModel``'s attributes of the same names)
        self.calibration = calibration
        self.rates: list[dict[str, dict[str, float]]] = [{} for _ in parts]
        self.echoes: list[dict[str, Any] | None] = [None for _ in parts]

    def kept(self, label: dict[str, Any], fit: str, **settings: Any) -> list[LogModel] | None:
        """Score the step that calls ``fit`` (a ``LogModel`` method, on the fold's training learners)
        on fold models made with ``settings``; it is recorded in ``tried`` as ``label``. When it
        lowers the best loss (which moves), its fold models; else None."""
        losses, models = [], []
        for k, (fold_train, valid) in enumerate(self.parts):
            self.check()
            fold_model = self.model(self.options, index=self.index, **settings)
            fold_model.calibration_ = self.calibration[k]
            fold_model.topic_rates_, fold_model.echo_ = self.rates[k], self.echoes[k]
            getattr(fold_model, fit)(fold_train)
            models.append(fold_model)
            losses.append(log_loss(valid.correct, fold_model.predict(valid)))
        self.tried.append((label, float(np.mean(losses))))
        if self.tried[-1][1] < self.best - 1e-7:
            self.best = self.tried[-1][1]
            return models
        return None
