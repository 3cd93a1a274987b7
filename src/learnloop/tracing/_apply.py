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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._types import FloatArray, IntArray
from .ability import update_ability, update_additive
from .forgetting import Memory, as_epoch_seconds
from .state import _ATT, _DIFF, _FRAC, _LAPSE, _LAST, _MEMORY_BLANK, _REV, _SCORE, _SKIP, _STAB, _TIME, _TS, _frozen

if TYPE_CHECKING:
    from .structure import Event

#: the :class:`~learnloop.tracing.LearnerModel` whose settings apply (not imported: it imports this module)
LearnerModel = Any

__all__ = ["Rows", "apply_event", "blank_ability_row", "blank_memory_row", "merged"]


class Rows(dict[int, list[float]]):
    """Rows of a sparse per-node table (``keys`` in increasing order, ``rows`` theirs), each
    read on first use as a list of floats: a node without a row reads ``blank``, node
    ``extra`` reads ``extra_row``. Written rows stay in the dict (see :func:`merged`)."""

    def __init__(
        self, keys: IntArray, rows: FloatArray, blank: Sequence[float], extra: int = -1, extra_row: Sequence[float] = ()
    ) -> None:
        super().__init__()
        self.index = keys
        self.table_rows = rows
        self.blank = tuple(blank)
        self.extra = extra
        self.extra_row = extra_row
        self._key_list: list[int] | None = None

    def key_list(self) -> list[int]:
        """``keys`` as a list."""
        if self._key_list is None:
            self._key_list = self.index.tolist()
        return self._key_list

    def __missing__(self, node: int) -> list[float]:
        if node == self.extra:
            row = list(self.extra_row)
        else:
            keys = self.key_list()
            at = bisect_left(keys, node)
            row = self.table_rows[at].tolist() if at < len(keys) and keys[at] == node else list(self.blank)
        self[node] = row
        return row


def merged(table: Rows, is_blank: Callable[[list[float]], bool]) -> tuple[IntArray, FloatArray]:
    """The (keys, rows) of ``table``'s sparse table with its rows written back: a row that
    ``is_blank`` is dropped, any other kept (read-only arrays; the state's own when unchanged)."""
    nodes = sorted(node for node in table if node != table.extra)
    if not nodes:
        return table.index, table.table_rows
    keys = table.key_list()
    slots: list[int] = []
    written: list[list[float]] = []
    for node in nodes:
        at = bisect_left(keys, node)
        row = table[node]
        if (at < len(keys) and keys[at] == node) == is_blank(row):
            break  # a row to insert or to drop
        if at < len(keys) and keys[at] == node:
            slots.append(at)
            written.append(row)
    else:  # rows replaced in place only (a node read blank and left blank has no row)
        if not slots:
            return table.index, table.table_rows
        rows = table.table_rows.copy()
        for at, row in zip(slots, written, strict=True):
            rows[at] = row
        return table.index, _frozen(rows)
    width = table.table_rows.shape[1]
    current = dict(zip(keys, table.table_rows.tolist(), strict=True))
    for node in nodes:
        row = table[node]
        if is_blank(row):
            current.pop(node, None)
        else:
            current[node] = row
    order = sorted(current)
    return (
        _frozen(np.array(order, dtype=np.intp)),
        _frozen(np.array([current[k] for k in order], dtype=np.float64).reshape(len(order), width)),
    )


def blank_ability_row(blank: list[float]) -> Callable[[list[float]], bool]:
    """Whether an ability row equals ``blank`` (a NaN equals nothing, as in numpy)."""
    b0, b1, b2 = blank
    return lambda row: not (row[0] != b0 or row[1] != b1 or row[2] != b2)


def blank_memory_row(row: list[float]) -> bool:
    """Whether a memory row equals a never-reviewed topic's (NaN where it has NaN)."""
    return all(x == y or (x != x and y != y) for x, y in zip(row, _MEMORY_BLANK, strict=True))


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
    if row[_TS] == ts and sig[i] == signature:
        return False  # exact duplicate of this item's latest event
    row[_TIME] += max(0, int(event.time_spent_ms or 0))
    row[_TS] = ts if math.isnan(row[_TS]) else max(row[_TS], ts)
    sig[i] = signature
    topic = model._item_topic[i] if event.topic is None else event.topic
    score: float | None = None
    if event.kind == "view_theory":
        frac = 1.0 if event.fraction_completed is None else float(event.fraction_completed)
        row[_FRAC] = max(row[_FRAC], frac)
    elif event.kind == "skip":
        row[_SKIP] += 1.0
        score = model.skip_score
    else:
        row[_ATT] += 1.0
        if model._scorable[i]:
            if event.score is None:
                raise ValueError(f"an attempt on scorable item {i} needs a score")
            score = float(event.score)
            row[_SCORE] = score
    if score is not None:
        update_topics(
            model, ability, topic, model._b[i], model._a[i], score, practice=event.practice, momentum=momentum
        )
        _update_memory(model, memory, topic, score, ts)
    return True


def _belief(model: LearnerModel, ability: Rows, node: int) -> tuple[float, float]:
    """Effective (mean, var) of a node: its own, or borrowed from the nearest informed ancestor."""
    row = ability[node]
    overall = ability.extra
    if row[2] > 0.0 or node == overall:
        return row[0], row[1]
    chain = model._chains[node]
    for level, anc in enumerate(chain[1:], start=1):
        row = ability[anc]
        if row[2] > 0.0 or anc == overall:
            return row[0], row[1] + model.topic_var * level
    raise AssertionError("unreachable: the chain ends at the overall node")


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
    novelty = model._nov[topic]
    if novelty and ability[topic][2] <= 0.0:  # the first answer on a topic: still new to the learner
        b = b + novelty
    if model.hierarchy == "additive":
        chain = model._chains[topic]
        nodes = [ability[n] for n in chain]
        means = [row[0] for row in nodes]
        variances = [row[1] for row in nodes]
        fast = model.momentum_var > 0.0 and momentum is not None
        if fast:  # the short-lived component decays toward 0 before each answer
            assert momentum is not None
            means.append(model.momentum_decay * momentum[0])
            variances.append(model.momentum_decay**2 * momentum[1] + model.momentum_var - model.drift)
        update_additive(means, variances, b=b, score=score, a=a, drift=model.drift)
        if fast:
            assert momentum is not None
            momentum[0], momentum[1] = means.pop(), variances.pop()
        for row, m, v in zip(nodes, means, variances, strict=True):
            row[0], row[1], row[2] = m, v, row[2] + 1.0
        if practice:
            g, f = model._gain[topic], model._fail[topic]
            ability[topic][0] += g if f == g else score * g + (1.0 - score) * f
        return
    targets = [(node, model.parent_weight) for node in model._chains[topic][1:]]
    targets.insert(0, (topic, 1.0))
    targets.extend((succ, model.prerequisite_weight) for succ in model._succ[topic])
    # read every prior before writing, so no node sees this answer twice
    priors = [_belief(model, ability, node) for node, _ in targets]
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
        ability[topic][0] += g if f == g else score * g + (1.0 - score) * f


def _update_memory(model: LearnerModel, memory: Rows, topic: int, score: float, ts: float) -> None:
    mem = None
    row = memory[topic]
    if not math.isnan(row[_STAB]):
        mem = Memory(row[_STAB], row[_DIFF], row[_LAST], int(row[_REV]), int(row[_LAPSE]))
    new = model.memory_model.review(mem, score=score, timestamp=ts)
    row[:] = (new.stability, new.difficulty, new.last_review, float(new.reviews), float(new.lapses))
