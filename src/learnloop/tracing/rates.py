r"""Per-topic learning rates of the online learner model, and their fit to a log.

:class:`~learnloop.tracing.LearnerModel` reads three settings per topic:
``practice_gain`` (the move of the topic's mean after a right answer),
``failure_gain`` (after a wrong one; a fractional score mixes the two) and
``novelty`` (how much harder an unmet topic is than the belief says). Each may
be one value for every topic or one value per topic, as PFA fits its learning
rates per skill.

:func:`fit_topic_rates` fits the per-topic values to learners' answers by
Gauss-Newton steps on the model's own next-response predictions, each from a
fresh replay (:func:`~learnloop.tracing.replay.trace`). The derivative of an
answer's logit is taken as the learner's earlier right and wrong answers on
the topic (the score and one minus it, summed) for the two gains and −1 on
the first answer on the topic for the novelty; ridge priors keep each topic
near the model's values, so a topic with few answers stays near them.

>>> from learnloop.tracing import ItemParams, LearnerModel, TopicStructure
>>> model = LearnerModel(TopicStructure.from_arrays([-1, -1]), ItemParams.from_catalog(
...     item_topic=[0, 1], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False, False]),
...     practice_gain=[0.1, 0.0])
>>> model.practice_gain.tolist(), model.failure_gain.tolist(), model.novelty
([0.1, 0.0], [0.1, 0.0], 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._types import ArrayLike, FloatArray, IntArray
from .learner import LearnerModel
from .replay import trace_many

__all__ = ["TopicRates", "earlier_on_topic", "fit_topic_rates"]


@dataclass(frozen=True, eq=False)
class TopicRates:
    """Fitted values per topic (arrays of the model's topics) and the answers each was fitted on."""

    practice_gain: FloatArray
    failure_gain: FloatArray
    novelty: FloatArray
    responses: IntArray

    def as_options(self) -> dict[str, FloatArray]:
        """The keyword arguments of :class:`~learnloop.tracing.LearnerModel` that set them."""
        return {"practice_gain": self.practice_gain, "failure_gain": self.failure_gain, "novelty": self.novelty}


def earlier_on_topic(learner: ArrayLike, topic: ArrayLike, scores: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """For each answer (a log in time order within each learner): the sum of the learner's
    earlier scores on the same topic, and of one minus them (right and wrong answers before it)."""
    who = np.asarray(learner, dtype=np.int64)
    on = np.asarray(topic, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return np.zeros(0), np.zeros(0)
    key = (who - who.min()) * (int(on.max()) + 1) + on
    order = np.argsort(key, kind="stable")
    k = key[order]
    start = np.r_[True, k[1:] != k[:-1]]
    group = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    right_out, wrong_out = np.empty(s.size), np.empty(s.size)
    for values, out in ((s[order], right_out), (1.0 - s[order], wrong_out)):
        before = np.cumsum(values) - values
        out[order] = before - before[first][group]
    return right_out, wrong_out


def fit_topic_rates(
    model: LearnerModel,
    runs: Sequence[tuple[ArrayLike, ArrayLike]],
    *,
    steps: int = 2,
    ridge: float = 50.0,
    ridge_novelty: float = 20.0,
) -> TopicRates:
    """Per-topic ``practice_gain``, ``failure_gain`` and ``novelty`` fitted to ``runs``: one
    ``(item positions, scores)`` pair per learner, answers in time order, every answer a
    practice answer on its item's topic. The model's own values are the start and the prior
    (ridge ``ridge`` on the gains, ``ridge_novelty`` on the novelty, in units of answers)."""
    n_topics = model.topics.n_topics
    g0, f0, n0 = (np.asarray(v, dtype=np.float64) for v in (model._gain, model._fail, model._nov))
    gain, fail, nov = g0.copy(), f0.copy(), n0.copy()
    positions = [np.asarray(pos, dtype=np.intp).ravel() for pos, _ in runs]
    scores = [np.asarray(sc, dtype=np.float64).ravel() for _, sc in runs]
    if not positions:
        return TopicRates(gain, fail, nov, np.zeros(n_topics, dtype=np.intp))
    flat_pos, y = np.concatenate(positions), np.concatenate(scores)
    topic = model.items.topic[flat_pos]
    lengths = np.asarray([p.size for p in positions], dtype=np.intp)
    learner = np.repeat(np.arange(len(positions)), lengths)
    right, wrong = earlier_on_topic(learner, topic, y)
    first = (right + wrong) == 0.0

    def total(values: FloatArray) -> FloatArray:
        return np.bincount(topic, weights=values, minlength=n_topics).astype(np.float64)

    for _ in range(steps):
        rated = model.with_rates(practice_gain=gain, failure_gain=fail, novelty=nov)
        p = trace_many(rated, flat_pos, y, lengths)
        w, r = p * (1.0 - p), y - p
        nov = nov + (-total(r * first) - ridge_novelty * (nov - n0)) / (total(w * first) + ridge_novelty)
        g1, g2 = total(r * right) - ridge * (gain - g0), total(r * wrong) - ridge * (fail - f0)
        h11, h22, h12 = total(w * right * right) + ridge, total(w * wrong * wrong) + ridge, total(w * right * wrong)
        det = h11 * h22 - h12 * h12
        gain, fail = gain + (h22 * g1 - h12 * g2) / det, fail + (h11 * g2 - h12 * g1) / det
    return TopicRates(gain, fail, nov, np.bincount(topic, minlength=n_topics).astype(np.intp))
