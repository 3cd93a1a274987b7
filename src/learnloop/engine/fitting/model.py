"""The engine's learner model fitted to a log of responses and run through the next-response protocol.

:class:`LogModel` replays each learner's answers through the learner model of a compiled catalog
(as :class:`learnloop.Engine` builds it) and fits what :meth:`learnloop.Engine.fit` chooses: the
items' calibration, their refinement, per-topic rates, the answer echo and the forgetting term.
``learnloop.evaluate.EngineModel`` is this model, with a catalog made from the log's skills when
none is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self

import numpy as np

from learnloop._lru import LRUCache
from learnloop._types import FloatArray
from learnloop.content import CatalogIndex
from learnloop.engine.fitting.items import ItemCalibration
from learnloop.engine.fitting.responses import Responses
from learnloop.engine.options import LearnerOptions
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.tracing import calibrate
from learnloop.tracing.calibration import refine_step
from learnloop.tracing.echo import Echo, fit_echo, previous_answers
from learnloop.tracing.rates import fit_topic_rates
from learnloop.tracing.replay import trace_many
from learnloop.tracing.retention import Forgetting, fit_forgetting, memory_trace

__all__ = ["LogModel"]

#: a vocabulary's compiled catalog, the catalog id of each raw item id and each item's catalog position
_Vocabulary = tuple[CatalogIndex, dict[str, str], np.ndarray]
#: the last few vocabularies compiled (a settings search asks for the same one hundreds of times)
_VOCABULARIES: LRUCache[tuple[Any, ...], _Vocabulary] = LRUCache(max_items=4)
#: the same, by the identity of the objects that make a vocabulary (kept alive here, so ids stay theirs)
_BY_IDENTITY: LRUCache[tuple[Any, ...], tuple[tuple[Any, ...], _Vocabulary]] = LRUCache(max_items=4)


class LogModel:
    """The engine's learner model (:class:`learnloop.tracing.LearnerModel` on a compiled catalog,
    ``index``, as :class:`learnloop.Engine` builds it), with item
    difficulties calibrated on the training log: Rasch (with the learners' ability spread
    estimated) when ``calibrate`` is True, 2PL (discriminations too) when it is ``"2pl"``,
    none when False.

    ``refine``: then fit the items to the model's own next-response predictions on the training
    log, ``refine_iterations`` Gauss-Newton steps (:func:`learnloop.tracing.calibration.refine_step`),
    each from a fresh replay: ``"b"`` the difficulties, ``"ab"`` difficulties and discriminations
    (None: keep the static calibration). A static calibration takes each learner's ability as
    constant; the online model sees it move with every answer, so the difficulty that predicts
    best from a learner's past differs, e.g. for items met mostly early or late in a course.

    ``topic_rates``: then fit the learning after a right and after a wrong answer and the
    novelty of each topic (PFA's per-skill learning rates) to the training log, as
    :func:`learnloop.tracing.rates.fit_topic_rates` does (``topic_rate_steps`` Gauss-Newton steps
    from the settings' values, kept near them); ``topic_rates_`` holds them by topic id, and
    topics without a training answer keep the settings' values.

    ``echo``: then fit the answer echo (:mod:`learnloop.tracing.echo`) to the model's predictions on
    the training log and apply it in :meth:`predict`: a prediction-only term in the learner's previous
    answer, weighted per (previous topic, topic) pair, for logs that repeat one answer on consecutive
    rows (a multi-skill problem written once per skill); ``echo_`` holds it by topic id
    (:meth:`Echo.to_doc`), None when not fitted.

    ``forgetting``: last, bring the memory model into the prediction (:mod:`learnloop.tracing.retention`):
    each answer's logit gets β log R, R the recall of the learner's memory of the topic after the gap
    since the last answer on it, replayed with the log's times (``Responses.time``). ``"fsrs"``: the
    FSRS-4.5 weights on FSRS's clock, β = 1; ``"fitted"``: the clock scale and β (one per topic, kept
    near the shared one) fitted to the training log's gaps (:meth:`fit_forgetting`); None: no term.
    ``forgetting_`` holds it by topic id (:meth:`Forgetting.to_doc`), None when not used. A log without
    times (``timed`` False) has made-up gaps of a minute: leave it None there.

    Each learner's answers are replayed in order with :func:`learnloop.tracing.replay.trace_many`;
    the model is built on ``index`` (an engine's compiled catalog, e.g. ``engine.catalog_index(cid)``),
    its hierarchy and prerequisites included, and the log's item ids are the catalog's; an answer
    counts on its item's first position there.
    """

    def __init__(
        self,
        options: LearnerOptions | Mapping[str, Any] | None = None,
        *,
        calibrate: bool | str = True,
        name: str = "learnloop engine model",
        progress: bool = False,
        index: CatalogIndex | None = None,
        refine: str | None = None,
        refine_iterations: int = 2,
        topic_rates: bool = False,
        topic_rate_steps: int = 2,
        echo: bool = False,
        forgetting: str | None = None,
    ) -> None:
        if refine not in (None, "b", "ab"):
            raise ValueError(f"refine must be None, 'b' or 'ab', got {refine!r}")
        if forgetting not in (None, "fsrs", "fitted"):
            raise ValueError(f"forgetting must be None, 'fsrs' or 'fitted', got {forgetting!r}")
        self.forgetting = forgetting
        self.forgetting_: dict[str, Any] | None = None
        self.refine = refine
        self.refine_iterations = refine_iterations
        self.index = index
        self.options = LearnerOptions.of(options)
        self.calibrate = calibrate
        self.name = name
        self.progress = progress
        self.calibration_: Mapping[str, Mapping[str, float]] = {}
        self.topic_rates = topic_rates
        self.topic_rate_steps = topic_rate_steps
        self.topic_rates_: dict[str, dict[str, float]] = {}
        self.echo = echo
        self.echo_: dict[str, Any] | None = None

    @property
    def b_(self) -> dict[str, float]:
        """The calibrated difficulty of each item seen in training, by item id."""
        return {item: params["b"] for item, params in self.calibration_.items()}

    def fit(self, train: Responses) -> Self:
        self.calibration_ = {}
        self.topic_rates_ = {}
        self.echo_ = None
        self.forgetting_ = None
        if self.calibrate and train.n_responses:
            kind: Literal["rasch", "2pl"] = "2pl" if self.calibrate == "2pl" else "rasch"
            # only the items answered in ``train`` are calibrated: an item without an answer has no
            # term but its prior, so it would stay at the prior's mean and change none of the others
            # (the folds of a log share its whole vocabulary, most of it unanswered in a fold)
            seen, dense = np.unique(train.item, return_inverse=True)
            fit = calibrate(
                train.learner,
                dense,
                train.correct,
                n_items=seen.size,
                n_persons=train.n_learners,
                model=kind,
                ability_sd=None if kind == "rasch" else 1.0,
            )
            ids = train.item_ids
            self.calibration_ = ItemCalibration([ids[i] for i in seen.tolist()], fit.b, fit.a)
        if self.refine and train.n_responses:
            self.refine_items(train)
        if self.topic_rates and train.n_responses:
            self.fit_topic_rates(train)
        if self.echo and train.n_responses:
            self.fit_echo(train)
        if self.forgetting and train.n_responses:
            self.fit_forgetting(train)
        return self

    def fit_forgetting(self, train: Responses) -> Self:
        """Set the forgetting term (see ``forgetting``): the FSRS defaults, or fitted to the model's
        predictions (items, rates and echo as fitted) and the gaps of ``train``."""
        self.forgetting_ = None
        cm = self.catalog_model(train)
        topic_ids = cm.index.topic_ids
        if self.forgetting != "fitted":
            self.forgetting_ = Forgetting().to_doc(topic_ids)
            return self
        position = self._positions(cm, train)
        p = np.clip(self._base(cm, position, train), 1e-9, 1.0 - 1e-9)
        topic = cm.index.item_topic[position]
        group = train.learner.astype(np.int64) * len(topic_ids) + topic
        fit = fit_forgetting(
            np.log(p / (1.0 - p)), train.correct, group, train.time, topic, n_topics=len(topic_ids)
        )  # fmt: skip
        self.forgetting_ = fit.to_doc(topic_ids)
        return self

    def fit_echo(self, train: Responses) -> Self:
        """Fit the answer echo to the model's predictions on ``train`` (items, refinement and per-topic
        rates as fitted; see ``echo``)."""
        self.echo_ = None
        cm = self.catalog_model(train)
        position = self._positions(cm, train)
        p = np.clip(self._replay(cm, position, train), 1e-9, 1.0 - 1e-9)
        topic = cm.index.item_topic[position]
        prev_topic, prev_score = previous_answers(topic, train.correct, train.first)
        echo = fit_echo(np.log(p / (1.0 - p)), train.correct, topic, prev_topic, prev_score)
        self.echo_ = echo.to_doc(cm.index.topic_ids)
        return self

    def fit_topic_rates(self, train: Responses) -> Self:
        """Fit the per-topic learning rates and novelty to ``train``, the items as calibrated
        (see ``topic_rates``)."""
        self.topic_rates_ = {}
        cm = self.catalog_model(train)
        position = self._positions(cm, train)
        bounds = np.flatnonzero(np.r_[train.first, True]).tolist()
        runs = [
            (position[start:stop], train.correct[start:stop])
            for start, stop in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        fit = fit_topic_rates(cm.model, runs, steps=self.topic_rate_steps)
        values = fit.as_options()
        ids = cm.index.topic_ids
        self.topic_rates_ = {
            ids[t]: {name: float(values[name][t]) for name in LearnerOptions.TOPIC_RATES}
            for t in np.flatnonzero(fit.responses).tolist()
        }
        return self

    def refine_items(self, train: Responses) -> Self:
        """Fit the calibrated items to the model's own predictions on ``train`` (see ``refine``)."""
        ids = [item for item in train.item_ids if item in self.calibration_]
        at = {item: k for k, item in enumerate(train.item_ids)}
        rows = np.asarray([at[item] for item in ids], dtype=np.intp)
        start_b = np.zeros(train.n_items)
        start_a = np.ones(train.n_items)
        start_b[rows] = [self.calibration_[item]["b"] for item in ids]
        start_a[rows] = [self.calibration_[item].get("a", 1.0) for item in ids]
        b, a = start_b.copy(), start_a.copy()
        for _ in range(self.refine_iterations):
            b, a = refine_step(
                train.item,
                train.correct,
                self._replay(self.catalog_model(train), None, train),
                b,
                a,
                b_prior_mean=start_b,
                a_prior_mean=start_a,
                a_prior_sd=0.3 if self.refine == "ab" else None,
            )
            self.calibration_ = ItemCalibration(ids, b[rows], a[rows])
        return self

    def catalog_model(self, log: Responses) -> CatalogModel:
        """The engine's compiled catalog and learner model for ``log``'s vocabulary."""
        index, ids, _ = self._vocabulary(log)
        options = self.options.with_topic_rates(index.topic_ids, self.topic_rates_)
        if isinstance(self.calibration_, ItemCalibration):  # a gather over arrays, no look-up per item
            return CatalogModel.build(index, item_arrays=self.calibration_.arrays_on(index, ids), **options)
        calibration = {ids[raw]: params for raw, params in self.calibration_.items() if raw in ids}
        return CatalogModel.build(index, calibration=calibration, **options)

    def catalog_of(self, log: Responses) -> tuple[CatalogIndex, dict[str, str]]:
        """The catalog the model runs on and the catalog id of each of ``log``'s item ids: ``index``,
        whose item ids the log's are."""
        if self.index is None:
            raise ValueError("the model needs a catalog (index=): the log's items are its items")
        return self.index, {raw: raw for raw in log.item_ids}

    def item_names(self, log: Responses) -> tuple[str, ...]:
        """The catalog's id of each of ``log``'s items (``index``'s: the log's own ids)."""
        return log.item_ids

    def vocabulary_key(self, log: Responses) -> tuple[Any, ...]:
        """What identifies ``log``'s vocabulary on this model's catalog (the key of ``_VOCABULARIES``)."""
        return ("index", id(self.index), log.item_ids)

    def _vocabulary(self, log: Responses) -> _Vocabulary:
        """The catalog of ``log``'s vocabulary (:meth:`catalog_of`), the catalog id of each of its item
        ids and the catalog position of each item: made once per vocabulary and kept
        (``_VOCABULARIES``), as the folds of a log and its model's many settings share one."""
        # the folds of a log share its vocabulary's objects: found by identity, without hashing the ids
        parts = (
            self.index,
            log.item_ids,
            *(getattr(log, name, None) for name in ("skill_ids", "skill_ptr", "skill_idx")),
        )
        by_id = (type(self), *map(id, parts))
        same = _BY_IDENTITY.get(by_id)
        if same is not None and all(a is b for a, b in zip(same[0], parts, strict=True)):
            return same[1]
        key = self.vocabulary_key(log)
        found = _VOCABULARIES.get(key)
        if found is not None and (self.index is None or found[0] is self.index):
            _BY_IDENTITY.put(by_id, (parts, found))
            return found
        index, ids = self.catalog_of(log)
        found_at = [index.position(i) for i in self.item_names(log)]
        missing = [raw for raw, p in zip(log.item_ids, found_at, strict=True) if p is None]
        if missing:
            raise ValueError(f"items not in catalog '{index.catalog_id}': {missing[:5]}")
        position = np.asarray(found_at, dtype=np.intp)
        position.flags.writeable = False
        made = (index, ids, position)
        _VOCABULARIES.put(key, made)
        _BY_IDENTITY.put(by_id, (parts, made))
        return made

    def _positions(self, cm: CatalogModel, log: Responses) -> np.ndarray:
        """The catalog position of each answer of ``log``: its own (``log.position``, an engine's answers
        given in a topic) when the log has them, else its item's first."""
        given: np.ndarray | None = getattr(log, "position", None)
        return self._vocabulary(log)[2][log.item] if given is None else given

    def predict(self, log: Responses) -> FloatArray:
        cm = self.catalog_model(log)
        position = self._positions(cm, log)
        p = self._base(cm, position, log)
        if self.forgetting_ is None:
            return p
        topic_ids = cm.index.topic_ids
        topic = cm.index.item_topic[position]
        term = Forgetting.from_doc(self.forgetting_, topic_ids)
        group = log.learner.astype(np.int64) * len(topic_ids) + topic
        log_recall, _ = memory_trace(term.memory_model(), group, log.time, log.correct)
        return term.predict(p, log_recall, topic)

    def _base(self, cm: CatalogModel, position: np.ndarray, log: Responses) -> FloatArray:
        """The predictions before the forgetting term: the replay, with the echo when fitted."""
        p = self._replay(cm, position, log)
        if self.echo_ is None:
            return p
        topic = cm.index.item_topic[position]
        prev_topic, prev_score = previous_answers(topic, log.correct, log.first)
        return Echo.from_doc(self.echo_, cm.index.topic_ids).predict(p, topic, prev_topic, prev_score)

    def _replay(self, cm: CatalogModel, position: np.ndarray | None, log: Responses) -> FloatArray:
        """The learner model's P(correct) of each response of ``log`` from the same learner's earlier ones
        (``position``: each answer's catalog position, :meth:`_positions`)."""
        position = self._positions(cm, log) if position is None else position
        lengths = np.diff(np.flatnonzero(np.r_[log.first, True]))
        return trace_many(cm.model, position, log.correct, lengths, progress=self.progress, desc=self.name)
