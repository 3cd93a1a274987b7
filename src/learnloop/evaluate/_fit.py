"""Fitting the engine's learner-model settings to a log, on folds of the training learners."""

from __future__ import annotations

import dataclasses
import itertools
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from learnloop.content import CatalogIndex
from learnloop.datasets import ResponseLog, from_columns
from learnloop.engine import LearnerOptions
from learnloop.evaluate._models import EngineModel
from learnloop.tracing import log_loss

if TYPE_CHECKING:
    from learnloop.engine import Engine

__all__ = ["DEFAULT_GRID", "OptionsFit", "fit_engine", "fit_forgetting", "fit_options"]

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


@dataclass(frozen=True, repr=False)
class OptionsFit:
    """The chosen settings, their mean validation log loss, every setting tried with its
    score (in order), whether the search was stopped early (Ctrl-C), the item refinement
    chosen (``EngineModel(refine=...)``: None, ``"b"`` or ``"ab"``; tried in ``tried`` as
    ``{"refine": ...}`` with the chosen settings), whether per-topic learning rates were
    chosen (``EngineModel(topic_rates=...)``; tried as ``{"topic_rates": True}``), whether
    the answer echo was (``EngineModel(echo=...)``; tried as ``{"echo": True}``) and the forgetting
    term chosen (``EngineModel(forgetting=...)``: None, ``"fsrs"`` or ``"fitted"``; tried as
    ``{"forgetting": ...}``, on a timed log only); the item
    calibration the folds used (``EngineModel(calibrate=...)``) and the catalog fitted on
    (``EngineModel(index=...)``, None: one topic per skill of the log).

    :meth:`model` builds the :class:`EngineModel` with all of them. ``repr()`` is a summary of a
    few lines (the settings chosen, the validation log loss, the number of settings tried);
    ``tried`` holds every setting with its score.
    """

    options: LearnerOptions
    log_loss: float
    tried: tuple[tuple[dict[str, Any], float], ...]
    interrupted: bool = False
    refine: str | None = None
    topic_rates: bool = False
    echo: bool = False
    calibration: bool | str = True
    index: CatalogIndex | None = field(default=None, compare=False)
    forgetting: str | None = None

    def model(self, *, name: str = "learnloop engine model (fitted)", progress: bool = False) -> EngineModel:
        """The :class:`EngineModel` with every fitted setting: the options, the item calibration, the
        refinement, the per-topic rates and the answer echo chosen, on the catalog fitted on. Its
        :meth:`EngineModel.fit` fits items, rates and echo to the log it is given (e.g. the whole
        training log, as :func:`learnloop.evaluate.evaluate` does)."""
        return EngineModel(
            self.options,
            calibrate=self.calibration,
            name=name,
            progress=progress,
            index=self.index,
            refine=self.refine,
            topic_rates=self.topic_rates,
            echo=self.echo,
            forgetting=self.forgetting,
        )

    def __repr__(self) -> str:
        settings = ", ".join(
            f"{f.name}={getattr(self.options, f.name)!r}"
            for f in dataclasses.fields(self.options)
            if getattr(self.options, f.name) is not None
        )
        stopped = " (stopped early)" if self.interrupted else ""
        where = "" if self.index is None else f" on catalog '{self.index.catalog_id}'"
        return "\n".join(
            [
                f"OptionsFit{where}: validation log loss {self.log_loss:.4f}, mean over the folds "
                f"({len(self.tried)} settings tried{stopped})",
                *textwrap.wrap(settings, 100, initial_indent="  options: ", subsequent_indent="           "),
                f"  calibration={self.calibration!r}, refine={self.refine!r}, topic_rates={self.topic_rates}, "
                f"echo={self.echo}, forgetting={self.forgetting!r}",
                "  fit.model(): the EngineModel with these; fit.tried: every setting with its score",
            ]
        )


def _valid(options: dict[str, Any]) -> bool:
    return not (options.get("momentum_var", 0.0) > 0.0 and options.get("hierarchy") != "additive")


def fit_options(
    train: ResponseLog,
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
) -> OptionsFit:
    """Choose the learner model's settings by coordinate search on ``folds`` folds of
    ``train``'s learners: each setting in turn takes the value of ``grid`` with the
    lowest mean validation log loss (the next-response protocol on each fold, item
    difficulties calibrated on the fold's training part), for ``rounds`` rounds.

    Only ``train`` is read: keep the test learners out of it. Ctrl-C stops the search
    and returns the best settings found so far. ``index``: an engine's compiled catalog
    to fit on (see :class:`EngineModel`), instead of one topic per skill of the log.

    Then each item refinement of ``refine`` (see :class:`EngineModel`) is tried with the chosen
    settings, on the same folds (refined on each fold's training part), and kept if it lowers
    the mean validation log loss. Last, with ``topic_rates``, the per-topic learning rates and
    novelty (``EngineModel(topic_rates=True)``) are fitted on each fold's training part, on
    top of the chosen settings and refinement, and kept if they lower it. Then, with ``echo``, the
    answer echo (``EngineModel(echo=True)``) is fitted the same way on top of all that and kept
    if it lowers it. Last, with ``forgetting`` and a log with times (``train.timed``), the
    forgetting term (``EngineModel(forgetting=...)``): the FSRS defaults and the term fitted to
    each fold's training part, on top of all that; the better of the two is kept if it lowers the
    mean validation log loss, else none.
    """
    grid = dict(DEFAULT_GRID if grid is None else grid)
    names = {n for key in grid for n in ((key,) if isinstance(key, str) else key)}
    current = {k: v for k, v in dataclasses.asdict(LearnerOptions.of(start)).items() if k in names or k == "hierarchy"}
    base = LearnerOptions.of(start)
    if "prerequisite_gating" in names and current.get("prerequisite_gating") is None:
        current["prerequisite_gating"] = 0.0  # searched: fitted from here on (None is "not fitted")
    parts = train.folds(folds, seed=seed)
    calibrated = [EngineModel(calibrate=calibration).fit(fold_train).calibration_ for fold_train, _ in parts]
    cache: dict[tuple[Any, ...], float] = {}
    tried: list[tuple[dict[str, Any], float]] = []

    def score(options: dict[str, Any]) -> float:
        key = tuple(sorted(options.items()))
        if key not in cache:
            losses = []
            for (_, valid), b in zip(parts, calibrated, strict=True):
                model = EngineModel(dataclasses.replace(base, **options), index=index)
                model.calibration_ = b
                losses.append(log_loss(valid.correct, model.predict(valid)))
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
    refined: str | None = None
    per_topic = False
    echoed = False
    forgot: str | None = None
    rates: list[dict[str, dict[str, float]]] = [{} for _ in parts]
    echoes: list[dict[str, Any] | None] = [None for _ in parts]
    try:
        for kind in () if interrupted else refine:
            losses, items = [], []
            for (fold_train, valid), b in zip(parts, calibrated, strict=True):
                model = EngineModel(chosen, index=index, refine=kind)
                model.calibration_ = dict(b)
                model.refine_items(fold_train)
                items.append(model.calibration_)
                losses.append(log_loss(valid.correct, model.predict(valid)))
            tried.append(({"refine": kind}, float(np.mean(losses))))
            if tried[-1][1] < best - 1e-7:
                best, refined, calibrated = tried[-1][1], kind, items
        if topic_rates and not interrupted:
            losses, fitted = [], []
            for (fold_train, valid), b in zip(parts, calibrated, strict=True):
                model = EngineModel(chosen, index=index)
                model.calibration_ = b
                model.fit_topic_rates(fold_train)
                fitted.append(model.topic_rates_)
                losses.append(log_loss(valid.correct, model.predict(valid)))
            tried.append(({"topic_rates": True}, float(np.mean(losses))))
            if tried[-1][1] < best - 1e-7:
                best, per_topic, rates = tried[-1][1], True, fitted
        if echo and not interrupted:
            losses, fitted_echoes = [], []
            for (fold_train, valid), b, r in zip(parts, calibrated, rates, strict=True):
                model = EngineModel(chosen, index=index)
                model.calibration_, model.topic_rates_ = b, r
                model.fit_echo(fold_train)
                fitted_echoes.append(model.echo_)
                losses.append(log_loss(valid.correct, model.predict(valid)))
            tried.append(({"echo": True}, float(np.mean(losses))))
            if tried[-1][1] < best - 1e-7:
                best, echoed, echoes = tried[-1][1], True, fitted_echoes
        for kind in ("fsrs", "fitted") if forgetting and train.timed and not interrupted else ():
            losses = []
            for (fold_train, valid), b, r, e in zip(parts, calibrated, rates, echoes, strict=True):
                model = EngineModel(chosen, index=index, forgetting=kind)
                model.calibration_, model.topic_rates_, model.echo_ = b, r, e
                model.fit_forgetting(fold_train)
                losses.append(log_loss(valid.correct, model.predict(valid)))
            tried.append(({"forgetting": kind}, float(np.mean(losses))))
            if tried[-1][1] < best - 1e-7:
                best, forgot = tried[-1][1], kind
    except KeyboardInterrupt:
        interrupted = True
    return OptionsFit(
        chosen, best, tuple(tried), interrupted, refined, per_topic, echoed, calibration, index, forgot
    )  # fmt: skip


def fit_forgetting(
    train: ResponseLog,
    *,
    fit: OptionsFit | None = None,
    options: LearnerOptions | Mapping[str, Any] | None = None,
    index: CatalogIndex | None = None,
) -> dict[str, Any]:
    """The forgetting term fitted to ``train``'s gaps (its times, ``train.timed``), as the document
    a catalog's settings can hold: ``{"weights", "time_scale", "scale", "topic_scale": {topic_id:
    β}}`` (:meth:`learnloop.tracing.Forgetting.to_doc`; ``Forgetting.from_doc`` reads it back, and
    ``Forgetting.predict_state`` applies it to a learner state at a time).

    The term is fitted on top of the model of ``fit`` (every choice of :func:`fit_options`) or of the
    learner model with ``options`` on ``index`` (None: one topic per skill of the log), that model
    fitted to ``train`` first. It does not say whether the term helps: :func:`fit_options` decides
    that on folds (``OptionsFit.forgetting``).
    """
    if not train.timed:
        raise ValueError("the log has no times (timed is False): its gaps are made up")
    model = fit.model() if fit is not None else EngineModel(options, index=index)
    model.forgetting = "fitted"
    model.fit(train)
    assert model.forgetting_ is not None
    return model.forgetting_


def fit_engine(
    engine: Engine,
    catalog_id: str,
    *,
    grid: Mapping[str | tuple[str, ...], Sequence[Any]] | None = None,
    folds: int = 3,
    rounds: int = 2,
    seed: int = 0,
    progress: bool = True,
    app: str = "default",
) -> OptionsFit:
    """Fit the learner model's settings of one catalog to the engine's own event log and
    store them (:meth:`learnloop.Engine.set_learner_options`): sessions, statuses and
    predictions on the catalog use them from then on, in every process on the store.

    The search is :func:`fit_options` on folds of the catalog's learners, on the catalog
    itself (hierarchy and prerequisites included), starting from the settings in use; no item
    refinement is tried (the items' calibration is :meth:`learnloop.Engine.calibrate`'s).
    """
    columns = engine.event_log(catalog_id, app=app)
    if not columns["score"]:
        raise ValueError(f"catalog '{catalog_id}' has no scored attempts to fit from")
    log = from_columns(columns, learner="user_id", item="item_id", correct="score", skill="topic_id", time="timestamp")
    fit = fit_options(
        log,
        start=engine.learner_options_for(catalog_id, app=app),
        grid=grid,
        folds=folds,
        rounds=rounds,
        seed=seed,
        progress=progress,
        index=engine.catalog_index(catalog_id, app=app),
        refine=(),  # the engine keeps its own calibration of the items: settings only
        topic_rates=False,  # and its own per-topic rates (Engine.calibrate(..., topic_rates=True))
        echo=False,  # and its own answer echo (Engine.calibrate(..., echo=True))
        forgetting=False,  # the engine's predictions carry no forgetting term yet
    )
    if not fit.interrupted:
        engine.set_learner_options(catalog_id, fit.options, app=app)
    return fit
