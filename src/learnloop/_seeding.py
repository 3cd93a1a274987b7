"""The engine's random streams: ``np.random.default_rng`` of a few integers, made quickly.

A step's generator is a function of the engine's seed and the learner's
position (see :meth:`Sessions._session_rng <learnloop._sessions.Sessions>`);
making it is a fixed cost of every step, so :func:`seeded_rng` builds exactly
the generator ``default_rng`` builds, at a fraction of the cost.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISpawnableSeedSequence

__all__ = ["learner_key", "seeded_rng"]


@functools.lru_cache(maxsize=4096)
def learner_key(app: str, user_id: str, catalog_id: str) -> int:
    """A stable 64-bit number of a learner, for seeding (the same in every process)."""
    return int.from_bytes(hashlib.sha256(f"{app}\x1f{user_id}\x1f{catalog_id}".encode()).digest()[:8], "big")


_WORD = 0xFFFFFFFF


def _state_hashes() -> list[tuple[int, int]]:
    """Per word of ``SeedSequence.generate_state(4, np.uint64)``: the constants its pool word is
    hashed with (numpy's ``INIT_B`` and ``MULT_B``: the hash before and after each multiplication)."""
    hashes, value = [], 0x8B51F9DD
    for _ in range(8):
        after = value * 0x58F38DED & _WORD
        hashes.append((value, after))
        value = after
    return hashes


_HASHES = _state_hashes()
#: the 64-bit words of the state are pairs of 32-bit words, least significant first, on this byte order
_LITTLE = sys.byteorder == "little"


class _Seeded(ISpawnableSeedSequence):
    """A :class:`numpy.random.SeedSequence` whose first ``generate_state(4, np.uint64)`` (what
    :class:`numpy.random.PCG64` asks for when seeded) was computed ahead; anything else,
    attributes too, is asked of the sequence itself."""

    __slots__ = ("_seq", "_state")

    def __init__(self, seq: np.random.SeedSequence, state: np.ndarray) -> None:
        self._seq = seq
        self._state: np.ndarray | None = state

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        state, self._state = self._state, None
        if state is not None and n_words == 4 and dtype is np.uint64:
            return state
        return self._seq.generate_state(n_words, dtype)

    def spawn(self, n_children: int) -> list[Any]:  # seed sequences of numpy's own
        return self._seq.spawn(n_children)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._seq, name)


def seeded_rng(*values: int) -> np.random.Generator:
    """``np.random.default_rng(values)``: the same generator, made at a fraction of the cost.

    The seed sequence is given its entropy as the 32-bit words ``default_rng``
    splits the values into (each value least significant word first, 0 as one
    word), so that it skips the conversion of a tuple of Python integers, and
    the PCG64 state is hashed from its pool here as ``generate_state`` hashes it
    (a short loop on Python integers instead of numpy scalars). Any value that
    is not a non-negative ``int`` takes the ordinary path.
    """
    words: list[int] = []
    for value in values:
        if value.__class__ is not int or value < 0:
            return np.random.default_rng(values)
        words.append(value & _WORD)
        value >>= 32
        while value:
            words.append(value & _WORD)
            value >>= 32
    seq = np.random.SeedSequence(np.array(words, dtype=np.uint32))
    if not _LITTLE:
        return np.random.Generator(np.random.PCG64(seq))
    pool = seq.pool.tolist()
    hashed = [(pool[at & 3] ^ before) * after & _WORD for at, (before, after) in enumerate(_HASHES)]
    w = [word ^ word >> 16 for word in hashed]
    state = np.array([w[0] | w[1] << 32, w[2] | w[3] << 32, w[4] | w[5] << 32, w[6] | w[7] << 32], dtype=np.uint64)
    return np.random.Generator(np.random.PCG64(_Seeded(seq, state)))
