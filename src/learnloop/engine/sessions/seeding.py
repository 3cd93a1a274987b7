"""The engine's random streams: ``np.random.default_rng`` of a few integers, made quickly.

A step's generator is a function of the engine's seed and the learner's
position (see :meth:`Sessions._session_rng <learnloop.engine.sessions.sessions.Sessions>`);
making it is a fixed cost of every step, so :func:`seeded_rng` builds exactly
the generator ``default_rng`` builds, in about half the time.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

__all__ = ["learner_key", "seeded_rng"]


@functools.lru_cache(maxsize=4096)
def learner_key(app: str, user_id: str, catalog_id: str) -> int:
    """A stable 64-bit number of a learner, for seeding (the same in every process)."""
    return int.from_bytes(hashlib.sha256(f"{app}\x1f{user_id}\x1f{catalog_id}".encode()).digest()[:8], "big")


_WORD = 0xFFFFFFFF


def seeded_rng(*values: int) -> np.random.Generator:
    """``np.random.default_rng(values)``: the same generator, made in about half the time.

    The seed sequence is given its entropy as the 32-bit words ``default_rng``
    splits the values into (each value least significant word first, 0 as one
    word), so that it skips the conversion of a tuple of Python integers; any
    value that is not a non-negative ``int`` takes the ordinary path.
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
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(np.array(words, dtype=np.uint32))))
