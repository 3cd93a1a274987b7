"""The answer echo: a prediction-only term for the correlation of an answer with the learner's previous one.

Some logs write one answer several times: a problem tagged with several skills appears as consecutive rows,
one per skill, with the same answer (the DKVMN preprocessing of ASSIST2009 does this). The learner model
predicts such a copy from the learner's ability; the previous row predicts it almost exactly. The echo adds,
to the model's logit ``z`` of a response on topic ``t``, a term in the learner's previous answer (score
``s'`` on topic ``t'``):

    z' = c0 + c1 z + (2 s' - 1) (same           if t == t'
                                 switch + e[t', t] otherwise)

with ``e[t', t]`` a sparse table of (previous topic, topic) pairs seen often enough after a switch in
training (0 for the others), and no term on a learner's first answer. The state it needs per learner is
the last topic and the last score, O(1) per event; the ability update is untouched. It describes the
response correlation of a log, not knowledge: on a log where a multi-skill answer is one row the pair
weights fit to about 0, and sessions keep ranking items by the model's own P(correct).

>>> import numpy as np
>>> echo = Echo(c0=0.0, c1=1.0, same=0.5, switch=0.0, pairs=((0, 1, 3.0),))
>>> echo.apply(np.zeros(3), topic=[1, 1, 0], prev_topic=[0, 1, -1], prev_score=[1.0, 0.0, 1.0]).tolist()
[3.0, -0.5, 0.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from ._types import ArrayLike, FloatArray

__all__ = ["Echo", "fit_echo", "fit_echo_replay", "previous_answers"]

_SHIFT = np.int64(1) << np.int64(32)


def _keys(prev_topic: np.ndarray, topic: np.ndarray) -> np.ndarray:
    return prev_topic.astype(np.int64) * _SHIFT + topic.astype(np.int64)


@dataclass(frozen=True)
class Echo:
    """The echo's parameters; ``pairs`` holds ``(previous topic, topic, weight)`` by topic index.
    The default is the identity (``apply`` returns ``z``)."""

    c0: float = 0.0
    c1: float = 1.0
    same: float = 0.0
    switch: float = 0.0
    pairs: tuple[tuple[int, int, float], ...] = ()
    _table: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        prev = np.asarray([p for p, _, _ in self.pairs], dtype=np.int64)
        topic = np.asarray([t for _, t, _ in self.pairs], dtype=np.int64)
        keys = _keys(prev, topic)
        order = np.argsort(keys, kind="stable")
        weights = np.asarray([w for _, _, w in self.pairs], dtype=np.float64)
        object.__setattr__(self, "_table", (keys[order], weights[order]))

    def pair_weight(self, prev_topic: ArrayLike, topic: ArrayLike) -> FloatArray:
        """``e[t', t]`` of each pair (0 for a pair without a weight of its own)."""
        prev = np.asarray(prev_topic, dtype=np.int64)
        t = np.asarray(topic, dtype=np.int64)
        prev, t = np.broadcast_arrays(prev, t)
        keys, weights = self._table
        if keys.size == 0:
            return np.zeros(prev.shape)
        key = _keys(prev, t)
        at = np.minimum(np.searchsorted(keys, key), keys.size - 1)
        return np.where(keys[at] == key, weights[at], 0.0)

    def apply(self, z: ArrayLike, topic: ArrayLike, prev_topic: ArrayLike, prev_score: ArrayLike) -> FloatArray:
        """The echoed logit of responses on ``topic`` whose model logit is ``z``, after an answer scored
        ``prev_score`` on ``prev_topic`` (-1: no earlier answer, no term). Broadcasts its arguments."""
        zz = np.asarray(z, dtype=np.float64)
        t = np.asarray(topic, dtype=np.int64)
        prev = np.asarray(prev_topic, dtype=np.int64)
        sign = np.where(prev >= 0, 2.0 * np.asarray(prev_score, dtype=np.float64) - 1.0, 0.0)
        term = np.where(prev == t, self.same, self.switch + self.pair_weight(prev, t))
        return self.c0 + self.c1 * zz + sign * term  # type: ignore[no-any-return]

    def predict(self, p: ArrayLike, topic: ArrayLike, prev_topic: ArrayLike, prev_score: ArrayLike) -> FloatArray:
        """:meth:`apply` on probabilities: P(correct) from the model's ``p``."""
        q = np.clip(np.asarray(p, dtype=np.float64), 1e-9, 1.0 - 1e-9)
        return 1.0 / (1.0 + np.exp(-self.apply(np.log(q / (1.0 - q)), topic, prev_topic, prev_score)))

    def to_doc(self, topic_ids: Sequence[str]) -> dict[str, Any]:
        """A JSON document with the pairs by topic id (``topic_ids``: the topics, by index)."""
        return {
            "c0": self.c0,
            "c1": self.c1,
            "same": self.same,
            "switch": self.switch,
            "pairs": [[topic_ids[p], topic_ids[t], w] for p, t, w in self.pairs],
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any], topic_ids: Sequence[str]) -> Echo:
        """The echo of :meth:`to_doc` on the topics ``topic_ids`` (pairs of other topics left out)."""
        at = {tid: k for k, tid in enumerate(topic_ids)}
        pairs = tuple(
            (at[p], at[t], float(w)) for p, t, w in doc.get("pairs", ()) if p in at and t in at
        )  # fmt: skip
        return cls(float(doc["c0"]), float(doc["c1"]), float(doc["same"]), float(doc["switch"]), pairs)


def previous_answers(topic: ArrayLike, score: ArrayLike, first: ArrayLike) -> tuple[np.ndarray, FloatArray]:
    """The echo's state before each response of a log ordered by learner and then time (``first`` marks
    each learner's first response): the topic and score of the same learner's previous response (-1 and
    0 on a learner's first). Nothing of a response itself or of a later one enters its own state."""
    t = np.asarray(topic, dtype=np.intp)
    s = np.asarray(score, dtype=np.float64)
    f = np.asarray(first, dtype=bool)
    prev_topic = np.full(t.size, -1, dtype=np.intp)
    prev_score = np.zeros(t.size)
    prev_topic[1:] = t[:-1]
    prev_score[1:] = s[:-1]
    prev_topic[f] = -1
    prev_score[f] = 0.0
    return prev_topic, prev_score


def fit_echo(
    z: ArrayLike,
    correct: ArrayLike,
    topic: ArrayLike,
    prev_topic: ArrayLike,
    prev_score: ArrayLike,
    *,
    min_pair: int = 20,
    l2: float = 1.0,
) -> Echo:
    """Fit the echo to responses with model logits ``z`` (each from the learner's earlier responses),
    outcomes ``correct`` in [0, 1] and the state of :func:`previous_answers`: a logistic regression of
    the outcome on 1, z, the signed previous answer on the same topic and after a switch, and one weight
    per (previous topic, topic) pair seen at least ``min_pair`` times after a switch, those ridge-penalised
    (``l2`` on their squared sum, the log loss summed) toward 0; convex, by L-BFGS."""
    zz = np.asarray(z, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    t = np.asarray(topic, dtype=np.intp)
    prev = np.asarray(prev_topic, dtype=np.intp)
    n = zz.size
    if n == 0:
        return Echo()
    sign = np.where(prev >= 0, 2.0 * np.asarray(prev_score, dtype=np.float64) - 1.0, 0.0)
    same = (prev >= 0) & (prev == t)
    switch = (prev >= 0) & (prev != t)
    key = _keys(prev, t)
    values, counts = np.unique(key[switch], return_counts=True)
    kept = values[counts >= min_pair]
    col = np.minimum(np.searchsorted(kept, key), max(kept.size - 1, 0))
    has = switch & (kept[col] == key) if kept.size else np.zeros(n, dtype=bool)
    base = np.column_stack([np.ones(n), zz, sign * same, sign * switch])
    pairs = sp.csr_matrix((sign[has], (np.flatnonzero(has), col[has])), shape=(n, max(kept.size, 1)))
    x = sp.hstack([sp.csr_matrix(base), pairs]).tocsr()
    xt = x.T.tocsr()
    pen = np.zeros(x.shape[1])
    pen[4 : 4 + kept.size] = l2 / n

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        logit = x @ w
        loss = np.logaddexp(0.0, logit) - y * logit
        grad = xt @ (1.0 / (1.0 + np.exp(-logit)) - y) / n
        return float(loss.mean() + 0.5 * pen @ (w * w)), grad + pen * w

    start = np.zeros(x.shape[1])
    start[1] = 1.0
    w = minimize(objective, start, jac=True, method="L-BFGS-B", options={"maxiter": 500}).x
    prev_of, topic_of = np.divmod(kept, _SHIFT)
    weights = tuple(
        (int(p), int(q), float(v)) for p, q, v in zip(prev_of.tolist(), topic_of.tolist(), w[4 : 4 + kept.size].tolist())
    )  # fmt: skip
    return Echo(float(w[0]), float(w[1]), float(w[2]), float(w[3]), weights)


def fit_echo_replay(model: Any, runs: Sequence[tuple[ArrayLike, ArrayLike]], **options: Any) -> Echo:
    """Fit the echo to learners' answers replayed through ``model`` (a
    :class:`~learnloop.tracing.LearnerModel`): ``runs`` holds each learner's ``(item positions, scores)``
    in time order; the topic of an answer is its item's."""
    from .replay import trace_many

    item_topic = np.asarray(model.items.topic, dtype=np.intp)
    kept = [(np.asarray(i, dtype=np.intp).ravel(), np.asarray(s, dtype=np.float64).ravel()) for i, s in runs]
    kept = [(i, s) for i, s in kept if i.size]
    if not kept:
        return Echo()
    pos, score = np.concatenate([i for i, _ in kept]), np.concatenate([s for _, s in kept])
    lengths = np.asarray([i.size for i, _ in kept], dtype=np.intp)
    p = np.clip(trace_many(model, pos, score, lengths), 1e-9, 1.0 - 1e-9)
    topic = item_topic[pos]
    first = np.zeros(pos.size, dtype=bool)
    first[np.cumsum(lengths) - lengths] = True
    prev_topic, prev_score = previous_answers(topic, score, first)
    return fit_echo(np.log(p / (1.0 - p)), score, topic, prev_topic, prev_score, **options)
