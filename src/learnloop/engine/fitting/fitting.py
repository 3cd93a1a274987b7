"""Fitting: the engine fits a catalog's learner model to its own event log, behind a guard.

:meth:`Fitting.fit` reads the catalog's scored attempts as columns, keeps ``holdout`` of the
learners aside, runs the search (:func:`learnloop.engine.fitting.search.search_options`) on folds
of the others, fits the chosen recipe and the stored one on those others, and compares them on
the held-out learners (next-response log loss). The better recipe, refitted on every learner, is
stored in one transaction (learner options, calibration, answer echo, forgetting term); when the
stored one is as good, nothing is written.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import numpy as np

from learnloop.content import CatalogIndex
from learnloop.engine import records
from learnloop.engine.fitting.model import LogModel
from learnloop.engine.fitting.responses import EventColumns
from learnloop.engine.fitting.search import Search, search_options
from learnloop.engine.options import LearnerOptions
from learnloop.engine.repository.repository import ContentRepository
from learnloop.errors import ValidationError
from learnloop.events import Interaction
from learnloop.store import Store
from learnloop.store.base import json_doc
from learnloop.tracing import auc, log_loss

__all__ = ["FitOptions", "FitRecipe", "FitResult", "Fitting"]


class FitOptions(TypedDict, total=False):
    """The options of :meth:`learnloop.Engine.fit`, all optional: ``folds`` (3) folds of the learners
    kept in, the search's ``rounds`` (2), ``seed`` (0; the held-out learners and the folds), ``progress``
    (True: tqdm bars), ``grid`` (None: the default grid, ``Search.DEFAULT_GRID``), ``holdout`` (0.2: the share of learners the guard compares on), ``forgetting``
    (True: try the forgetting term; False for a log whose times are made up), ``candidate`` (a
    :class:`FitRecipe` put to the guard instead of searching), ``stop`` (a ``threading.Event`` or a
    callable: when set, the fit stops and stores nothing), ``app`` ("default")."""

    folds: int
    rounds: int
    grid: Mapping[str | tuple[str, ...], Sequence[Any]] | None
    seed: int
    progress: bool
    holdout: float
    forgetting: bool
    candidate: FitRecipe | Mapping[str, Any] | None
    stop: threading.Event | Callable[[], bool] | None
    app: str


@dataclass(frozen=True)
class FitRecipe:
    """A catalog's learner-model recipe: the settings (``options``) and what is fitted to the log
    with them, as :class:`LogModel` (``learnloop.evaluate.EngineModel``) takes it: the items'
    calibration (``calibrate``: True Rasch, ``"2pl"``, False none: the items' cold-start
    difficulties), their refinement, per-topic rates, the answer echo and the forgetting term."""

    options: LearnerOptions = dataclasses.field(default_factory=LearnerOptions)
    calibrate: bool | str = True
    refine: str | None = None
    topic_rates: bool = False
    echo: bool = False
    forgetting: str | None = None

    @classmethod
    def of(cls, recipe: FitRecipe | Mapping[str, Any]) -> FitRecipe:
        if isinstance(recipe, FitRecipe):
            return recipe
        fields = dict(recipe)
        fields["options"] = LearnerOptions.of(fields.get("options"))
        try:
            return cls(**fields)
        except TypeError as exc:
            raise ValidationError(f"fit recipe: {exc}") from None

    def model(self, index: CatalogIndex) -> LogModel:
        """The unfitted model of this recipe on ``index``."""
        return LogModel(
            self.options,
            calibrate=self.calibrate,
            index=index,
            refine=self.refine,
            topic_rates=self.topic_rates,
            echo=self.echo,
            forgetting=self.forgetting,
        )

    def describe(self) -> dict[str, Any]:
        """The recipe as a JSON-able document (the options that differ from the defaults)."""
        defaults = LearnerOptions()
        options = {
            f.name: getattr(self.options, f.name)
            for f in dataclasses.fields(self.options)
            if f.name != "memory_model" and getattr(self.options, f.name) != getattr(defaults, f.name)
        }
        return {
            "options": options,
            "calibrate": self.calibrate,
            "refine": self.refine,
            "topic_rates": self.topic_rates,
            "echo": self.echo,
            "forgetting": self.forgetting,
        }


@dataclass(frozen=True)
class FitResult:
    """What :meth:`learnloop.Engine.fit` did: ``kept`` is ``"new"`` (the fitted recipe was stored)
    or ``"old"`` (the stored settings stay: not better on the held-out learners, or the fit was
    interrupted: ``interrupted``). ``chosen`` is the recipe fitted (None when interrupted before the
    search ended), ``previous`` the one in use before; ``old_log_loss``/``new_log_loss`` and
    ``old_auc``/``new_auc`` their next-response figures on the ``n_held_out`` held-out learners, both
    recipes fitted on the other learners. ``search`` holds every setting tried with its score."""

    catalog_id: str
    kept: Literal["new", "old"]
    interrupted: bool
    chosen: FitRecipe | None
    previous: FitRecipe
    old_log_loss: float
    new_log_loss: float
    old_auc: float
    new_auc: float
    n_events: int
    n_learners: int
    n_held_out: int
    seconds: float
    search: Search | None = dataclasses.field(default=None, repr=False)

    def __str__(self) -> str:
        if self.interrupted:
            return f"catalog '{self.catalog_id}': fit interrupted, the stored settings are unchanged"
        which = "the fitted settings" if self.kept == "new" else "the previous settings"
        return (
            f"catalog '{self.catalog_id}': kept {which} (held-out log loss old {self.old_log_loss:.4f}, "
            f"new {self.new_log_loss:.4f}; AUC old {self.old_auc:.4f}, new {self.new_auc:.4f}; "
            f"{self.n_held_out} of {self.n_learners} learners held out, {self.n_events} answers, "
            f"{self.seconds:.1f} s)"
        )


class Fitting:
    """Fits of a catalog's learner model to the engine's own event log (the engine owns one)."""

    def __init__(self, store: Store, content: ContentRepository) -> None:
        self.store = store
        self.content = content

    def columns(self, catalog_id: str, *, app: str = "default") -> EventColumns:
        """The catalog's scored attempts as arrays, a learner's in time order (events at one instant
        in posting order), as ``Engine.event_log`` lists them; strings are held once each."""
        self.content.catalog_model(catalog_id, app=app)  # NotFoundError for an unknown catalog
        users: dict[str, int] = {}
        items: dict[str, int] = {}
        learner, item, seq = array("q"), array("q"), array("q")  # 8 bytes per answer each, not a Python object
        score, epoch = array("d"), array("d")
        for k, (key, stored) in enumerate(records.events(self.store, app, order="seq")):
            if key[1] != catalog_id:
                continue
            doc = json_doc(stored)
            if doc.get("kind") != "attempt" or doc.get("score") is None:
                continue
            learner.append(users.setdefault(key[0], len(users)))
            item.append(items.setdefault(key[2], len(items)))
            score.append(float(doc["score"]))
            epoch.append(Interaction.from_doc(doc).epoch)
            seq.append(k)
        user_ids = tuple(users)
        rank = np.argsort(np.argsort(np.asarray(user_ids, dtype=object)))  # learners ordered by id
        codes = rank[np.frombuffer(learner, dtype=np.int64)] if learner else np.zeros(0, dtype=np.intp)
        times = np.frombuffer(epoch, dtype=np.float64)
        order = np.lexsort((np.frombuffer(seq, dtype=np.int64), times, codes))
        return EventColumns(
            learner=codes[order].astype(np.intp),
            item=np.frombuffer(item, dtype=np.int64).astype(np.intp)[order],
            correct=np.frombuffer(score, dtype=np.float64)[order],
            time=times[order],
            learner_ids=tuple(sorted(user_ids)),
            item_ids=tuple(items),
        )

    def previous(self, catalog_id: str, *, app: str = "default") -> FitRecipe:
        """The recipe the catalog runs on now: its learner options, and what its stored calibration
        holds (none: the items' cold-start difficulties)."""
        options = self.content.learner_options_for(catalog_id, app=app)
        stored = records.calibration(self.store, app, catalog_id)
        if stored is None:
            return FitRecipe(options, calibrate=False)
        recipe = stored.get("recipe")
        if recipe is not None:
            return FitRecipe.of({**recipe, "options": options})
        return FitRecipe(
            options,
            calibrate="2pl" if stored.get("model") == "2pl" else True,
            refine=stored.get("refine"),
            topic_rates="topics" in stored,
            echo="echo" in stored,
        )

    def fit(
        self,
        catalog_id: str,
        *,
        folds: int = 3,
        rounds: int = 2,
        grid: Mapping[str | tuple[str, ...], Sequence[Any]] | None = None,
        seed: int = 0,
        progress: bool = True,
        holdout: float = 0.2,
        forgetting: bool = True,
        candidate: FitRecipe | Mapping[str, Any] | None = None,
        stop: threading.Event | Callable[[], bool] | None = None,
        app: str = "default",
    ) -> FitResult:
        began = time.perf_counter()
        if not 0.0 < holdout < 1.0:
            raise ValidationError(f"holdout must lie in (0, 1), got {holdout!r}")
        if not isinstance(folds, int) or folds < 2:
            raise ValidationError(f"folds must be an integer of at least 2, got {folds!r}")
        planted = None if candidate is None else FitRecipe.of(candidate)
        index = self.content.catalog_index(catalog_id, app=app)
        previous = self.previous(catalog_id, app=app)
        log = self.columns(catalog_id, app=app)
        n_learners = log.present_learners().size
        fit_part, held = log.split(holdout, seed=seed)
        if held.n_responses == 0 or fit_part.present_learners().size < folds:
            raise ValidationError(
                f"catalog '{catalog_id}' has {n_learners} learners with scored attempts: too few to fit "
                f"on {folds} folds and hold {holdout:.0%} out"
            )
        nan = float("nan")
        found: Search | None = None
        try:
            if planted is None:
                found = search_options(
                    fit_part,
                    start=previous.options,
                    grid=grid,
                    folds=folds,
                    rounds=rounds,
                    seed=seed,
                    progress=progress,
                    index=index,
                    forgetting=forgetting,
                    stop=stop,
                )
                if found.interrupted:
                    raise KeyboardInterrupt
                chosen = FitRecipe(
                    found.options, found.calibration, found.refine, found.topic_rates, found.echo, found.forgetting
                )
            else:
                chosen = planted
            scores = {}
            for name, recipe in (("old", previous), ("new", chosen)):
                p = recipe.model(index).fit(fit_part).predict(held)
                scores[name] = (log_loss(held.correct, p), auc(held.correct, p))
            better = scores["new"][0] < scores["old"][0] - 1e-7
            final = chosen.model(index).fit(log) if better else None
        except KeyboardInterrupt:
            return FitResult(
                catalog_id, "old", True, None, previous, nan, nan, nan, nan, log.n_responses, n_learners,
                held.present_learners().size, time.perf_counter() - began, found,
            )  # fmt: skip
        if final is not None:
            self.content.put_fit(catalog_id, chosen.options, _calibration_doc(final, log, chosen), app=app)
        return FitResult(
            catalog_id, "new" if better else "old", False, chosen, previous, scores["old"][0], scores["new"][0],
            scores["old"][1], scores["new"][1], log.n_responses, n_learners, held.present_learners().size,
            time.perf_counter() - began, found,
        )  # fmt: skip


def _calibration_doc(model: LogModel, log: EventColumns, recipe: FitRecipe) -> dict[str, Any]:
    """What the catalog stores of a fitted model: the items (with their answer counts), the per-topic
    rates, the answer echo, the forgetting term and the recipe they were fitted with."""
    counts = np.bincount(log.item, minlength=log.n_items)
    at = {item_id: k for k, item_id in enumerate(log.item_ids)}
    items = {
        item_id: {"b": params["b"], "a": params.get("a", 1.0), "n": int(counts[at[item_id]])}
        for item_id, params in model.calibration_.items()
    }
    doc: dict[str, Any] = {
        "items": items,
        "model": "2pl" if recipe.calibrate == "2pl" else ("rasch" if recipe.calibrate else None),
        "refine": recipe.refine,
        "recipe": {k: v for k, v in recipe.describe().items() if k != "options"},
    }
    if model.topic_rates_:
        doc["topics"] = model.topic_rates_
    if model.echo_ is not None:
        doc["echo"] = model.echo_
    if model.forgetting_ is not None:
        doc["forgetting"] = model.forgetting_
    return doc
