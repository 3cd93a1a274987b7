"""Calibration: the fits that read a catalog's whole event log (offline; the step path never imports this).

:meth:`Calibration.calibrate` fits the items (Rasch or 2PL), then optionally
refines them to the learner model's own predictions, fits per-topic learning
rates and the answer echo — those three with the fitted model of ``Engine.fit``
(:class:`learnloop.engine.fitting.model.LogModel`) run on the catalog's answers as
columns, one implementation — and stores the result with the catalog's calibration;
:meth:`Calibration.event_log` gives the catalog's scored attempts as columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from learnloop.content import CatalogIndex
from learnloop.engine import records
from learnloop.engine.fitting.items import ItemCalibration
from learnloop.engine.fitting.model import LogModel
from learnloop.engine.fitting.responses import EventColumns
from learnloop.engine.repository.changes import touched
from learnloop.engine.repository.repository import ContentRepository
from learnloop.errors import ValidationError
from learnloop.events import Interaction
from learnloop.store import Store
from learnloop.store.base import json_doc
from learnloop.tracing import calibrate as calibrate_items
from learnloop.tracing import difficulty_to_b

__all__ = ["Calibration"]


class Calibration:
    """Fits over every learner's events on a catalog (the engine owns one)."""

    def __init__(self, store: Store, content: ContentRepository) -> None:
        self.store = store
        self.content = content

    def event_log(self, catalog_id: str, *, app: str = "default") -> dict[str, list[Any]]:
        self.content.catalog_model(catalog_id, app=app)  # NotFoundError for an unknown catalog
        rows: list[tuple[str, float, int, str, str, float]] = []
        for seq, (key, stored) in enumerate(records.events(self.store, app, order="seq")):
            if key[1] != catalog_id:
                continue
            doc = json_doc(stored)
            if doc.get("kind") != "attempt" or doc.get("score") is None:
                continue
            interaction = Interaction.from_doc(doc)
            rows.append((key[0], interaction.epoch, seq, key[2], interaction.topic_id, float(doc["score"])))
        rows.sort()
        return {
            "user_id": [r[0] for r in rows],
            "item_id": [r[3] for r in rows],
            "topic_id": [r[4] for r in rows],
            "score": [r[5] for r in rows],
            "timestamp": [r[1] for r in rows],
        }

    def calibrate(
        self,
        catalog_id: str,
        *,
        model: str = "rasch",
        exclude_users: Iterable[str] = (),
        min_responses: int = 1,
        progress: bool = False,
        ability_sd: float | None = 1.0,
        refine: str | None = None,
        topic_rates: bool = False,
        echo: bool = False,
        app: str = "default",
    ) -> dict[str, dict[str, float]]:
        """Calibrate item difficulty (and discrimination, 2PL) from the event log.

        Every scored attempt on the catalog's scorable items by users not in
        ``exclude_users`` enters the fit; each item's prior is centred on its
        cold-start difficulty, so sparse items stay near it. The result is
        stored and used by the learner model from then on (learner states are
        rebuilt). Returns ``{item_id: {"b": ..., "a": ..., "n": responses}}``.
        ``ability_sd``: the learners' ability spread, fixed (1) or estimated
        (None, Rasch; see :func:`learnloop.tracing.calibrate`). ``refine``
        (``"b"`` or ``"ab"``): then fit the items to the learner model's own
        next-response predictions on the log, as ``learnloop.evaluate.EngineModel``
        does with the same option (see ``docs/models.md``). ``topic_rates``: then fit
        the learning after a right and after a wrong answer and the novelty of each topic
        with answers (PFA's per-skill learning rates, starting from and kept near the
        catalog's learner options; ``EngineModel(topic_rates=True)``), stored with the
        calibration and used by the learner model in place of the options' values
        (another calibration without them drops them). ``echo``: last, fit the answer echo
        (``learnloop.tracing.echo``, ``EngineModel(echo=True)``) on the log replayed with all
        that; ``Engine.predict`` applies it from the learner's latest event when an answer (a
        prediction-only term; sessions rank items by the model's own P(correct)).
        """
        if refine not in (None, "b", "ab"):
            raise ValidationError(f"refine must be None, 'b' or 'ab', got {refine!r}")
        cm = self.content.catalog_model(catalog_id, app=app)
        index = cm.index
        log = _scored_attempts(self.store, app, index, set(exclude_users))
        if not log.scores:
            raise ValidationError(f"catalog '{catalog_id}' has no scored attempts to calibrate from")
        item_codes, items, scores = log.item_codes, log.items, log.scores
        fit = calibrate_items(
            log.persons,
            items,
            scores,
            n_items=len(item_codes),
            n_persons=log.n_persons,
            model=model,  # type: ignore[arg-type]
            b_prior_mean=np.asarray(log.b0),
            progress=progress,
            ability_sd=ability_sd,
        )
        counts = np.bincount(np.asarray(items), minlength=len(item_codes))
        b, a = np.asarray(fit.b, dtype=np.float64), np.asarray(fit.a, dtype=np.float64)
        log_model = None
        if refine is not None or topic_rates or echo:
            # the rest is the fitted model's (LogModel, as Engine.fit and EngineModel fit it) on the log
            columns = _columns(item_codes, log.answers, np.asarray(items), np.asarray(scores))
            options = self.content.learner_options_for(catalog_id, app=app)
            log_model = LogModel(options, index=cm.index, refine=refine)
            log_model.calibration_ = ItemCalibration(columns.item_ids, b, a)
            if refine is not None:
                refined = log_model.refine_items(columns).calibration_
                assert isinstance(refined, ItemCalibration)  # what refine_items makes
                b, a = refined.b, refined.a
        result = {
            item_id: {"b": float(b[code]), "a": float(a[code]), "n": int(counts[code])}
            for item_id, code in item_codes.items()
            if counts[code] >= min_responses
        }
        calibration: dict[str, Any] = {"items": result, "model": model, "refine": refine}
        if log_model is not None and topic_rates:
            calibration["topics"] = log_model.fit_topic_rates(columns).topic_rates_
        if log_model is not None and echo:
            calibration["echo"] = log_model.fit_echo(columns).echo_
        with self.store.atomic():
            records.put_calibration(self.store, app, catalog_id, calibration)
            self.content.bump_version(app, touched(catalogs=[catalog_id]))
        return result


@dataclass(frozen=True)
class _Attempts:
    """A catalog's scored attempts on its scorable items, as :meth:`Calibration.calibrate` fits them:
    each answer's item and learner codes (items in catalog order, learners in the order first met) and
    score, and each item's prior difficulty (its cold-start difficulty)."""

    item_codes: dict[str, int]  # the catalog's scorable items, in catalog order
    b0: list[float]  # per item code
    persons: list[int]
    items: list[int]
    scores: list[float]
    n_persons: int
    answers: list[tuple[str, str, int]]  # (user, timestamp, position) of each answer


def _scored_attempts(store: Store, app: str, index: CatalogIndex, excluded: set[str]) -> _Attempts:
    """The scored attempts on ``index``'s catalog by learners not in ``excluded``, in stored order."""
    item_codes: dict[str, int] = {}
    b0: list[float] = []
    base_b = difficulty_to_b(index.difficulty)
    for position, item_id in enumerate(index.item_ids):
        if index.scorable[position] and item_id not in item_codes:
            item_codes[item_id] = len(item_codes)
            b0.append(float(base_b[position]))
    person_codes: dict[str, int] = {}
    persons: list[int] = []
    items: list[int] = []
    scores: list[float] = []
    answers: list[tuple[str, str, int]] = []
    for key, stored in records.events(store, app):
        if key[1] != index.catalog_id or key[0] in excluded:
            continue
        code = item_codes.get(key[2])
        doc = json_doc(stored)
        if code is None or doc.get("kind") != "attempt" or doc.get("score") is None:
            continue
        persons.append(person_codes.setdefault(key[0], len(person_codes)))
        items.append(code)
        scores.append(float(doc["score"]))
        at = index.position(key[2], doc.get("topic_id"))
        at = index.position(key[2]) if at is None else at
        answers.append((key[0], key[3], -1 if at is None else at))
    return _Attempts(item_codes, b0, persons, items, scores, len(person_codes), answers)


def _columns(
    item_codes: Mapping[str, int], answers: Sequence[tuple[str, str, int]], codes: np.ndarray, scores: np.ndarray
) -> EventColumns:
    """The scored attempts as columns for :class:`LogModel`: learners in the order of their ids, each
    learner's answers in time order, each at the catalog position it was given in; the items are the
    catalog's scorable items (``item_codes``)."""
    order = sorted(range(len(answers)), key=lambda k: answers[k][:2])  # learner, then time
    users = sorted({user for user, _, _ in answers})
    at = {user: k for k, user in enumerate(users)}
    rows = np.asarray(order, dtype=np.intp)
    return EventColumns(
        learner=np.asarray([at[answers[k][0]] for k in order], dtype=np.intp),
        item=codes[rows],
        correct=scores[rows],
        time=np.zeros(rows.size),
        learner_ids=tuple(users),
        item_ids=tuple(item_codes),
        timed=False,
        position=np.asarray([answers[k][2] for k in order], dtype=np.intp),
    )
