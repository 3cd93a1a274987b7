"""Events applied to a learner state: only the rows they read and write, as lists of floats.

An update reads the ability rows of an answer's topic, its ancestors, the
overall node and the topics it is a prerequisite of, one memory row and the
rows of the items the events name; :class:`Rows` reads each from the state on
first use, and :func:`merged` writes the rows back into new copies of the
state's sparse tables, keeping (as :meth:`LearnerState.make` does) the rows
that differ from a blank row. Every figure is the same double as the dense
computation's: the arithmetic is the same, on Python floats instead of numpy
scalars.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._gating import readiness
from ._types import FloatArray, IntArray
from .ability import update_ability, update_additive
from .forgetting import as_epoch_seconds
from .state import ATT, DIFF, FRAC, LAPSE, LAST, REV, SCORE, SKIP, STAB, TIME, TS, frozen_array

if TYPE_CHECKING:
    from .structure import Event

#: the :class:`~learnloop.tracing.LearnerModel` whose settings apply (not imported: it imports this module)
LearnerModel = Any

__all__ = ["Rows", "apply_event", "merged"]


class Rows(dict[int, list[float]]):
    """Rows of a sparse per-node table (``keys`` in increasing order, ``rows`` theirs), each
    read as a list of floats on first use (:meth:`load`): a node without a row reads
    ``blank``, node ``extra`` reads ``extra_row``. Written rows stay in the dict (see
    :func:`merged`); ``nan_equal``: a NaN in a row equals a NaN in ``blank``."""

    def __init__(
        self,
        keys: IntArray,
        rows: FloatArray,
        blank: Sequence[float],
        extra: int = -1,
        extra_row: Sequence[float] = (),
        *,
        nan_equal: bool = False,
    ) -> None:
        self.index = keys
        self.table_rows = rows
        self.blank = tuple(blank)
        self.extra = extra
        self.extra_row = extra_row
        self.nan_equal = nan_equal
        self.key_list: list[int] | None = None
        self.slots: dict[int, int] = {}  # the row of each node read that has one

    def load(self, nodes: Iterable[int]) -> None:
        """Read the rows of ``nodes`` not read yet."""
        keys = self.key_list
        if keys is None:
            keys = self.key_list = self.index.tolist()
        n = len(keys)
        rows = self.table_rows
        for node in nodes:
            if node in self:
                continue
            if node == self.extra:
                self[node] = [*self.extra_row]
                continue
            at = bisect_left(keys, node)
            if at < n and keys[at] == node:
                self.slots[node] = at
                self[node] = rows[at].tolist()
            else:
                self[node] = [*self.blank]

    def __missing__(self, node: int) -> list[float]:
        self.load((node,))
        return self[node]


def merged(table: Rows) -> tuple[IntArray, FloatArray]:
    """The (keys, rows) of ``table``'s sparse table with its rows written back: a row equal
    to the blank row is dropped, any other kept (read-only arrays; the state's own when unchanged)."""
    slots = table.slots
    blank = table.blank
    nan_equal = table.nan_equal
    replaced = True  # only rows the table has change (no row to insert or to drop)
    for node, row in table.items():
        if node == table.extra:
            continue
        same = True
        for x, y in zip(row, blank):  # (numpy's ``==``, NaN equal to NaN when ``nan_equal``)
            if x != y and not (nan_equal and x != x and y != y):
                same = False
                break
        if (node in slots) == same:  # a row left blank, or a new one
            replaced = False
            break
    if replaced:
        if not slots:
            return table.index, table.table_rows
        rows = table.table_rows.copy()
        for node, at in slots.items():
            rows[at] = table[node]
        rows.flags.writeable = False
        return table.index, rows
    keys = table.key_list if table.key_list is not None else table.index.tolist()
    current = dict(zip(keys, table.table_rows.tolist(), strict=True))
    for node, row in table.items():
        if node == table.extra:
            continue
        for x, y in zip(row, blank):
            if x != y and not (nan_equal and x != x and y != y):
                current[node] = row
                break
        else:
            current.pop(node, None)
    order = sorted(current)
    width = table.table_rows.shape[1]
    return (
        frozen_array(np.array(order, dtype=np.intp)),
        frozen_array(np.array([current[k] for k in order], dtype=np.float64).reshape(len(order), width)),
    )


def apply_event(
    model: LearnerModel,
    ability: Rows,
    memory: Rows,
    rows: dict[int, list[float]],
    sig: dict[int, int],
    event: Event,
    momentum: list[float],
) -> bool:
    """Apply one event to the rows (in place); False when it is an exact duplicate of its item's latest."""
    problems = model._validate(event)
    if problems:
        raise ValueError("; ".join(problems))
    i = int(event.item)
    ts = as_epoch_seconds(event.timestamp)
    signature = model.signature(event)
    row = rows[i]
    if row[TS] == ts and sig[i] == signature:
        return False  # exact duplicate of this item's latest event
    row[TIME] += max(0, int(event.time_spent_ms or 0))
    row[TS] = ts if math.isnan(row[TS]) else max(row[TS], ts)
    sig[i] = signature
    topic = model._item_topic[i] if event.topic is None else event.topic
    score: float | None = None
    if event.kind == "view_theory":
        frac = 1.0 if event.fraction_completed is None else float(event.fraction_completed)
        row[FRAC] = max(row[FRAC], frac)
    elif event.kind == "skip":
        row[SKIP] += 1.0
        score = model.skip_score
    else:
        row[ATT] += 1.0
        if model._scorable[i]:
            if event.score is None:
                raise ValueError(f"an attempt on scorable item {i} needs a score")
            score = float(event.score)
            row[SCORE] = score
    if score is not None:
        update_topics(
            model, ability, topic, model._b[i], model._a[i], score, practice=event.practice, momentum=momentum
        )
        _update_memory(model, memory, topic, score, ts)
    return True


def _plan(model: LearnerModel, topic: int) -> tuple[list[int], list[tuple[int, float]]]:
    """The nodes an answer on ``topic`` reads, and the (node, weight) it updates in the nested
    hierarchy: the topic, its ancestors and the overall node, the topics it is a prerequisite of."""
    found: tuple[list[int], list[tuple[int, float]]] | None = model._plans.get(topic)
    if found is None:
        chains = model._chains
        targets = [(topic, 1.0)]
        targets += [(node, model.parent_weight) for node in chains[topic][1:]]
        targets += [(succ, model.prerequisite_weight) for succ in model._succ[topic]]
        reads = dict.fromkeys(chains[topic])
        if model.hierarchy != "additive":  # a prior may be borrowed from any node up a target's chain
            for node, _ in targets:
                if node < len(chains):  # (the overall node has its own belief)
                    reads.update(dict.fromkeys(chains[node]))
        if model._gating_tables is not None:  # the gating reads the beliefs of the topic's requirements
            for node in model._gating_tables.requires[topic]:
                reads.update(dict.fromkeys(chains[node]))
        found = model._plans[topic] = (list(reads), targets)
    return found


def update_topics(
    model: LearnerModel,
    ability: Rows,
    topic: int,
    b: float,
    a: float,
    score: float,
    *,
    practice: bool = True,
    momentum: list[float] | None = None,
) -> None:
    """One answer's update of the ability rows (see :class:`~learnloop.tracing.LearnerModel`)."""
    reads, targets = _plan(model, topic)
    ability.load(reads)
    novelty = model._nov[topic]
    if novelty and ability[topic][2] <= 0.0:  # the first answer on a topic: still new to the learner
        b = b + novelty
    if model.hierarchy == "additive":
        nodes = [ability[n] for n in model._chains[topic]]
        means = [row[0] for row in nodes]
        variances = [row[1] for row in nodes]
        fast = model.momentum_var > 0.0 and momentum is not None
        if fast:  # the short-lived component decays toward 0 before each answer
            assert momentum is not None
            means.append(model.momentum_decay * momentum[0])
            variances.append(model.momentum_decay**2 * momentum[1] + model.momentum_var - model.drift)
        ready = _readiness(model, ability, topic) if practice and model._gating_tables is not None else 1.0
        update_additive(means, variances, b=b, score=score, a=a, drift=model.drift)
        if fast:
            assert momentum is not None
            momentum[0], momentum[1] = means.pop(), variances.pop()
        for row, m, v in zip(nodes, means, variances, strict=True):
            row[0], row[1], row[2] = m, v, row[2] + 1.0
        if practice:
            g, f = model._gain[topic], model._fail[topic]
            ability[topic][0] += (g if f == g else score * g + (1.0 - score) * f) * ready
        return
    # every prior is read before any is written, so no node sees this answer twice: a node
    # without evidence borrows the belief of its nearest informed ancestor, widened per level
    overall = ability.extra
    topic_var = model.topic_var
    chains = model._chains
    priors = [(0.0, 0.0)] * len(targets)
    for k, (node, _) in enumerate(targets):
        row = ability[node]
        if row[2] > 0.0 or node == overall:
            priors[k] = (row[0], row[1])
            continue
        chain = chains[node]
        for level in range(1, len(chain)):
            row = ability[chain[level]]
            if row[2] > 0.0 or chain[level] == overall:
                priors[k] = (row[0], row[1] + topic_var * level)
                break
        else:
            raise AssertionError("unreachable: the chain ends at the overall node")
    ready = _readiness(model, ability, topic) if practice and model._gating_tables is not None else 1.0
    drift = model.drift
    for (node, weight), (m, v) in zip(targets, priors, strict=True):
        if weight <= 0.0:
            continue
        m2, v2 = update_ability(m, v, b=b, score=score, a=a, weight=weight, drift=drift)
        row = ability[node]
        row[0] = m2
        row[1] = v2
        row[2] += weight
    if practice:
        g, f = model._gain[topic], model._fail[topic]
        ability[topic][0] += (g if f == g else score * g + (1.0 - score) * f) * ready


def _readiness(model: LearnerModel, ability: Rows, topic: int) -> float:
    """The share of an answer's practice gain that reaches ``topic`` (:mod:`learnloop.tracing._gating`),
    from the beliefs of its requirements before the answer."""
    tables = model._gating_tables
    required = tables.requires[topic]
    if not required:
        return 1.0
    chains = model._chains
    overall = ability.extra
    means = []
    for node in required:
        if model.hierarchy == "additive":  # the ability on a topic is the sum along its chain
            means.append(sum(ability[n][0] for n in chains[node]))
            continue
        for n in chains[node]:  # the node's own belief, else its nearest informed ancestor's
            if ability[n][2] > 0.0 or n == overall:
                means.append(ability[n][0])
                break
    k = len(required)
    margins = np.asarray(means) - tables.mean_b[topic, :k]
    return float(readiness(model._gating, margins, tables.weight[topic, :k]))


def _update_memory(model: LearnerModel, memory: Rows, topic: int, score: float, ts: float) -> None:
    row = memory[topic]
    if math.isnan(row[STAB]):
        s, d, last, reviews, lapses = model.memory_model.first_review(score, ts)
    else:
        s, d, last, reviews, lapses = model.memory_model.next_review(
            row[STAB], row[DIFF], row[LAST], int(row[REV]), int(row[LAPSE]), score, ts
        )
    row[:] = (s, d, last, float(reviews), float(lapses))
