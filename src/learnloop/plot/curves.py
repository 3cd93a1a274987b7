"""Learning curves: a mean over learners per interaction (or per practice opportunity).

:func:`by_opportunity` turns an event log into one row per sequence (learner
and skill) and one column per opportunity, the layout :func:`learning_curves`
plots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from learnloop.plot._mpl import axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["by_opportunity", "learning_curves", "padded"]

Rows = npt.ArrayLike | Sequence[Sequence[float | None]]


def padded(rows: Rows) -> npt.NDArray[np.float64]:
    """A 2-D float array from rows of unequal length, padded with NaN (``None`` is NaN too).

    >>> padded([[1.0, 0.5], [0.0]]).tolist()
    [[1.0, 0.5], [0.0, nan]]
    """
    if isinstance(rows, np.ndarray) and rows.ndim == 2:
        return rows.astype(np.float64)
    seqs = [np.asarray([np.nan if v is None else v for v in row], dtype=np.float64) for row in rows]  # type: ignore[union-attr]
    width = max((s.size for s in seqs), default=0)
    out = np.full((len(seqs), width), np.nan)
    for i, s in enumerate(seqs):
        out[i, : s.size] = s
    return out


def by_opportunity(groups: npt.ArrayLike, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Rows of ``values`` per group, in the order given: row g, column k is group g's k-th value.

    ``groups`` labels each value's sequence (e.g. a student-skill code); the
    rows come in order of first appearance.

    >>> by_opportunity([7, 7, 3, 7], [1, 0, 1, 1]).tolist()
    [[1.0, 0.0, 1.0], [1.0, nan, nan]]
    """
    g = np.asarray(groups).ravel()
    v = np.asarray(values, dtype=np.float64).ravel()
    if g.size != v.size:
        raise ValueError(f"groups and values differ in length: {g.size} != {v.size}")
    if g.size == 0:
        return np.empty((0, 0))
    _, first, codes = np.unique(g, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))  # code -> row in order of first appearance
    rows = rank[codes]
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    starts = np.searchsorted(sorted_rows, sorted_rows, side="left")
    column = np.empty(g.size, dtype=np.intp)
    column[order] = np.arange(g.size) - starts
    out = np.full((int(rows.max()) + 1, int(column.max()) + 1), np.nan)
    out[rows, column] = v
    return out


def learning_curves(
    curves: Mapping[str, Rows] | Rows,
    *,
    ax: Axes | None = None,
    band: bool = True,
    min_count: int = 1,
    xlabel: str = "interaction",
    ylabel: str = "proficiency",
    title: str | None = None,
) -> Axes:
    """Plot the mean of each curve set per step, with a 95 % band for the mean.

    ``curves`` maps a label to rows (one per learner; unequal lengths are
    padded), or is one set of rows. A step enters the mean with at least
    ``min_count`` learners. Returns the axes (one line per label, in order).

    >>> from matplotlib.figure import Figure
    >>> ax = learning_curves({"learn": [[0.25, 0.5, 0.75], [0.75, 0.5]]}, ax=Figure().subplots())
    >>> ax.lines[0].get_ydata().tolist(), ax.get_legend().get_texts()[0].get_text()
    ([0.5, 0.5, 0.75], 'learn')
    """
    ax = axes(ax, figsize=(7.0, 4.0))
    named = dict(curves) if isinstance(curves, Mapping) else {None: curves}
    for label, rows in named.items():
        data = padded(rows)
        count = np.sum(~np.isnan(data), axis=0)
        keep = count >= max(1, min_count)
        steps = np.flatnonzero(keep)
        kept, n = data[:, keep], count[keep]
        mean = np.nansum(kept, axis=0) / np.maximum(n, 1)
        (line,) = ax.plot(steps, mean, label=label)
        if band and steps.size:
            squares = np.nansum((kept - mean) ** 2, axis=0)
            sd = np.sqrt(np.where(n > 1, squares / np.maximum(n - 1, 1), 0.0))
            half = 1.96 * sd / np.sqrt(n)
            ax.fill_between(steps, mean - half, mean + half, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    if any(label is not None for label in named):
        ax.legend()
    return ax
