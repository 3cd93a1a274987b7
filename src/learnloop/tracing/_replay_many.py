"""The replay of many learners at once: step k of every learner still answering is one set of array operations.

The kernel of :func:`learnloop.tracing.replay.trace_many`. It applies the same arithmetic as
:func:`~learnloop.tracing.replay.trace` (a belief per topic node, the one-step Laplace update of each
target of an answer, or the additive Kalman share, then the practice gain), with the learners of a
block in the rows of ``(learners, topics + 1)`` tables, so the cost of a step is a few dozen numpy
calls whatever the number of learners.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import expit

from ._gating import readiness
from ._types import FloatArray, IntArray
from .ability import VAR_MIN
from .irt import PI_OVER_8

if TYPE_CHECKING:
    from .learner import LearnerModel

__all__ = ["ReplayTables", "replay_block"]


class ReplayTables:
    """A model's per-topic and per-item arrays in the shapes the kernel gathers from.

    A learner's row has a column per topic, one for the overall node and a *sink*: the padding of
    the target and chain tables points at it, so a step writes every column it gathered without a
    mask and nothing it reads is disturbed.
    """

    def __init__(self, model: LearnerModel) -> None:
        structure = model.topics
        n = structure.n_topics
        self.model = model
        self.overall, self.sink, self.width = n, n + 1, n + 2
        # the nested belief walks a node's chain (padded with the overall node); the overall node's and
        # the sink's are the overall node alone
        self.chains = np.vstack([structure.chains, np.full((2, structure.chains.shape[1]), n, dtype=np.intp)])
        # the additive ability sums a topic's chain: padding points at the sink and weighs 0
        in_chain = np.arange(structure.chains.shape[1]) < (structure.depth + 2)[:, None]
        self.sum_chain = np.where(in_chain, structure.chains, self.sink)
        self.in_chain = in_chain.astype(np.float64)
        self.item_topic = np.asarray(model.items.topic, dtype=np.intp)
        self.b = np.asarray(model.items.b, dtype=np.float64)
        self.a = np.asarray(model.items.a, dtype=np.float64)
        self.gain = np.asarray(model._gain, dtype=np.float64)
        self.fail = np.asarray(model._fail, dtype=np.float64)
        self.novelty = np.asarray(model._nov, dtype=np.float64) if model._has_novelty else None
        # the targets of an answer on a topic: itself (weight 1), its ancestors and the overall
        # node (parent weight), the topics it is a prerequisite of (prerequisite weight); a target
        # of weight 0 is not touched (it points at the sink)
        targets = [
            [(t, 1.0)]
            + [(int(node), model.parent_weight) for node in structure.chain(t)[1:]]
            + [(int(node), model.prerequisite_weight) for node in structure.successors(t)]
            for t in range(n)
        ]
        width = max((len(row) for row in targets), default=1)
        self.target = np.full((n, width), self.sink, dtype=np.intp)
        self.weight = np.zeros((n, width))
        for t, row in enumerate(targets):
            self.target[t, : len(row)] = [node if w > 0.0 else self.sink for node, w in row]
            self.weight[t, : len(row)] = [w for _, w in row]
        # prerequisite gating (tracing._gating): the chains of each topic's requirements, padding weighing 0
        gating = model._gating_tables
        self.gating = gating
        if gating is not None:
            if model.hierarchy == "additive":
                rows = np.where(gating.weight > 0.0, gating.node, 0)  # (padding reads topic 0)
                self.gate_rows, self.gate_on = self.sum_chain[rows], self.in_chain[rows]
            else:
                self.gate_rows = self.chains[gating.node]
        start = model.new_state()
        self.start = np.vstack([np.array(start.ability), np.zeros((1, 3))])
        self.start_momentum = np.array(start.momentum)


class _Block:
    """The state of a block of learners (one row of ``tables.width`` columns each) and its answers'
    item values, time-major."""

    def __init__(self, tables: ReplayTables, items: IntArray, scores: FloatArray, n_learners: int, practice: bool):
        self.mean = np.tile(tables.start[:, 0], n_learners)
        self.var = np.tile(tables.start[:, 1], n_learners)
        has = tables.start[:, 2] > 0.0
        has[tables.overall] = True  # the overall node always answers for itself
        self.has = np.tile(has, n_learners)
        self.mom_m = np.full(n_learners, tables.start_momentum[0])
        self.mom_v = np.full(n_learners, tables.start_momentum[1])
        self.base = np.arange(n_learners, dtype=np.intp) * tables.width
        self.topic = tables.item_topic[items]
        self.b, self.a = tables.b[items], tables.a[items]
        self.a2 = self.a * self.a
        self.a2c = PI_OVER_8 * self.a2
        self.score = np.clip(scores, 0.0, 1.0)
        self.novelty = None if tables.novelty is None else tables.novelty[self.topic]
        self.gain = None
        if practice:
            g, f = tables.gain[self.topic], tables.fail[self.topic]
            self.gain = np.where(f == g, g, scores * g + (1.0 - scores) * f)


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
    n_learners = lengths.size
    block = _Block(tables, items, scores, n_learners, practice)
    ascending = lengths[::-1]
    active = n_learners - np.searchsorted(ascending, np.arange(int(lengths[0])), side="right")
    offsets = np.r_[0, np.cumsum(active)].tolist()
    out = np.empty(items.size)
    step = _additive_step if tables.model.hierarchy == "additive" else _nested_step
    reported = 0
    with np.errstate(over="ignore", under="ignore"):
        for k, n_active in enumerate(active.tolist()):
            lo, hi = offsets[k], offsets[k + 1]
            if advance is not None and lo - reported >= 10_000:
                advance(lo - reported)
                reported = lo
            out[lo:hi] = step(tables, block, lo, hi, n_active)
    if advance is not None and items.size > reported:
        advance(items.size - reported)
    return out


def _belief(tables: ReplayTables, block: _Block, rows: IntArray) -> tuple[FloatArray, FloatArray]:
    """The nested hierarchy's belief of nodes, given as the rows of their chains (last axis): a node's
    own once it holds evidence, else its nearest ancestor's with ``topic_var`` per level."""
    depth = rows.shape[-1]
    row = rows[..., depth - 1]
    level: Any = depth - 1
    for d in range(depth - 2, -1, -1):
        found = block.has[rows[..., d]]
        row = np.where(found, rows[..., d], row)
        level = np.where(found, d, level)
    return block.mean[row], block.var[row] + tables.model.topic_var * level


def _novelty(
    block: _Block, lo: int, hi: int, own: IntArray, m: FloatArray, b: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """The mean to predict from and the difficulty to update with: a topic without evidence yet is
    ``novelty`` harder, which lowers the prediction and shifts the update's difficulty alike."""
    if block.novelty is None:
        return m, b
    shift = block.novelty[lo:hi] * ~block.has[own]
    return m - shift, b + shift


def _nested_step(tables: ReplayTables, block: _Block, lo: int, hi: int, n_active: int) -> FloatArray:
    model = tables.model
    t, b, a, s = block.topic[lo:hi], block.b[lo:hi], block.a[lo:hi], block.score[lo:hi]
    base = block.base[:n_active]
    own = base + t
    m, v = _belief(tables, block, base[:, None] + tables.chains[t])
    m, b_up = _novelty(block, lo, hi, own, m, b)
    p = expit(a * (m - b) / np.sqrt(1.0 + block.a2c[lo:hi] * v))
    targets = tables.target[t]
    nodes = base[:, None] + targets
    weight = tables.weight[t]
    pm, pv = _belief(tables, block, base[:, None, None] + tables.chains[targets])
    learned = _gated_gain(tables, block, lo, hi, base, t)
    prec = 1.0 / np.maximum(pv + model.drift, VAR_MIN)
    a2, b2, s2 = a[:, None], b_up[:, None], s[:, None]
    p0 = expit(a2 * (pm - b2))
    wa = weight * a2
    waa = wa * a2
    m2 = pm + wa * (s2 - p0) / (prec + waa * p0 * (1.0 - p0))
    p1 = expit(a2 * (m2 - b2))
    block.mean[nodes] = m2
    block.var[nodes] = 1.0 / (prec + waa * p1 * (1.0 - p1))
    block.has[nodes] = True
    if learned is not None:
        block.mean[own] += learned
    return p  # type: ignore[no-any-return]


def _additive_step(tables: ReplayTables, block: _Block, lo: int, hi: int, n_active: int) -> FloatArray:
    model = tables.model
    rho, q, drift = model.momentum_decay, model.momentum_var, model.drift
    t, b, a, s = block.topic[lo:hi], block.b[lo:hi], block.a[lo:hi], block.score[lo:hi]
    base = block.base[:n_active]
    own = base + t
    rows = base[:, None] + tables.sum_chain[t]
    valid = tables.in_chain[t]
    cm = block.mean[rows] * valid
    raw_v = block.var[rows] * valid
    total_m = cm.sum(axis=1)
    v = raw_v.sum(axis=1)
    m, b_up = _novelty(block, lo, hi, own, total_m, b)
    fast = q > 0.0
    if fast:
        mom_m, mom_v = block.mom_m[:n_active], block.mom_v[:n_active]
        mom_mean = rho * mom_m
        m = m + mom_mean
        v = v + (rho * rho * mom_v + q)
    p = expit(a * (m - b) / np.sqrt(1.0 + block.a2c[lo:hi] * v))
    learned = _gated_gain(tables, block, lo, hi, base, t)
    cv = np.maximum(raw_v + drift, VAR_MIN) * valid
    total_v = cv.sum(axis=1)
    if fast:
        mom_var = np.maximum((rho * rho * mom_v + q - drift) + drift, VAR_MIN)
        total_m = total_m + mom_mean
        total_v = total_v + mom_var
    pu = expit(a * (total_m - b_up))
    h = block.a2[lo:hi] * pu * (1.0 - pu)
    den = 1.0 + total_v * h
    gain = a * (s - pu) / den
    block.mean[rows] = cm + cv * gain[:, None]
    block.var[rows] = np.maximum(cv - cv * cv * (h / den)[:, None], VAR_MIN)
    block.has[rows] = True
    if fast:
        block.mom_m[:n_active] = mom_mean + mom_var * gain
        block.mom_v[:n_active] = np.maximum(mom_var - mom_var * mom_var * h / den, VAR_MIN)
    if learned is not None:
        block.mean[own] += learned
    return p  # type: ignore[no-any-return]


def _gated_gain(
    tables: ReplayTables, block: _Block, lo: int, hi: int, base: IntArray, t: IntArray
) -> FloatArray | None:
    """The practice gain of step ``lo:hi`` (None: no practice), scaled by the readiness of each answer's
    topic (:mod:`learnloop.tracing._gating`) from the beliefs before the answer when the model gates."""
    if block.gain is None:
        return None
    gating = tables.gating
    if gating is None:
        return block.gain[lo:hi]
    rows = base[:, None, None] + tables.gate_rows[t]
    if tables.model.hierarchy == "additive":
        means = (block.mean[rows] * tables.gate_on[t]).sum(axis=-1)
    else:
        means, _ = _belief(tables, block, rows)
    return block.gain[lo:hi] * readiness(tables.model._gating, means - gating.mean_b[t], gating.weight[t])
