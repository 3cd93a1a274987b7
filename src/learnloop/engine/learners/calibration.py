"""Calibration: the fits that read a catalog's whole event log (offline; the step path never imports this).

:meth:`Calibration.calibrate` fits the items (Rasch or 2PL), then optionally
refines them to the learner model's own predictions, fits per-topic learning
rates and the answer echo, and stores the result with the catalog's calibration;
:meth:`Calibration.event_log` gives the catalog's scored attempts as columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from learnloop.engine import records
from learnloop.engine.options import LearnerOptions
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.engine.repository.changes import touched
from learnloop.engine.repository.repository import ContentRepository
from learnloop.errors import ValidationError
from learnloop.events import Interaction
from learnloop.store import Store
from learnloop.store.base import json_doc
from learnloop.tracing import LearnerModel, difficulty_to_b
from learnloop.tracing import calibrate as calibrate_items

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
        excluded = set(exclude_users)
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
        answers: list[tuple[str, str, int]] = []  # (user, timestamp, position) of each scored attempt
        for key, stored in records.events(self.store, app):
            if key[1] != catalog_id or key[0] in excluded:
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
        if not scores:
            raise ValidationError(f"catalog '{catalog_id}' has no scored attempts to calibrate from")
        fit = calibrate_items(
            persons,
            items,
            scores,
            n_items=len(item_codes),
            n_persons=len(person_codes),
            model=model,  # type: ignore[arg-type]
            b_prior_mean=np.asarray(b0),
            progress=progress,
            ability_sd=ability_sd,
        )
        counts = np.bincount(np.asarray(items), minlength=len(item_codes))
        b, a = np.asarray(fit.b, dtype=np.float64), np.asarray(fit.a, dtype=np.float64)
        if refine is not None:
            b, a = self._refined(cm, item_codes, answers, np.asarray(items), np.asarray(scores), b, a, refine, app)
        result = {
            item_id: {"b": float(b[code]), "a": float(a[code]), "n": int(counts[code])}
            for item_id, code in item_codes.items()
            if counts[code] >= min_responses
        }
        calibration: dict[str, Any] = {"items": result, "model": model, "refine": refine}
        if topic_rates:
            calibration["topics"] = self._topic_rates(cm, item_codes, answers, np.asarray(scores), b, a, app)
        if echo:
            calibration["echo"] = self._echo(cm, item_codes, answers, np.asarray(scores), b, a, calibration, app)
        with self.store.atomic():
            records.put_calibration(self.store, app, catalog_id, calibration)
            self.content.bump_version(app, touched(catalogs=[catalog_id]))
        return result

    def _refined(
        self,
        cm: CatalogModel,
        item_codes: Mapping[str, int],
        answers: Sequence[tuple[str, str, int]],
        codes: np.ndarray,
        scores: np.ndarray,
        b: np.ndarray,
        a: np.ndarray,
        refine: str,
        app: str,
        iterations: int = 2,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The items refitted to the engine's own next-response predictions (as
        ``learnloop.evaluate.EngineModel(refine=...)`` does): Gauss-Newton steps from
        fresh replays of every learner's scored attempts, kept near the static fit."""
        from learnloop.tracing.calibration import refine_step
        from learnloop.tracing.replay import trace_many

        order = sorted(range(len(answers)), key=lambda k: answers[k][:2])  # learner, then time
        groups: dict[str, int] = {}
        for k in order:
            groups[answers[k][0]] = groups.get(answers[k][0], 0) + 1
        lengths = np.fromiter(groups.values(), dtype=np.intp, count=len(groups))
        sequence = np.asarray(order, dtype=np.intp)
        positions = np.asarray([answers[k][2] for k in order], dtype=np.intp)
        start_b, start_a = b.copy(), a.copy()
        for _ in range(iterations):
            model = self._replay_model(cm, item_codes, b, a, app)
            p = trace_many(model, positions, scores[sequence], lengths)
            b, a = refine_step(
                codes[sequence],
                scores[sequence],
                p,
                b,
                a,
                b_prior_mean=start_b,
                a_prior_mean=start_a,
                a_prior_sd=0.3 if refine == "ab" else None,
            )
        return b, a

    def _topic_rates(
        self,
        cm: CatalogModel,
        item_codes: Mapping[str, int],
        answers: Sequence[tuple[str, str, int]],
        scores: np.ndarray,
        b: np.ndarray,
        a: np.ndarray,
        app: str,
    ) -> dict[str, dict[str, float]]:
        """Learning after a right and a wrong answer and the novelty, per topic with answers, fitted
        to every learner's scored attempts in time order with the items as calibrated (as
        ``learnloop.evaluate.EngineModel(topic_rates=True)`` does), by topic id."""
        from learnloop.tracing.rates import fit_topic_rates

        fit = fit_topic_rates(self._replay_model(cm, item_codes, b, a, app), _runs(answers, scores))
        values = fit.as_options()
        return {
            cm.index.topic_ids[t]: {name: float(values[name][t]) for name in LearnerOptions.TOPIC_RATES}
            for t in np.flatnonzero(fit.responses).tolist()
        }

    def _echo(
        self,
        cm: CatalogModel,
        item_codes: Mapping[str, int],
        answers: Sequence[tuple[str, str, int]],
        scores: np.ndarray,
        b: np.ndarray,
        a: np.ndarray,
        calibration: Mapping[str, Any],
        app: str,
    ) -> dict[str, Any]:
        """The answer echo fitted to every learner's scored attempts in time order, replayed with the
        items and per-topic rates as calibrated (as ``learnloop.evaluate.EngineModel(echo=True)``
        does), by topic id."""
        from learnloop.tracing.echo import fit_echo_replay

        model = self._replay_model(cm, item_codes, b, a, app, topics=calibration.get("topics"))
        return fit_echo_replay(model, _runs(answers, scores)).to_doc(cm.index.topic_ids)

    def _replay_model(
        self,
        cm: CatalogModel,
        item_codes: Mapping[str, int],
        b: np.ndarray,
        a: np.ndarray,
        app: str,
        *,
        topics: Mapping[str, Mapping[str, float]] | None = None,
    ) -> LearnerModel:
        """The catalog's learner model with the items at ``b``, ``a`` (and the per-topic rates
        ``topics``) under the catalog's learner options, to replay the event log with."""
        items = {item: {"b": float(b[c]), "a": float(a[c])} for item, c in item_codes.items()}
        options = self.content.learner_options_for(cm.index.catalog_id, app=app)
        kwargs = options.with_topic_rates(cm.index.topic_ids, topics)
        return CatalogModel.build(cm.index, calibration=items, **kwargs).model


def _runs(answers: Sequence[tuple[str, str, int]], scores: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each learner's scored attempts on items of the catalog, in time order: (positions, scores)."""
    groups: dict[str, list[int]] = {}
    for k in sorted(range(len(answers)), key=lambda k: answers[k][:2]):  # learner, then time
        if answers[k][2] >= 0:
            groups.setdefault(answers[k][0], []).append(k)
    positions = np.asarray([position for _, _, position in answers], dtype=np.intp)
    return [(positions[ks], scores[ks]) for ks in groups.values()]
