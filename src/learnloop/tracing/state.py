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
_ATT, _SKIP, _SCORE, _FRAC, _TIME, _TS = range(6)
# columns of the per-topic memory table
_STAB, _DIFF, _LAST, _REV, _LAPSE = range(5)
#: the row of an item without any event
_BLANK = (0.0, 0.0, math.nan, 0.0, 0.0, math.nan)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _no_momentum() -> FloatArray:
    return _frozen(np.zeros(2))


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

    ability: FloatArray
    memory: FloatArray
    touched: IntArray
    rows: FloatArray
    sig: np.ndarray
    n_items: int
    n_events: int = 0
    momentum: FloatArray = field(default_factory=_no_momentum)
    _dense: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)

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
        touched = np.flatnonzero(~np.isnan(items[:, _TS])).astype(np.intp)
        return cls(
            _frozen(np.array(ability, dtype=np.float64)),
            _frozen(np.array(memory, dtype=np.float64)),
            _frozen(touched),
            _frozen(items[touched].copy()),
            _frozen(np.asarray(signature, dtype=np.int64)[touched].copy()),
            int(items.shape[0]),
            int(n_events),
            _no_momentum() if momentum is None else _frozen(np.array(momentum, dtype=np.float64).reshape(2)),
        )

    @property
    def items(self) -> FloatArray:
        """The dense (n, 6) per-item table (blank rows for items not met)."""
        found = self._dense.get("items")
        if found is None:
            found = np.empty((self.n_items, 6))
            found[:] = _BLANK
            found[self.touched] = self.rows
            found = self._dense.setdefault("items", _frozen(found))
        return found

    @property
    def signature(self) -> np.ndarray:
        """The dense (n,) signature of each item's last event (0: none)."""
        found = self._dense.get("signature")
        if found is None:
            found = np.zeros(self.n_items, dtype=np.int64)
            found[self.touched] = self.sig
            found = self._dense.setdefault("signature", _frozen(found))
        return found

    def _column(self, name: str, column: int) -> FloatArray:
        found = self._dense.get(name)
        if found is None:
            found = np.full(self.n_items, _BLANK[column])
            found[self.touched] = self.rows[:, column]
            found = self._dense.setdefault(name, _frozen(found))
        return found

    @property
    def attempts(self) -> FloatArray:
        """Attempts per item position."""
        return self._column("attempts", _ATT)

    @property
    def last_score(self) -> FloatArray:
        """Last attempt score per item (NaN: none)."""
        return self._column("last_score", _SCORE)

    @property
    def max_fraction(self) -> FloatArray:
        """Largest theory fraction viewed per item."""
        return self._column("max_fraction", _FRAC)

    @property
    def time_spent_ms(self) -> FloatArray:
        """Time spent per item in milliseconds."""
        return self._column("time_spent_ms", _TIME)

    @property
    def last_timestamp(self) -> FloatArray:
        """Last interaction per item in epoch seconds (NaN: none)."""
        return self._column("last_timestamp", _TS)

    @property
    def met_attempts(self) -> FloatArray:
        """Attempts of each item met (aligned with ``touched``)."""
        return self.rows[:, _ATT]

    @property
    def met_score(self) -> FloatArray:
        """Last score of each item met (NaN: none)."""
        return self.rows[:, _SCORE]

    @property
    def met_fraction(self) -> FloatArray:
        """Largest theory fraction viewed of each item met."""
        return self.rows[:, _FRAC]

    @property
    def met_timestamp(self) -> FloatArray:
        """Last interaction with each item met (epoch seconds)."""
        return self.rows[:, _TS]

    @property
    def nbytes(self) -> int:
        """Bytes of the state's own arrays (the dense forms made on demand aside)."""
        return sum(a.nbytes for a in (self.ability, self.memory, self.touched, self.rows, self.sig, self.momentum))

    def memory_of(self, topic: int) -> Memory | None:
        """The memory of one topic, or None if never reviewed."""
        row = self.memory[topic]
        if math.isnan(row[_STAB]):
            return None
        return Memory(float(row[_STAB]), float(row[_DIFF]), float(row[_LAST]), int(row[_REV]), int(row[_LAPSE]))

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
        fresh = _empty(n_topics, n_items)
        ability, memory = np.array(fresh.ability), np.array(fresh.memory)
        new = im[self.touched]
        keep = np.flatnonzero(new >= 0)
        order = keep[np.argsort(new[keep], kind="stable")]
        keep_t = tm >= 0
        memory[tm[keep_t]] = self.memory[keep_t]
        ability[tm[keep_t]] = self.ability[:-1][keep_t]
        ability[-1] = self.ability[-1]
        return LearnerState(
            _frozen(ability),
            _frozen(memory),
            _frozen(new[order].astype(np.intp)),
            _frozen(self.rows[order].copy()),
            _frozen(self.sig[order].copy()),
            int(n_items),
            self.n_events,
            self.momentum,
        )


def _empty(n_topics: int, n_items: int, prior_var: float = 1.0) -> LearnerState:
    ability = np.zeros((n_topics + 1, 3))
    ability[:, 1] = prior_var
    memory = np.full((n_topics, 5), math.nan)
    memory[:, _REV:] = 0.0
    return LearnerState(
        _frozen(ability),
        _frozen(memory),
        _frozen(np.zeros(0, dtype=np.intp)),
        _frozen(np.zeros((0, 6))),
        _frozen(np.zeros(0, dtype=np.int64)),
        int(n_items),
    )


def _with_rows(state: LearnerState, positions: list[int]) -> tuple[IntArray, FloatArray, np.ndarray, dict[int, int]]:
    """Writable copies of the state's per-item rows with blank rows for the ``positions``
    not met yet, and the row of each position."""
    touched, rows, sig = state.touched, state.rows, state.sig
    if len(positions) == 1:  # one event: one binary search
        position = int(positions[0])
        slot = int(np.searchsorted(touched, position))
        if slot < touched.size and touched[slot] == position:
            return touched, rows.copy(), sig.copy(), {position: slot}
        return (
            np.insert(touched, slot, position),
            np.insert(rows, slot, _BLANK, axis=0),
            np.insert(sig, slot, 0),
            {position: slot},
        )
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
