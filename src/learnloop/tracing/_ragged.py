"""Ragged sequences in a flat time-major layout (the layout of :class:`~learnloop.tracing.bkt.Sequences`)."""

from __future__ import annotations

import numpy as np

from ._types import FloatArray, IntArray


def _steps(lengths: IntArray) -> tuple[IntArray, IntArray]:
    """``(t, j)`` of every answer, sequence-major (sequence 0's steps, then sequence 1's, ...)."""
    total = int(lengths.sum())
    j = np.repeat(np.arange(lengths.size), lengths)
    t = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return t, j


def _time_major(values: np.ndarray, lengths: IntArray) -> tuple[np.ndarray, IntArray]:
    """Sequence-major ``values`` (sequences longest first) laid out time-major: the flat array
    and ``step_ptr`` (step ``t`` holds the values of the first ``n_active[t]`` sequences)."""
    max_len = int(lengths[0]) if lengths.size else 0
    # n_active[t] = number of sequences longer than t
    n_active = np.searchsorted(-lengths, -np.arange(max_len), side="left") if max_len else lengths[:0]
    step_ptr = np.zeros(max_len + 1, dtype=np.intp)
    np.cumsum(n_active, out=step_ptr[1:])
    t, j = _steps(lengths)
    out = np.empty_like(values)
    out[step_ptr[t] + j] = values
    return out, step_ptr


def _answers(flat: FloatArray, step_ptr: IntArray, lengths: IntArray) -> FloatArray:
    """The flat time-major answers back in sequence-major order."""
    t, j = _steps(lengths)
    return flat[step_ptr[t] + j]
