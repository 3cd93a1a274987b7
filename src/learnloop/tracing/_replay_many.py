"""The replay of many learners at once: step k of every learner still answering is one set of array operations.

The kernel of :func:`learnloop.tracing.replay.trace_many`. It applies the same arithmetic as
:func:`~learnloop.tracing.replay.trace` (a belief per topic node, the one-step Laplace update of each
target of an answer, or the additive Kalman share, then the practice gain), with the learners of a
block in the rows of ``(learners, topics + 1)`` tables, so the cost of a step is a few dozen numpy
calls whatever the number of learners.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ._types import FloatArray, IntArray
from .ability import _VAR_MIN
from .irt import _PI_OVER_8

if TYPE_CHECKING:
    from .learner import LearnerModel

__all__ = ["ReplayTables", "replay_block"]


def _sigmoid(z: FloatArray) -> FloatArray:
    with np.errstate(over="ignore"):
        return np.asarray(1.0 / (1.0 + np.exp(-z)))


class ReplayTables:
    """A model's per-topic and per-item arrays in the shapes the kernel gathers from."""

    def __init__(self, model: LearnerModel) -> None:
        structure = model.topics
        n = structure.n_topics
        self.model = model
        self.overall = n
        # chains with a row for the overall node itself (padded with the overall node)
        self.chains = np.vstack([structure.chains, np.full((1, structure.chains.shape[1]), n, dtype=np.intp)])
        lengths = np.r_[structure.depth + 2, 1]
        self.in_chain = np.arange(self.chains.shape[1]) < lengths[:, None]
        self.item_topic = np.asarray(model.items.topic, dtype=np.intp)
        self.b = np.asarray(model.items.b, dtype=np.float64)
        self.a = np.asarray(model.items.a, dtype=np.float64)
        self.gain = np.asarray(model._gain, dtype=np.float64)
        self.fail = np.asarray(model._fail, dtype=np.float64)
        self.novelty = np.asarray(model._nov, dtype=np.float64) if model._has_novelty else None
        # the targets of an answer on a topic: itself (weight 1), its ancestors and the overall
        # node (parent weight), the topics it is a prerequisite of (prerequisite weight)
        targets = [
            [(t, 1.0)]
            + [(int(node), model.parent_weight) for node in structure.chain(t)[1:]]
            + [(int(node), model.prerequisite_weight) for node in structure.successors(t)]
            for t in range(n)
        ]
        width = max((len(row) for row in targets), default=1)
        self.target = np.full((n, width), n, dtype=np.intp)
        self.weight = np.zeros((n, width))
        for t, row in enumerate(targets):
            self.target[t, : len(row)] = [node for node, _ in row]
            self.weight[t, : len(row)] = [w for _, w in row]
        start = model.new_state()
        self.start = np.array(start.ability)
        self.start_momentum = np.array(start.momentum)


def replay_block(
    tables: ReplayTables,
    items: IntArray,
    scores: FloatArray,
    lengths: IntArray,
    practice: bool,
    advance: Callable[[int], object] | None = None,
) -> FloatArray:
    """P(correct) before each answer of learners whose runs are laid out time-major.

    ``lengths`` (non-increasing, all positive) are the learners' numbers of answers; ``items`` and
    ``scores`` hold step 0 of every learner, then step 1 of every learner still answering, and so on
    (so step k is the first ``count(lengths > k)`` learners). ``advance(n)`` is told of the answers
    replayed, every 10,000 or so.
    """
    model = tables.model
    n_learners, width = lengths.size, tables.overall + 1
    mean = np.repeat(tables.start[None, :, 0], n_learners, axis=0).ravel()
    var = np.repeat(tables.start[None, :, 1], n_learners, axis=0).ravel()
    count = np.repeat(tables.start[None, :, 2], n_learners, axis=0).ravel()
    mom_m = np.full(n_learners, tables.start_momentum[0])
    mom_v = np.full(n_learners, tables.start_momentum[1])
    base_all = np.arange(n_learners, dtype=np.intp) * width
    ascending = lengths[::-1]
    active = n_learners - np.searchsorted(ascending, np.arange(int(lengths[0])), side="right")
    offsets = np.r_[0, np.cumsum(active)]
    out = np.empty(items.size)
    additive = model.hierarchy == "additive"
    rho, q, drift = model.momentum_decay, model.momentum_var, model.drift
    fast = additive and q > 0.0
    topic_var = model.topic_var

    def belief(base: IntArray, nodes: IntArray) -> tuple[FloatArray, FloatArray]:
        """The nested hierarchy's belief of each node: its own row once it holds evidence, else its
        nearest ancestor's with ``topic_var`` per level (the overall node always answers)."""
        chain = tables.chains[nodes]
        rows = base.reshape(base.shape + (1,) * nodes.ndim) + chain
        ok = (count[rows] > 0.0) | (chain == tables.overall)
        level = ok.argmax(axis=-1)
        row = np.take_along_axis(rows, level[..., None], axis=-1)[..., 0]
        return mean[row], var[row] + topic_var * level

    reported = 0
    for k, n_active in enumerate(active.tolist()):
        lo, hi = int(offsets[k]), int(offsets[k + 1])
        if advance is not None and lo - reported >= 10_000:
            advance(lo - reported)
            reported = lo
        i = items[lo:hi]
        s_raw = scores[lo:hi]
        s = np.clip(s_raw, 0.0, 1.0)
        t = tables.item_topic[i]
        b, a = tables.b[i], tables.a[i]
        base = base_all[:n_active]
        own = base + t
        fresh = count[own] <= 0.0
        if additive:
            chain = tables.chains[t]
            valid = tables.in_chain[t]
            rows = base[:, None] + chain
            cm = np.where(valid, mean[rows], 0.0)
            raw_v = np.where(valid, var[rows], 0.0)
            m, v = cm.sum(axis=1), raw_v.sum(axis=1)
        else:
            m, v = belief(base, t)
        if tables.novelty is not None:
            nov = tables.novelty[t]
            m = np.where(fresh, m - nov, m)
            b_up = np.where(fresh, b + nov, b)
        else:
            b_up = b
        if fast:
            m = m + rho * mom_m[:n_active]
            v = v + (rho * rho * mom_v[:n_active] + q)
        out[lo:hi] = _sigmoid(a * (m - b) / np.sqrt(1.0 + _PI_OVER_8 * a * a * v))
        if additive:
            cv = np.where(valid, np.maximum(raw_v + drift, _VAR_MIN), 0.0)
            total_m, total_v = cm.sum(axis=1), cv.sum(axis=1)
            if fast:
                mom_mean = rho * mom_m[:n_active]
                mom_var = np.maximum((rho * rho * mom_v[:n_active] + q - drift) + drift, _VAR_MIN)
                total_m = total_m + mom_mean
                total_v = total_v + mom_var
            p = _sigmoid(a * (total_m - b_up))
            h = a * a * p * (1.0 - p)
            den = 1.0 + total_v * h
            step = a * (s - p) / den
            kept = rows[valid]
            mean[kept] = (cm + cv * step[:, None])[valid]
            var[kept] = np.maximum(cv - cv * cv * (h / den)[:, None], _VAR_MIN)[valid]
            count[kept] += 1.0
            if fast:
                mom_m[:n_active] = mom_mean + mom_var * step
                mom_v[:n_active] = np.maximum(mom_var - mom_var * mom_var * h / den, _VAR_MIN)
        else:
            nodes = tables.target[t]
            weight = tables.weight[t]
            pm, pv = belief(base, nodes)
            vv = np.maximum(pv + drift, _VAR_MIN)
            prec = 1.0 / vv
            a2, b2, s2 = a[:, None], b_up[:, None], s[:, None]
            p0 = _sigmoid(a2 * (pm - b2))
            wa = weight * a2
            m2 = pm + wa * (s2 - p0) / (prec + wa * a2 * p0 * (1.0 - p0))
            p1 = _sigmoid(a2 * (m2 - b2))
            v2 = 1.0 / (prec + wa * a2 * p1 * (1.0 - p1))
            used = weight > 0.0
            kept = (base[:, None] + nodes)[used]
            mean[kept] = m2[used]
            var[kept] = v2[used]
            count[kept] += weight[used]
        if practice:
            g, f = tables.gain[t], tables.fail[t]
            mean[own] += np.where(f == g, g, s_raw * g + (1.0 - s_raw) * f)
    if advance is not None and items.size > reported:
        advance(items.size - reported)
    return out
