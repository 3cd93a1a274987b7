"""Fast replay of one learner's answers with a prediction before each (for evaluation).

:func:`trace` gives, for a run of answers on scorable items, what
``model.predict(state)[item]`` is just before each answer while
``model.update`` applies them one by one — without building the per-item
bookkeeping or the forgetting state, which do not enter the prediction, at a
few microseconds per answer. :func:`trace_many` replays many learners side by
side (step k of all of them as one set of array operations), under a
microsecond per answer on logs of thousands of learners: it is the
next-response protocol of :mod:`learnloop.evaluate`.

>>> from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure
>>> model = LearnerModel(TopicStructure.from_arrays([-1, 0, 0]), ItemParams.from_catalog(
...     item_topic=[1, 2], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False, False]))
>>> p = trace(model, [0, 0, 1], [1.0, 0.0, 1.0])
>>> state = model.new_state()
>>> slow = []
>>> for k, (i, s) in enumerate([(0, 1.0), (0, 0.0), (1, 1.0)]):
...     slow.append(float(model.predict(state, [i])[0]))
...     state = model.update(state, Event(item=i, kind="attempt", score=s, timestamp=float(k)))
>>> bool(np.allclose(p, slow, atol=1e-12))
True
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from ._gating import readiness
from ._replay_many import ReplayTables, replay_block
from ._types import ArrayLike, FloatArray
from .ability import update_ability, update_additive
from .irt import PI_OVER_8

if TYPE_CHECKING:
    from .learner import LearnerModel, LearnerState

__all__ = ["trace", "trace_many"]

# the cost model that splits learners between the two paths of trace_many (seconds, measured on one
# core): a step of the array path, an answer in it, an answer of the per-learner loop
_STEP_COST, _ANSWER_COST, _LOOP_COST = 80e-6, 0.8e-6, 8e-6
# the array path's tables hold at most this many (learner, topic) cells at a time
_BLOCK_CELLS = 2_000_000


def trace(
    model: LearnerModel,
    items: ArrayLike,
    scores: ArrayLike,
    *,
    topics: ArrayLike | None = None,
    practice: bool = True,
    state: LearnerState | None = None,
) -> FloatArray:
    """P(correct) of each answer from the answers before it (and ``state``), in order.

    ``items`` are item positions (scorable items), ``scores`` in [0, 1];
    ``topics`` the topic index each answer was given in (default: the item's
    own). The answers are taken to have distinct times, in the order given.
    """
    start = model.new_state() if state is None else state
    compiled = _compiled()
    if compiled is not None:
        pos_a = np.asarray(items, dtype=np.intp).ravel()
        sc_a = np.asarray(scores, dtype=np.float64).ravel()
        tp_a = np.full(pos_a.size, -1, dtype=np.intp) if topics is None else np.asarray(topics, dtype=np.intp).ravel()
        if not pos_a.size == sc_a.size == tp_a.size:
            raise ValueError("items, scores and topics must have the same length")
        _check_range(model, pos_a, tp_a)
        return _run_compiled(compiled, model, pos_a, sc_a, tp_a, np.zeros(1, dtype=np.intp),
                             np.array([pos_a.size], dtype=np.intp), practice, start)  # fmt: skip
    pos = np.asarray(items, dtype=np.intp).ravel().tolist()
    sc = np.asarray(scores, dtype=np.float64).ravel().tolist()
    tp = [model._item_topic[i] for i in pos] if topics is None else np.asarray(topics, dtype=np.intp).tolist()
    if not len(pos) == len(sc) == len(tp):
        raise ValueError("items, scores and topics must have the same length")
    ability = start.ability.tolist()
    overall = len(ability) - 1
    chains, succ = model._chains, model._succ
    b_of, a_of = model._b, model._a
    topic_var, drift, gain, loss = model.topic_var, model.drift, model._gain, model._fail
    parent_w, pre_w = model.parent_weight, model.prerequisite_weight
    novelty = model._nov if model._has_novelty else None
    gating = model._gating_tables
    out = np.empty(len(pos))

    def belief(node: int) -> tuple[float, float]:
        row = ability[node]
        if row[2] > 0.0 or node == overall:
            return row[0], row[1]
        for level, anc in enumerate(chains[node][1:], start=1):
            row = ability[anc]
            if row[2] > 0.0 or anc == overall:
                return row[0], row[1] + topic_var * level
        raise AssertionError("unreachable: the chain ends at the overall node")

    if model.hierarchy == "additive":
        return _trace_additive(model, pos, sc, tp, ability, practice, start.momentum.tolist())
    for k, (i, s, t) in enumerate(zip(pos, sc, tp, strict=True)):
        b, a = b_of[i], a_of[i]
        # the prediction uses the belief of the item's own topic
        it = model._item_topic[i]
        m, v = belief(it)
        if novelty and ability[it][2] <= 0.0:
            m -= novelty[it]
        z = a * (m - b) / math.sqrt(1.0 + PI_OVER_8 * a * a * v)
        out[k] = 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0
        if novelty and ability[t][2] <= 0.0:
            b += novelty[t]
        chain = chains[t]
        targets = [(t, 1.0)] + [(node, parent_w) for node in chain[1:]] + [(n, pre_w) for n in succ[t]]
        priors = [belief(node) for node, _ in targets]
        ready = 1.0
        if practice and gating is not None and gating.requires[t]:  # the beliefs before the answer
            required = gating.requires[t]
            margins = np.array([belief(p)[0] for p in required]) - gating.mean_b[t, : len(required)]
            ready = float(readiness(model._gating, margins, gating.weight[t, : len(required)]))
        for (node, weight), (pm, pv) in zip(targets, priors, strict=True):
            if weight <= 0.0:
                continue
            m2, v2 = update_ability(pm, pv, b=b, score=s, a=a, weight=weight, drift=drift)
            row = ability[node]
            row[0], row[1], row[2] = m2, v2, row[2] + weight
        if practice:
            g, f = gain[t], loss[t]
            ability[t][0] += (g if f == g else s * g + (1.0 - s) * f) * ready
    return out


def _trace_additive(
    model: LearnerModel,
    pos: list[int],
    sc: list[float],
    tp: list[int],
    ability: list[list[float]],
    practice: bool,
    momentum: list[float],
) -> FloatArray:
    """:func:`trace` for the additive hierarchy: a topic's ability is the sum along its chain
    (plus the short-lived momentum component when the model keeps one)."""
    chains, b_of, a_of, item_topic = model._chains, model._b, model._a, model._item_topic
    drift, gain, loss = model.drift, model._gain, model._fail
    rho, q = model.momentum_decay, model.momentum_var
    fast = q > 0.0
    novelty = model._nov if model._has_novelty else None
    gating = model._gating_tables
    out = np.empty(len(pos))
    for k, (i, s, t) in enumerate(zip(pos, sc, tp, strict=True)):
        b, a = b_of[i], a_of[i]
        rows = [ability[n] for n in chains[item_topic[i]]]
        m = sum(r[0] for r in rows)
        v = sum(r[1] for r in rows)
        if novelty and rows[0][2] <= 0.0:
            m -= novelty[item_topic[i]]
        if fast:
            m += rho * momentum[0]
            v += rho * rho * momentum[1] + q
        z = a * (m - b) / math.sqrt(1.0 + PI_OVER_8 * a * a * v)
        out[k] = 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0
        rows = [ability[n] for n in chains[t]]
        if novelty and rows[0][2] <= 0.0:
            b += novelty[t]
        ready = 1.0
        if practice and gating is not None and gating.requires[t]:  # the beliefs before the answer
            required = gating.requires[t]
            sums = np.array([sum(ability[n][0] for n in chains[p]) for p in required])
            margins = sums - gating.mean_b[t, : len(required)]
            ready = float(readiness(model._gating, margins, gating.weight[t, : len(required)]))
        means = [r[0] for r in rows]
        variances = [r[1] for r in rows]
        if fast:
            means.append(rho * momentum[0])
            variances.append(rho * rho * momentum[1] + q - drift)
        update_additive(means, variances, b=b, score=s, a=a, drift=drift)
        if fast:
            momentum[0], momentum[1] = means.pop(), variances.pop()
        for r, m2, v2 in zip(rows, means, variances, strict=True):
            r[0], r[1], r[2] = m2, v2, r[2] + 1.0
        if practice:
            g, f = gain[t], loss[t]
            ability[t][0] += (g if f == g else s * g + (1.0 - s) * f) * ready
    return out


def trace_many(
    model: LearnerModel,
    items: ArrayLike,
    scores: ArrayLike,
    lengths: ArrayLike,
    *,
    practice: bool = True,
    progress: bool = False,
    desc: str = "replay",
) -> FloatArray:
    """:func:`trace` of many learners at once, each from a new state.

    ``items`` and ``scores`` hold the learners' runs one after the other (learner 0's answers in
    order, then learner 1's, ...), ``lengths`` the number of answers of each. Returns P(correct) of
    every answer from the same learner's earlier ones, in the same layout: what :func:`trace` gives
    run by run, up to rounding (about 1e-15). The learners are replayed side by side, step k of all
    of them as one set of array operations; the few far longer than the rest go through
    :func:`trace` one by one, which costs less than the steps only they would need. ``progress``
    shows a bar (``desc``) counting the answers replayed.

    >>> from learnloop.tracing import ItemParams, LearnerModel, TopicStructure
    >>> model = LearnerModel(TopicStructure.from_arrays([-1, 0, 0]), ItemParams.from_catalog(
    ...     item_topic=[1, 2], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False, False]))
    >>> items, scores = [0, 0, 1, 1, 0], [1.0, 0.0, 1.0, 0.0, 0.0]
    >>> both = trace_many(model, items, scores, [3, 2])
    >>> bool(np.allclose(both, np.r_[trace(model, items[:3], scores[:3]), trace(model, items[3:], scores[3:])]))
    True
    """
    pos = np.asarray(items, dtype=np.intp).ravel()
    sc = np.asarray(scores, dtype=np.float64).ravel()
    n = np.asarray(lengths, dtype=np.intp).ravel()
    if pos.size != sc.size:
        raise ValueError("items and scores must have the same length")
    if (n < 0).any() or int(n.sum()) != pos.size:
        raise ValueError("lengths must be non-negative and add up to the number of answers")
    out = np.empty(pos.size)
    if pos.size == 0:
        return out
    if pos.min() < 0 or pos.max() >= model.items.n_items:
        raise ValueError(f"item positions must lie in 0..{model.items.n_items - 1}")
    starts = np.cumsum(n) - n
    compiled = _compiled()
    if compiled is not None:
        with tqdm(total=pos.size, disable=not progress, desc=desc, unit="answer") as bar:
            out = _run_compiled(compiled, model, pos, sc, np.full(pos.size, -1, dtype=np.intp), starts, n, practice,
                                model.new_state())  # fmt: skip
            bar.update(pos.size)
        return out
    order = np.argsort(-n, kind="stable")
    order = order[n[order] > 0]
    longest = _loop_count(n[order])
    with tqdm(total=pos.size, disable=not progress, desc=desc, unit="answer") as bar:
        for learner in order[:longest].tolist():
            lo, hi = int(starts[learner]), int(starts[learner] + n[learner])
            out[lo:hi] = trace(model, pos[lo:hi], sc[lo:hi], practice=practice)
            bar.update(hi - lo)
        rest = order[longest:]
        if rest.size:
            tables = ReplayTables(model)
            per_block = max(1, _BLOCK_CELLS // (model.topics.n_topics + 1))
            for at in range(0, rest.size, per_block):
                block = rest[at : at + per_block]
                rows = _time_major(starts[block], n[block])
                out[rows] = replay_block(tables, pos[rows], sc[rows], n[block], practice, bar.update)
    return out


def _loop_count(lengths: np.ndarray) -> int:
    """How many of the longest learners (``lengths`` non-increasing) :func:`trace_many` replays one by
    one: the number that minimises the cost model's total."""
    total = int(lengths.sum())
    looped = np.r_[0, np.cumsum(lengths)]  # answers of the first r learners
    steps = np.r_[lengths, 0]  # the array path's steps once the first r learners are looped
    cost = steps * _STEP_COST + (total - looped) * _ANSWER_COST + looped * _LOOP_COST
    return int(np.argmin(cost))


def _time_major(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Positions of the answers of learners (``lengths`` non-increasing) step by step: step 0 of
    every learner, then step 1 of those with a second answer, ..."""
    rank = np.repeat(np.arange(lengths.size), lengths)
    step = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    flat = np.repeat(starts, lengths) + step
    return flat[np.lexsort((rank, step))]  # type: ignore[no-any-return]


_COMPILED: Any = None


def _compiled() -> Any:
    """The compiled replay (:func:`learnloop.tracing._kernel.runs`), or None without numba (extra ``fast``)."""
    global _COMPILED
    if _COMPILED is None:
        try:
            from ._kernel import runs
        except ImportError:
            _COMPILED = False
        else:
            _COMPILED = runs
    return _COMPILED or None


def _check_range(model: LearnerModel, pos: np.ndarray, topics: np.ndarray) -> None:
    """The compiled loop reads no array out of its bounds: item positions and topics are checked first."""
    if pos.size and (pos.min() < 0 or pos.max() >= model.items.n_items):
        raise ValueError(f"item positions must lie in 0..{model.items.n_items - 1}")
    if topics.size and (topics.min() < -1 or topics.max() >= model.topics.n_topics):
        raise ValueError(f"topic indices must lie in 0..{model.topics.n_topics - 1}")


def _run_compiled(
    compiled: Any,
    model: LearnerModel,
    pos: np.ndarray,
    scores: np.ndarray,
    topics: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    practice: bool,
    start: LearnerState,
) -> FloatArray:
    """P(correct) of each answer of the runs (``starts``, ``lengths``), each run from ``start``."""
    out = np.empty(pos.size)
    if pos.size == 0:
        return out
    chains, chain_len, succ_ptr, succ_idx, gain, fail, nov, settings, _ = model.kernel_tables
    items = model.items
    gating = model._gating_tables
    if gating is None:
        gate = (np.zeros((1, 1), dtype=np.intp), np.zeros(1, dtype=np.intp), np.zeros((1, 1)), np.zeros((1, 1)))
    else:
        gate = (gating.node, np.array([len(r) for r in gating.requires], dtype=np.intp), gating.weight, gating.mean_b)
    compiled(
        pos,
        scores,
        topics,
        starts.astype(np.intp),
        lengths.astype(np.intp),
        np.asarray(items.topic, dtype=np.intp),
        np.asarray(items.b, dtype=np.float64),
        np.asarray(items.a, dtype=np.float64),
        np.ascontiguousarray(start.ability, dtype=np.float64),
        np.ascontiguousarray(start.momentum, dtype=np.float64),
        chains,
        chain_len,
        succ_ptr,
        succ_idx,
        gain,
        fail,
        nov,
        settings,
        *gate,
        float(model._gating),
        bool(practice),
        out,
    )
    return out
