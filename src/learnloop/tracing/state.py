"""The learner state: what one learner's history in one catalog comes to, as read-only arrays."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._types import ArrayLike, FloatArray, IntArray
from .forgetting import Memory

__all__ = ["LearnerState"]

_FORMAT = 1
# columns of the per-item float table
ATT, SKIP, SCORE, FRAC, TIME, TS = range(6)
# columns of the per-topic memory table
STAB, DIFF, LAST, REV, LAPSE = range(5)
#: the row of an item without any event, and of a topic never reviewed
_BLANK = (0.0, 0.0, math.nan, 0.0, 0.0, math.nan)
MEMORY_BLANK = (math.nan, math.nan, math.nan, 0.0, 0.0)


_MEMORY_BLANK_ROW = np.array(MEMORY_BLANK)
_MEMORY_BLANK_NAN = np.isnan(_MEMORY_BLANK_ROW)
_MEMORY_BLANK_ROW.setflags(write=False)
_MEMORY_BLANK_NAN.setflags(write=False)


def _blank_memory(memory: FloatArray) -> np.ndarray:
    """Rows of a memory table equal to a never-reviewed topic's."""
    same = (memory == _MEMORY_BLANK_ROW) | (np.isnan(memory) & _MEMORY_BLANK_NAN)
    return np.asarray(same.all(axis=1))


def frozen_array(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _no_momentum() -> FloatArray:
    return frozen_array(np.zeros(2))


@dataclass(frozen=True, eq=False)
class LearnerState:
    """Immutable learner state (arrays are read-only; updates return new states).

    ``ability``: (T + 1, 3) mean, variance, evidence per topic (row T: overall).
    ``memory``: (T, 5) stability (days, NaN = never reviewed), difficulty, last
    review (epoch s), reviews, lapses. Per item, only the items the learner
    met are held: ``touched`` (k,) their positions in increasing order,
    ``rows`` (k, 6) attempts, skips, last score (NaN), largest theory fraction,
    time spent (ms), last timestamp (epoch s), and ``sig`` (k,) a hash of each
    one's last event; every other item is blank. :attr:`items`,
    :attr:`signature` and the per-item properties give the dense arrays over
    all ``n_items`` positions (made on first use). ``momentum``: (2,) mean and
    variance of the short-lived component of the ability after the last
    answer (zeros unless the model keeps one).
    """

    ability_topics: IntArray
    ability_rows: FloatArray
    ability_blank: FloatArray
    overall_row: FloatArray
    memory_topics: IntArray
    memory_rows: FloatArray
    n_topics: int
    touched: IntArray
    rows: FloatArray
    sig: np.ndarray
    n_items: int
    n_events: int = 0
    momentum: FloatArray = field(default_factory=_no_momentum)
    _dense: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def make(
        cls,
        ability: FloatArray,
        memory: FloatArray,
        touched: IntArray,
        rows: FloatArray,
        sig: np.ndarray,
        *,
        n_items: int,
        n_events: int = 0,
        momentum: FloatArray | None = None,
        ability_blank: FloatArray | None = None,
    ) -> LearnerState:
        """A state from dense per-topic tables and the rows of the items met.

        Only the topics whose rows differ from a blank topic's are kept
        (``ability_blank``: the ability row of a topic without evidence; by
        default the first topic's row when it has no evidence, else N(0, 1)).
        """
        ability = np.asarray(ability, dtype=np.float64)
        memory = np.asarray(memory, dtype=np.float64)
        topics = ability[:-1]
        if ability_blank is None:
            first = topics[0] if topics.shape[0] and topics[0, 2] <= 0.0 else (0.0, 1.0, 0.0)
            ability_blank = frozen_array(np.array(first, dtype=np.float64))
        kept_a = np.flatnonzero((topics != ability_blank).any(axis=1))
        kept_m = np.flatnonzero(~_blank_memory(memory))
        return cls(
            frozen_array(kept_a),
            frozen_array(topics[kept_a]),
            ability_blank,
            frozen_array(ability[-1].copy()),
            frozen_array(kept_m),
            frozen_array(memory[kept_m]),
            int(topics.shape[0]),
            touched,
            rows,
            sig,
            int(n_items),
            int(n_events),
            _no_momentum() if momentum is None else frozen_array(np.array(momentum, dtype=np.float64).reshape(2)),
        )

    @classmethod
    def _made(
        cls,
        ability_topics: IntArray,
        ability_rows: FloatArray,
        ability_blank: FloatArray,
        overall_row: FloatArray,
        memory_topics: IntArray,
        memory_rows: FloatArray,
        n_topics: int,
        touched: IntArray,
        rows: FloatArray,
        sig: np.ndarray,
        n_items: int,
        n_events: int,
        momentum: FloatArray,
    ) -> LearnerState:
        """What the constructor makes of these fields, at a fraction of its cost (a frozen
        dataclass sets each field through ``object.__setattr__``): for an update."""
        made = object.__new__(cls)
        made.__dict__.update(
            ability_topics=ability_topics,
            ability_rows=ability_rows,
            ability_blank=ability_blank,
            overall_row=overall_row,
            memory_topics=memory_topics,
            memory_rows=memory_rows,
            n_topics=n_topics,
            touched=touched,
            rows=rows,
            sig=sig,
            n_items=n_items,
            n_events=n_events,
            momentum=momentum,
            _dense={},
        )
        return made

    @property
    def ability(self) -> FloatArray:
        """The dense (T + 1, 3) ability table (made at each access: keep it in a variable)."""
        return frozen_array(self._ability_table())

    def _ability_table(self) -> FloatArray:
        """:attr:`ability` as a new writable array (for an update to work on)."""
        out = np.empty((self.n_topics + 1, 3))
        out[:-1] = self.ability_blank
        out[self.ability_topics] = self.ability_rows
        out[-1] = self.overall_row
        return out

    @property
    def memory(self) -> FloatArray:
        """The dense (T, 5) memory table (made at each access: keep it in a variable)."""
        return frozen_array(self._memory_table())

    def _memory_table(self) -> FloatArray:
        """:attr:`memory` as a new writable array (for an update to work on)."""
        out = np.empty((self.n_topics, 5))
        out[:] = MEMORY_BLANK
        out[self.memory_topics] = self.memory_rows
        return out

    def compact(self) -> LearnerState:
        """Drop the dense per-item arrays made on demand (before the state is kept for long)."""
        self._dense.clear()
        return self

    @classmethod
    def from_dense(
        cls,
        ability: FloatArray,
        memory: FloatArray,
        items: FloatArray,
        signature: np.ndarray,
        n_events: int = 0,
        momentum: FloatArray | None = None,
    ) -> LearnerState:
        """A state from dense per-item arrays (items met are those with a last timestamp)."""
        items = np.asarray(items, dtype=np.float64)
        touched = np.flatnonzero(~np.isnan(items[:, TS])).astype(np.intp)
        return cls.make(
            ability,
            memory,
            frozen_array(touched),
            frozen_array(items[touched].copy()),
            frozen_array(np.asarray(signature, dtype=np.int64)[touched].copy()),
            n_items=int(items.shape[0]),
            n_events=int(n_events),
            momentum=momentum,
        )

    @property
    def items(self) -> FloatArray:
        """The dense (n, 6) per-item table (blank rows for items not met)."""
        found = self._dense.get("items")
        if found is None:
            found = np.empty((self.n_items, 6))
            found[:] = _BLANK
            found[self.touched] = self.rows
            found = self._dense.setdefault("items", frozen_array(found))
        return found

    @property
    def signature(self) -> np.ndarray:
        """The dense (n,) signature of each item's last event (0: none)."""
        found = self._dense.get("signature")
        if found is None:
            found = np.zeros(self.n_items, dtype=np.int64)
            found[self.touched] = self.sig
            found = self._dense.setdefault("signature", frozen_array(found))
        return found

    def _column(self, name: str, column: int) -> FloatArray:
        found = self._dense.get(name)
        if found is None:
            found = np.full(self.n_items, _BLANK[column])
            found[self.touched] = self.rows[:, column]
            found = self._dense.setdefault(name, frozen_array(found))
        return found

    @property
    def attempts(self) -> FloatArray:
        """Attempts per item position."""
        return self._column("attempts", ATT)

    @property
    def last_score(self) -> FloatArray:
        """Last attempt score per item (NaN: none)."""
        return self._column("last_score", SCORE)

    @property
    def max_fraction(self) -> FloatArray:
        """Largest theory fraction viewed per item."""
        return self._column("max_fraction", FRAC)

    @property
    def time_spent_ms(self) -> FloatArray:
        """Time spent per item in milliseconds."""
        return self._column("time_spent_ms", TIME)

    @property
    def last_timestamp(self) -> FloatArray:
        """Last interaction per item in epoch seconds (NaN: none)."""
        return self._column("last_timestamp", TS)

    @property
    def met_attempts(self) -> FloatArray:
        """Attempts of each item met (aligned with ``touched``)."""
        return self.rows[:, ATT]

    @property
    def met_score(self) -> FloatArray:
        """Last score of each item met (NaN: none)."""
        return self.rows[:, SCORE]

    @property
    def met_fraction(self) -> FloatArray:
        """Largest theory fraction viewed of each item met."""
        return self.rows[:, FRAC]

    @property
    def met_timestamp(self) -> FloatArray:
        """Last interaction with each item met (epoch seconds)."""
        return self.rows[:, TS]

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The state's own arrays (the blank ability row, shared between states, and the
        dense forms made on demand aside)."""
        return (
            self.ability_topics,
            self.ability_rows,
            self.overall_row,
            self.memory_topics,
            self.memory_rows,
            self.touched,
            self.rows,
            self.sig,
            self.momentum,
        )

    @property
    def nbytes(self) -> int:
        """Bytes of the data of :attr:`arrays`."""
        return sum(a.nbytes for a in self.arrays)

    def memory_of(self, topic: int) -> Memory | None:
        """The memory of one topic, or None if never reviewed."""
        at = int(np.searchsorted(self.memory_topics, topic))
        if at >= self.memory_topics.size or self.memory_topics[at] != topic:
            return None
        row = self.memory_rows[at]
        if math.isnan(row[STAB]):
            return None
        return Memory(float(row[STAB]), float(row[DIFF]), float(row[LAST]), int(row[REV]), int(row[LAPSE]))

    # -- serialisation ---------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN written as None)."""

        def enc(a: np.ndarray) -> list[Any]:
            return [[None if math.isnan(v) else v for v in row] for row in a.tolist()]

        return {
            "format": _FORMAT,
            "n_events": self.n_events,
            "ability": enc(self.ability),
            "memory": enc(self.memory),
            "items": enc(self.items),
            "signature": self.signature.tolist(),
            "momentum": self.momentum.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LearnerState:
        """Inverse of :meth:`to_dict`."""
        if data.get("format") != _FORMAT:
            raise ValueError(f"unknown learner state format {data.get('format')!r}")

        def dec(rows: list[list[float | None]], width: int) -> FloatArray:
            arr = np.array([[math.nan if v is None else v for v in row] for row in rows], dtype=np.float64)
            return arr.reshape(-1, width)

        return cls.from_dense(
            dec(data["ability"], 3),
            dec(data["memory"], 5),
            dec(data["items"], 6),
            np.array(data["signature"], dtype=np.int64),
            int(data["n_events"]),
            np.array(data.get("momentum", [0.0, 0.0]), dtype=np.float64),
        )

    def to_bytes(self) -> bytes:
        """A compact exact binary form (numpy ``.npz``, no pickle)."""
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            format=np.array(_FORMAT),
            n_events=np.array(self.n_events),
            ability=self.ability,
            memory=self.memory,
            items=self.items,
            signature=self.signature,
            momentum=self.momentum,
        )
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> LearnerState:
        """Inverse of :meth:`to_bytes`."""
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            if int(z["format"]) != _FORMAT:
                raise ValueError(f"unknown learner state format {int(z['format'])}")
            return cls.from_dense(
                z["ability"],
                z["memory"],
                z["items"],
                z["signature"],
                int(z["n_events"]),
                z["momentum"] if "momentum" in z.files else None,
            )

    def remap(self, *, item_map: ArrayLike, n_items: int, topic_map: ArrayLike, n_topics: int) -> LearnerState:
        """Carry the state over to a changed catalog.

        ``item_map[old] = new`` position (-1: removed) and likewise ``topic_map``;
        new items and topics start empty.
        """
        im = np.asarray(item_map, dtype=np.intp)
        tm = np.asarray(topic_map, dtype=np.intp)
        ability, memory = self.ability, self.memory
        new_ability = np.empty((n_topics + 1, 3))
        new_ability[:-1] = self.ability_blank
        new_memory = np.empty((n_topics, 5))
        new_memory[:] = MEMORY_BLANK
        new = im[self.touched]
        keep = np.flatnonzero(new >= 0)
        order = keep[np.argsort(new[keep], kind="stable")]
        keep_t = tm >= 0
        new_memory[tm[keep_t]] = memory[keep_t]
        new_ability[tm[keep_t]] = ability[:-1][keep_t]
        new_ability[-1] = ability[-1]
        return LearnerState.make(
            new_ability,
            new_memory,
            frozen_array(new[order].astype(np.intp)),
            frozen_array(self.rows[order].copy()),
            frozen_array(self.sig[order].copy()),
            n_items=int(n_items),
            n_events=self.n_events,
            momentum=self.momentum,
            ability_blank=self.ability_blank,
        )


def empty_state(n_topics: int, n_items: int, prior_var: float = 1.0, topic_var: float | None = None) -> LearnerState:
    """The state without any event; a topic's ability row is N(0, ``topic_var``) when given
    (the additive hierarchy's deviations), else N(0, ``prior_var``) like the overall node."""
    blank = frozen_array(np.array([0.0, prior_var if topic_var is None else topic_var, 0.0]))
    ability = np.zeros((n_topics + 1, 3))
    ability[:-1] = blank
    ability[-1, 1] = prior_var
    memory = np.empty((n_topics, 5))
    memory[:] = MEMORY_BLANK
    return LearnerState.make(
        ability,
        memory,
        frozen_array(np.zeros(0, dtype=np.intp)),
        frozen_array(np.zeros((0, 6))),
        frozen_array(np.zeros(0, dtype=np.int64)),
        n_items=int(n_items),
        ability_blank=blank,
    )


def with_blank_rows(
    state: LearnerState, positions: list[int]
) -> tuple[IntArray, FloatArray, np.ndarray, dict[int, int]]:
    """Writable copies of the state's per-item rows with blank rows for the ``positions``
    not met yet, and the row of each position."""
    touched, rows, sig = state.touched, state.rows, state.sig
    if len(positions) == 1:  # one event: one binary search
        position = int(positions[0])
        slot = int(touched.searchsorted(position))
        if slot < touched.size and touched[slot] == position:
            return touched, rows.copy(), sig.copy(), {position: slot}
        k = touched.size
        new_touched = np.empty(k + 1, dtype=np.intp)
        new_rows = np.empty((k + 1, 6))
        new_sig = np.empty(k + 1, dtype=np.int64)
        for new, old, blank in ((new_touched, touched, position), (new_rows, rows, _BLANK), (new_sig, sig, 0)):
            new[:slot] = old[:slot]
            new[slot] = blank
            new[slot + 1 :] = old[slot:]
        return new_touched, new_rows, new_sig, {position: slot}
    wanted = np.unique(np.asarray(positions, dtype=np.intp))
    if touched.size:
        at = np.minimum(np.searchsorted(touched, wanted), touched.size - 1)
        missing = wanted[touched[at] != wanted]
    else:
        missing = wanted
    if missing.size:
        at = np.searchsorted(touched, missing)
        touched = np.insert(touched, at, missing)
        rows = np.insert(rows, at, _BLANK, axis=0)
        sig = np.insert(sig, at, 0)
    else:
        rows, sig = rows.copy(), sig.copy()
    return touched, rows, sig, dict(zip(wanted.tolist(), np.searchsorted(touched, wanted).tolist(), strict=True))
