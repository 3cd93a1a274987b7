"""Models run through the next-response protocol: baselines, per-skill BKT, the engine's learner model.

Each has ``name``, ``fit(train) -> self`` and ``predict(log) -> P(correct)``
of every response of ``log`` from the same learner's earlier responses only
(and what was fitted on ``train``).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from learnloop._types import FloatArray
from learnloop.content import CatalogIndex, compile_catalog
from learnloop.datasets import ResponseLog
from learnloop.engine import LogModel, Responses
from learnloop.tracing import BKT, Sequences, log_loss, predict_sequences

__all__ = ["BKTModel", "EngineModel", "GlobalMean", "ItemMean", "Model", "SkillMean"]


class Model(Protocol):
    """What the protocol runs."""

    name: str

    def fit(self, train: ResponseLog) -> Model: ...

    def predict(self, log: ResponseLog) -> FloatArray: ...


def _smoothed(
    correct: FloatArray, group: np.ndarray, n_groups: int, prior: FloatArray | float, strength: float
) -> FloatArray:
    """Per group: (successes + strength * prior) / (responses + strength)."""
    hits = np.bincount(group, weights=correct, minlength=n_groups)
    counts = np.bincount(group, minlength=n_groups)
    return (hits + strength * np.asarray(prior, dtype=np.float64)) / (counts + strength)


class GlobalMean:
    """The share of right answers on the training log."""

    name = "global mean"

    def __init__(self) -> None:
        self.mean_ = 0.5

    def fit(self, train: ResponseLog) -> GlobalMean:
        self.mean_ = float(train.correct.mean()) if train.n_responses else 0.5
        return self

    def predict(self, log: ResponseLog) -> FloatArray:
        return np.full(log.n_responses, self.mean_)


class SkillMean:
    """The share of right answers on each skill (an item with several skills: the mean of
    theirs; no skill: the global share), smoothed toward the global share by ``strength``."""

    name = "per-skill mean"

    def __init__(self, strength: float = 5.0) -> None:
        self.strength = strength
        self.skill_: FloatArray = np.zeros(0)
        self.mean_ = 0.5

    def fit(self, train: ResponseLog) -> SkillMean:
        self.mean_ = GlobalMean().fit(train).mean_
        rows, skills = train.response_skills()
        self.skill_ = _smoothed(train.correct[rows], skills, train.n_skills, self.mean_, self.strength)
        return self

    def item_means(self, log: ResponseLog) -> FloatArray:
        """Per item of ``log``'s vocabulary: the mean of its skills' shares."""
        counts = np.diff(log.skill_ptr)
        known = np.zeros(log.n_skills)
        known[: self.skill_.size] = self.skill_[: log.n_skills]
        known[self.skill_.size :] = self.mean_
        owner = np.repeat(np.arange(log.n_items), counts)
        sums = np.bincount(owner, weights=known[log.skill_idx], minlength=log.n_items)
        return np.where(counts > 0, sums / np.maximum(counts, 1), self.mean_)

    def predict(self, log: ResponseLog) -> FloatArray:
        return self.item_means(log)[log.item]


class ItemMean:
    """The share of right answers on each item, smoothed toward its skills' share."""

    name = "per-item mean"

    def __init__(self, strength: float = 5.0) -> None:
        self.strength = strength
        self.skills = SkillMean(strength)
        self.item_: FloatArray = np.zeros(0)

    def fit(self, train: ResponseLog) -> ItemMean:
        self.skills.fit(train)
        prior = self.skills.item_means(train)
        self.item_ = _smoothed(train.correct, train.item, train.n_items, prior, self.strength)
        return self

    def predict(self, log: ResponseLog) -> FloatArray:
        means = self.skills.item_means(log)
        means[: self.item_.size] = self.item_[: log.n_items]
        return means[log.item]


class BKTModel:
    """Per-skill Bayesian Knowledge Tracing (:class:`learnloop.tracing.BKT`); a response to an
    item with several skills gets the mean of its skills' predictions (each from that skill's
    earlier answers), one without a skill the global share.

    ``options`` go to :class:`~learnloop.tracing.BKT` (guess and slip bounded at 0.5 unless
    given: a larger guess or slip makes the "known" state the worse one).

    :meth:`params` gives the fitted parameters by skill id and name; ``bkt.params_`` holds them
    as an array, one row per skill of the training log (``skill_ids_``).
    """

    name = "BKT per skill"

    def __init__(self, **options: Any) -> None:
        self.options = {"max_guess": 0.5, "max_slip": 0.5, **options}
        self.bkt: BKT | None = None
        self.mean_ = 0.5
        self.bound_losses_: dict[float, float] = {}
        self.skill_ids_: tuple[str, ...] = ()

    @classmethod
    def chosen(
        cls, train: ResponseLog, *, bounds: tuple[float, ...] = (0.3, 0.5, 1.0), folds: int = 3, **options: Any
    ) -> BKTModel:
        """The model fitted on ``train`` with the guess/slip bound (1.0: none) whose fits on
        ``folds`` folds of the training learners predict the held-out learners' answers with
        the lowest log loss (the next-response protocol, as :func:`fit_options` chooses).

        ``bound_losses_`` keeps each bound's mean validation log loss.
        """
        parts = train.folds(folds, seed=0)
        losses = {}
        for bound in bounds:
            scored = []
            for part_train, part_valid in parts:
                model = cls(**{**options, "max_guess": bound, "max_slip": bound}).fit(part_train)
                scored.append(log_loss(part_valid.correct, model.predict(part_valid)))
            losses[bound] = float(np.mean(scored))
        best = min(losses, key=lambda b: losses[b])
        fitted = cls(**{**options, "max_guess": best, "max_slip": best}).fit(train)
        fitted.bound_losses_ = losses
        return fitted

    def fit(self, train: ResponseLog) -> BKTModel:
        self.mean_ = GlobalMean().fit(train).mean_
        rows, skills = train.response_skills()
        seqs = Sequences.from_events(skills, train.learner[rows], train.correct[rows], n_skills=train.n_skills)
        self.bkt = BKT(**self.options).fit(seqs)
        self.skill_ids_ = train.skill_ids
        return self

    def params(self) -> dict[str, dict[str, float]]:
        """The fitted parameters of each skill answered in training, by the log's skill id:
        ``{skill_id: {"prior": .., "learn": .., "guess": .., "slip": .., "forget": ..}}``
        (pyBKT's ``model.params()`` as plain dicts; ``pandas.DataFrame(model.params()).T`` is a frame)."""
        if self.bkt is None:
            raise ValueError("fit the model first")
        return {str(skill): values for skill, values in self.bkt.params(self.skill_ids_).items()}

    def predict(self, log: ResponseLog) -> FloatArray:
        if self.bkt is None:
            raise ValueError("fit the model first")
        rows, skills = log.response_skills()
        params = self.bkt.params_
        fitted = skills < params.shape[0]
        rows, skills = rows[fitted], skills[fitted]
        seqs = Sequences.from_events(skills, log.learner[rows], log.correct[rows], n_skills=params.shape[0])
        per_pair = predict_sequences(params, seqs)
        sums = np.bincount(rows, weights=per_pair, minlength=log.n_responses)
        counts = np.bincount(rows, minlength=log.n_responses)
        return np.where(counts > 0, sums / np.maximum(counts, 1), self.mean_)


class EngineModel(LogModel):
    """The engine's learner model (:class:`learnloop.tracing.LearnerModel` on the log's
    catalog, one topic per skill, as :class:`learnloop.Engine` builds it), with item
    difficulties calibrated on the training log: Rasch (with the learners' ability spread
    estimated) when ``calibrate`` is True, 2PL (discriminations too) when it is ``"2pl"``,
    none when False. The model is the engine's own fitted model (``learnloop.engine``'s
    ``LogModel``, what :meth:`learnloop.Engine.fit` fits); here it also runs without a catalog.

    ``refine``: then fit the items to the model's own next-response predictions on the training
    log (``"b"`` the difficulties, ``"ab"`` difficulties and discriminations; None: keep the static
    calibration). ``topic_rates``: then fit the learning after a right and after a wrong answer and
    the novelty of each topic (PFA's per-skill learning rates); ``topic_rates_`` holds them by topic
    id. ``echo``: then fit the answer echo (:mod:`learnloop.tracing.echo`), a prediction-only term in
    the learner's previous answer; ``echo_`` holds it by topic id. ``forgetting``: last, the memory
    model's term β log R on each answer's logit (:mod:`learnloop.tracing.retention`; ``"fsrs"``: the
    FSRS-4.5 weights, β = 1; ``"fitted"``: clock scale and β per topic fitted to the training log's
    gaps; None: no term; leave it None on a log without times). Each is described in ``docs/models.md``.

    Each learner's answers are replayed in order with :func:`learnloop.tracing.replay.trace_many`;
    an answer is posted on its item's first skill, as :meth:`ResponseLog.events` posts it.
    With ``index`` (an engine's compiled catalog, e.g. ``engine.catalog_index(cid)``) the model
    is built on that catalog — its hierarchy and prerequisites included — and the log's item ids
    are the catalog's; an answer counts on its item's first position there.
    """

    def catalog_of(self, log: Responses) -> tuple[CatalogIndex, dict[str, str]]:
        if self.index is not None or not isinstance(log, ResponseLog):
            return super().catalog_of(log)
        items, catalog = log.catalog("log")
        index = compile_catalog(catalog, {i.item_id: i for i in items})
        return index, dict(zip(log.item_ids, log.catalog_item_ids, strict=True))

    def item_names(self, log: Responses) -> tuple[str, ...]:
        if self.index is not None or not isinstance(log, ResponseLog):
            return log.item_ids
        return log.catalog_item_ids

    def vocabulary_key(self, log: Responses) -> tuple[Any, ...]:
        if self.index is not None or not isinstance(log, ResponseLog):
            return super().vocabulary_key(log)
        return ("log", log.item_ids, log.skill_ids, log.skill_ptr.tobytes(), log.skill_idx.tobytes())
