"""Ragged sequences in a flat time-major layout (the layout of :class:`~learnloop.tracing.bkt.Sequences`)."""

from __future__ import annotations

import numpy as np

from ._types import IntArray


def ragged_steps(lengths: IntArray) -> tuple[IntArray, IntArray]:
    """``(t, j)`` of every answer, sequence-major (sequence 0's steps, then sequence 1's, ...)."""
    total = int(lengths.sum())
    j = np.repeat(np.arange(lengths.size), lengths)
    t = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return t, j
