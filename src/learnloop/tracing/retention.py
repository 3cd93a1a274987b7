r"""Forgetting in the prediction of a next response: the memory model's recall, weighted and fitted to a log's gaps.

The learner model predicts an answer from the ability belief alone; the time since the learner last
practised a topic does not enter it, and the FSRS-style memory of :mod:`~learnloop.tracing.forgetting`
serves review scheduling only. The forgetting term brings the memory into the prediction: to the
model's logit :math:`z` of an answer on topic :math:`t` it adds

.. math:: z' = z + \beta_t \log R(\tau\,\Delta t, S_t),

with :math:`R` the FSRS power curve, :math:`S_t` the stability of the learner's memory of the topic
(FSRS updates from every earlier answer on it, each at its own time), :math:`\Delta t` the time since
the last of them, :math:`\tau` a clock scale (``MemoryModel(time_scale=...)``: the memory decays
:math:`\tau` times as fast as under FSRS's clock) and :math:`\beta_t \ge 0` the weight of recall. The
first answer on a topic has no memory and no term. With :math:`\beta = 1` the odds of a right answer
are multiplied by :math:`R` (:math:`P \approx p R` for small :math:`p`: what the learner knows, times
the share of it still recalled); :class:`Forgetting`'s defaults, :math:`\tau = 1` and :math:`\beta = 1`
with the FSRS-4.5 weights, are "the FSRS defaults". :func:`fit_forgetting` fits :math:`\tau` (on a
grid) and :math:`\beta` (a one-dimensional convex fit for each :math:`\tau`) to a log's answers and
gaps, then one :math:`\beta_t` per topic, ridge-penalised toward the shared value so that a topic
with few answers after a gap keeps it. The ability update is untouched: like the answer echo
(:mod:`~learnloop.tracing.echo`) the term acts on predictions.

:func:`memory_trace` runs the FSRS recursion along a whole log at once (step ``k`` of every
(learner, topic) sequence as one set of array operations) and gives the recall before each answer.

>>> import numpy as np
>>> day = 86400.0
>>> log_r, gap = memory_trace(MemoryModel(), group=[0, 0, 0], time=[0.0, 3.7145 * day, 4.0 * day], score=[1, 1, 0])
>>> np.exp(log_r).round(3).tolist(), gap.round(2).tolist()
([1.0, 0.9, 0.998], [nan, 3.71, 0.29])
>>> Forgetting().predict([0.8, 0.8], log_r[:2], topic=[0, 0]).round(3).tolist()
[0.8, 0.783]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._types import ArrayLike, FloatArray
from .forgetting import DAY_SECONDS, FSRS_FACTOR, FSRS_WEIGHTS, MemoryModel, as_epoch_seconds

if TYPE_CHECKING:
    from .learner import LearnerModel, LearnerState

__all__ = ["DEFAULT_TIME_SCALES", "Forgetting", "fit_forgetting", "memory_trace"]

#: the clock scales :func:`fit_forgetting` tries (1: FSRS's clock)
DEFAULT_TIME_SCALES: tuple[float, ...] = tuple(2.0**k for k in range(-2, 11))


def memory_trace(
    memory: MemoryModel, group: ArrayLike, time: ArrayLike, score: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """The log of the recall probability before each answer, and the gap (days) since the previous
    answer of its group: ``group`` names the memory each answer reviews (e.g. learner × topics +
    topic), ``time`` is in epoch seconds, non-decreasing within a group, ``score`` in [0, 1]. An
    answer without an earlier one in its group has log recall 0 and gap NaN. Each memory is
    updated as :meth:`MemoryModel.next_review` updates it (the same figures, to rounding)."""
    g = np.asarray(group, dtype=np.int64).ravel()
    t = np.asarray(time, dtype=np.float64).ravel()
    s = np.asarray(score, dtype=np.float64).ravel()
    if not g.size == t.size == s.size:
        raise ValueError("group, time and score must have one entry per answer")
    n = g.size
    log_r = np.zeros(n)
    gap = np.full(n, np.nan)
    if n == 0:
        return log_r, gap
    order = np.argsort(g, kind="stable")
    gs = g[order]
    starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    lengths = np.diff(np.r_[starts, n])
    by_length = np.argsort(-lengths, kind="stable")  # longest first: the active groups of step k lead
    starts, lengths = starts[by_length], lengths[by_length]
    w = memory.weights
    grade = np.where(s < memory.lapse_below, 1, np.where(s < memory.good_from, 2, 3))
    d0 = np.clip(w[4] - (np.arange(4) - 3) * w[5], 1.0, 10.0)  # by grade (index 0 unused)
    first = order[starts]
    stab = np.asarray(w[:3])[grade[first] - 1]
    diff = d0[grade[first]]
    last = t[first].copy()
    scale = memory.time_scale / DAY_SECONDS
    hard_factor = np.array([1.0, 1.0, w[15], 1.0])
    for k in range(1, int(lengths[0]) if lengths.size else 0):
        m = int(np.searchsorted(-lengths, -k, side="left"))  # groups with more than k answers
        at = order[starts[:m] + k]
        st, dt, ls = stab[:m], diff[:m], last[:m]
        now = t[at]
        elapsed = np.maximum(now - ls, 0.0)
        gap[at] = elapsed / DAY_SECONDS
        r = (1.0 + FSRS_FACTOR * elapsed * scale / st) ** -0.5
        log_r[at] = np.log(r)
        gr = grade[at]
        lapse = w[11] * dt ** -w[12] * ((st + 1.0) ** w[13] - 1.0) * np.exp(w[14] * (1.0 - r))
        grow = st * (
            1.0 + math.exp(w[8]) * (11.0 - dt) * st ** -w[9] * (np.exp(w[10] * (1.0 - r)) - 1.0) * hard_factor[gr]
        )
        new_s = np.where(gr == 1, np.minimum(lapse, st), grow)
        new_d = w[7] * d0[3] + (1.0 - w[7]) * (dt - w[6] * (gr - 3))
        stab[:m] = np.maximum(new_s, 0.01)
        diff[:m] = np.clip(new_d, 1.0, 10.0)
        last[:m] = np.maximum(now, ls)
    return log_r, gap


@dataclass(frozen=True)
class Forgetting:
    """The forgetting term's parameters: the memory model's ``weights`` and ``time_scale``, the weight
    of recall ``scale`` (β) and, when fitted per topic, ``topic_scale`` (one β per topic index; empty:
    ``scale`` everywhere). The defaults are the FSRS defaults (τ = 1, β = 1); ``scale`` 0 is no
    forgetting."""

    weights: tuple[float, ...] = FSRS_WEIGHTS
    time_scale: float = 1.0
    scale: float = 1.0
    topic_scale: tuple[float, ...] = ()

    def memory_model(self) -> MemoryModel:
        """The :class:`MemoryModel` whose recall the term reads (for a learner model's ``memory_model``)."""
        return MemoryModel(weights=self.weights, time_scale=self.time_scale)

    def scales(self, topic: ArrayLike) -> FloatArray:
        """β of each answer's topic."""
        t = np.asarray(topic, dtype=np.intp)
        if not self.topic_scale:
            return np.full(t.shape, self.scale)
        table = np.asarray(self.topic_scale, dtype=np.float64)
        inside = (t >= 0) & (t < table.size)
        return np.where(inside, table[np.clip(t, 0, max(table.size - 1, 0))], self.scale)

    def apply(self, z: ArrayLike, log_recall: ArrayLike, topic: ArrayLike) -> FloatArray:
        """The logit ``z`` of each answer with the term added (``log_recall`` from :func:`memory_trace`
        or :meth:`LearnerModel.recall`, 0 or NaN where the topic has no memory)."""
        lr = np.nan_to_num(np.asarray(log_recall, dtype=np.float64), nan=0.0)
        return np.asarray(z, dtype=np.float64) + self.scales(topic) * lr

    def predict(self, p: ArrayLike, log_recall: ArrayLike, topic: ArrayLike) -> FloatArray:
        """:meth:`apply` on probabilities: P(correct) from the model's ``p``."""
        q = np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1.0 - 1e-12)
        return 1.0 / (1.0 + np.exp(-self.apply(np.log(q / (1.0 - q)), log_recall, topic)))

    def odds_by_topic(self, log_recall: ArrayLike) -> FloatArray:
        """Per topic, the factor the term multiplies the odds of a right answer by: ``exp(β_t log R_t)``
        (``log_recall``: one per topic, as :meth:`LearnerModel.recall` gives it, logged; 1 where the topic
        has no memory)."""
        lr = np.nan_to_num(np.asarray(log_recall, dtype=np.float64), nan=0.0)
        return np.exp(self.scales(np.arange(lr.size)) * lr)

    def predict_by_topic(self, p: ArrayLike, topic: ArrayLike, odds: FloatArray) -> FloatArray:
        """:meth:`predict` for items of the given topics, from :meth:`odds_by_topic` (the same figures
        to rounding: σ(logit p + c) = p e^c / (1 − p + p e^c), without a logarithm per item)."""
        q = np.asarray(p, dtype=np.float64)
        k = odds[np.asarray(topic, dtype=np.intp)]
        k *= q
        return k / (k + (1.0 - q))

    def predict_state(
        self, model: LearnerModel, state: LearnerState, at: Any, items: ArrayLike | None = None
    ) -> FloatArray:
        """P(correct) of the items (all, or the positions given) for a learner in ``state`` at time
        ``at``: ``model.predict`` with the term of each item's topic, the memory read through
        ``model.recall`` (build the model with ``memory_model=self.memory_model()`` so that its
        memories follow this clock)."""
        idx = None if items is None else np.asarray(items)
        p = model.predict(state, idx)
        topic = model.items.topic if idx is None else model.items.topic[idx]
        with np.errstate(divide="ignore"):
            log_r = np.log(model.recall(state, as_epoch_seconds(at)))
        return self.predict(p, log_r[topic], topic)

    def to_doc(self, topic_ids: Sequence[str]) -> dict[str, Any]:
        """A JSON document with the per-topic weights by topic id (``topic_ids``: the topics, by index)."""
        return {
            "weights": list(self.weights),
            "time_scale": self.time_scale,
            "scale": self.scale,
            "topic_scale": {topic_ids[k]: v for k, v in enumerate(self.topic_scale) if v != self.scale},
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any], topic_ids: Sequence[str]) -> Forgetting:
        """The term of :meth:`to_doc` on the topics ``topic_ids`` (a topic without a weight of its own
        takes the shared one)."""
        scale = float(doc.get("scale", 1.0))
        own = doc.get("topic_scale") or {}
        per_topic = tuple(float(own.get(t, scale)) for t in topic_ids) if own else ()
        return cls(
            tuple(float(w) for w in doc.get("weights", FSRS_WEIGHTS)),
            float(doc.get("time_scale", 1.0)),
            scale,
            per_topic,
        )


def _fit_scale(z: FloatArray, y: FloatArray, x: FloatArray, iterations: int = 50) -> tuple[float, float]:
    """β ≥ 0 minimising the mean log loss of σ(z + β x), by projected Newton steps; and that loss."""
    beta = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(z + beta * x)))
        grad = float(np.dot(p - y, x))
        hess = float(np.dot(p * (1.0 - p), x * x))
        if hess <= 0.0:
            break
        step = max(beta - grad / hess, 0.0) - beta
        beta += step
        if abs(step) < 1e-9:
            break
    logit = z + beta * x
    return beta, float(np.mean(np.logaddexp(0.0, logit) - y * logit))


def fit_forgetting(
    z: ArrayLike,
    correct: ArrayLike,
    group: ArrayLike,
    time: ArrayLike,
    topic: ArrayLike,
    *,
    n_topics: int,
    weights: Sequence[float] = FSRS_WEIGHTS,
    time_scales: Sequence[float] = DEFAULT_TIME_SCALES,
    per_topic: bool = True,
    prior_answers: float = 50.0,
    steps: int = 20,
) -> Forgetting:
    """Fit the forgetting term to answers with model logits ``z`` (each from the learner's earlier
    answers), outcomes ``correct`` in [0, 1], the memory each reviews (``group``, e.g. learner ×
    ``n_topics`` + topic), their times (epoch seconds, non-decreasing within a group) and topics.

    For each clock scale of ``time_scales`` the recall before every answer is traced
    (:func:`memory_trace`) and β ≥ 0 fitted (the mean log loss of σ(z + β log R) is convex in β); the
    scale with the lowest loss is kept. With ``per_topic``, each topic then gets its own β_t ≥ 0,
    ridge-penalised toward the shared β with the weight of ``prior_answers`` typical answers after a
    gap (``steps`` projected Newton steps), so that only topics with many answers after gaps move.
    A log without forgetting fits β = 0 (or near it): the term then changes nothing.
    """
    zz = np.asarray(z, dtype=np.float64).ravel()
    y = np.asarray(correct, dtype=np.float64).ravel()
    t = np.asarray(topic, dtype=np.intp).ravel()
    if not zz.size == y.size == t.size:
        raise ValueError("z, correct and topic must have one entry per answer")
    w = tuple(float(v) for v in weights)
    if zz.size == 0:
        return Forgetting(w, 1.0, 0.0)
    best: tuple[float, float, float, FloatArray] | None = None
    for tau in time_scales:
        x, _ = memory_trace(MemoryModel(weights=w, time_scale=float(tau)), group, time, y)
        beta, loss = _fit_scale(zz, y, x)
        if best is None or loss < best[2] - 1e-12:
            best = (float(tau), beta, loss, x)
    assert best is not None
    tau, beta, _, x = best
    if not per_topic or beta <= 0.0:
        return Forgetting(w, tau, beta)
    gapped = x < 0.0
    p = 1.0 / (1.0 + np.exp(-(zz + beta * x)))
    info = p * (1.0 - p) * x * x
    typical = float(info[gapped].mean()) if gapped.any() else 0.0
    if typical <= 0.0:
        return Forgetting(w, tau, beta)
    ridge = prior_answers * typical
    b = np.full(n_topics, beta)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(zz + b[t] * x)))
        grad = np.bincount(t, (p - y) * x, minlength=n_topics) + ridge * (b - beta)
        hess = np.bincount(t, p * (1.0 - p) * x * x, minlength=n_topics) + ridge
        new = np.maximum(b - grad / hess, 0.0)
        done = float(np.max(np.abs(new - b)))
        b = new
        if done < 1e-7:
            break
    return Forgetting(w, tau, beta, tuple(b.tolist()))
