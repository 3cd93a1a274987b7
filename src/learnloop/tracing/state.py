"""The learner state: what one learner's history in one catalog comes to, as read-only arrays."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._types import ArrayLike, FloatArray
from .forgetting import Memory

__all__ = ["LearnerState"]

_FORMAT = 1
# columns of the per-item float table
_ATT, _SKIP, _SCORE, _FRAC, _TIME, _TS = range(6)
# columns of the per-topic memory table
_STAB, _DIFF, _LAST, _REV, _LAPSE = range(5)


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
    review (epoch s), reviews, lapses. ``items``: (n, 6) attempts, skips, last
    score (NaN), largest theory fraction, time spent (ms), last timestamp
    (epoch s, NaN). ``signature``: (n,) hash of each item's last event.
    ``momentum``: (2,) mean and variance of the short-lived component of the
    ability after the last answer (zeros unless the model keeps one).
    """

    ability: FloatArray
    memory: FloatArray
    items: FloatArray
    signature: np.ndarray
    n_events: int = 0
    momentum: FloatArray = field(default_factory=_no_momentum)

    @property
    def attempts(self) -> FloatArray:
        """Attempts per item position."""
        return self.items[:, _ATT]

    @property
    def last_score(self) -> FloatArray:
        """Last attempt score per item (NaN: none)."""
        return self.items[:, _SCORE]

    @property
    def max_fraction(self) -> FloatArray:
        """Largest theory fraction viewed per item."""
        return self.items[:, _FRAC]

    @property
    def time_spent_ms(self) -> FloatArray:
        """Time spent per item in milliseconds."""
        return self.items[:, _TIME]

    @property
    def last_timestamp(self) -> FloatArray:
        """Last interaction per item in epoch seconds (NaN: none)."""
        return self.items[:, _TS]

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
            return _frozen(arr.reshape(-1, width))

        return cls(
            ability=dec(data["ability"], 3),
            memory=dec(data["memory"], 5),
            items=dec(data["items"], 6),
            signature=_frozen(np.array(data["signature"], dtype=np.int64)),
            n_events=int(data["n_events"]),
            momentum=_frozen(np.array(data.get("momentum", [0.0, 0.0]), dtype=np.float64).reshape(2)),
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
            return cls(
                ability=_frozen(z["ability"].copy()),
                memory=_frozen(z["memory"].copy()),
                items=_frozen(z["items"].copy()),
                signature=_frozen(z["signature"].copy()),
                n_events=int(z["n_events"]),
                momentum=_frozen(z["momentum"].copy()) if "momentum" in z.files else _no_momentum(),
            )

    def remap(self, *, item_map: ArrayLike, n_items: int, topic_map: ArrayLike, n_topics: int) -> LearnerState:
        """Carry the state over to a changed catalog.

        ``item_map[old] = new`` position (-1: removed) and likewise ``topic_map``;
        new items and topics start empty.
        """
        im = np.asarray(item_map, dtype=np.intp)
        tm = np.asarray(topic_map, dtype=np.intp)
        fresh = _empty(n_topics, n_items)
        ability, memory, items, sig = (np.array(x) for x in (fresh.ability, fresh.memory, fresh.items, fresh.signature))
        keep_i = im >= 0
        items[im[keep_i]] = self.items[keep_i]
        sig[im[keep_i]] = self.signature[keep_i]
        keep_t = tm >= 0
        memory[tm[keep_t]] = self.memory[keep_t]
        ability[tm[keep_t]] = self.ability[:-1][keep_t]
        ability[-1] = self.ability[-1]
        return LearnerState(
            _frozen(ability), _frozen(memory), _frozen(items), _frozen(sig), self.n_events, self.momentum
        )


def _empty(n_topics: int, n_items: int, prior_var: float = 1.0) -> LearnerState:
    ability = np.zeros((n_topics + 1, 3))
    ability[:, 1] = prior_var
    memory = np.full((n_topics, 5), math.nan)
    memory[:, _REV:] = 0.0
    items = np.zeros((n_items, 6))
    items[:, _SCORE] = math.nan
    items[:, _TS] = math.nan
    return LearnerState(_frozen(ability), _frozen(memory), _frozen(items), _frozen(np.zeros(n_items, dtype=np.int64)))
