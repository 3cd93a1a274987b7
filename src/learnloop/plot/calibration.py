"""Reliability (calibration) diagrams: predicted probability against the observed rate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from learnloop.plot._mpl import axes
from learnloop.tracing import expected_calibration_error

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["ReliabilityBins", "reliability_bins", "reliability_diagram"]


@dataclass(frozen=True)
class ReliabilityBins:
    """Per non-empty bin: mean prediction, observed rate and count; and the ECE over all bins."""

    predicted: npt.NDArray[np.float64]
    observed: npt.NDArray[np.float64]
    count: npt.NDArray[np.int64]
    ece: float


def reliability_bins(y: npt.ArrayLike, p: npt.ArrayLike, *, n_bins: int = 10) -> ReliabilityBins:
    """Equal-width bins of the predictions ``p``, with the mean outcome ``y`` in each.

    The binning is that of :func:`~learnloop.tracing.expected_calibration_error`.

    >>> bins = reliability_bins([0, 1, 1, 1], [0.25, 0.25, 0.75, 0.75], n_bins=2)
    >>> bins.predicted.tolist(), bins.observed.tolist(), bins.count.tolist(), bins.ece
    ([0.25, 0.75], [0.5, 1.0], [2, 2], 0.25)
    """
    y_arr = np.asarray(y, dtype=np.float64).ravel()
    p_arr = np.asarray(p, dtype=np.float64).ravel()
    if y_arr.size != p_arr.size:
        raise ValueError(f"y and p differ in length: {y_arr.size} != {p_arr.size}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1, got {n_bins}")
    bins = np.minimum((p_arr * n_bins).astype(np.intp), n_bins - 1)
    count = np.bincount(bins, minlength=n_bins)
    filled = count > 0
    predicted = np.bincount(bins, p_arr, n_bins)[filled] / count[filled]
    observed = np.bincount(bins, y_arr, n_bins)[filled] / count[filled]
    ece = expected_calibration_error(y_arr, p_arr, n_bins=n_bins)
    return ReliabilityBins(predicted=predicted, observed=observed, count=count[filled].astype(np.int64), ece=ece)


def reliability_diagram(
    y: npt.ArrayLike,
    p: npt.ArrayLike,
    *,
    n_bins: int = 10,
    ax: Axes | None = None,
    label: str | None = None,
    show_counts: bool = True,
    title: str | None = "Reliability diagram",
) -> Axes:
    """Plot observed rate against mean prediction per bin, beside the diagonal of perfect calibration.

    ``y`` are outcomes (0/1, or fractional scores), ``p`` predicted
    probabilities. The line's label carries the expected calibration error;
    with ``show_counts`` grey bars show the share of predictions in each bin.
    Call it again on the same ``ax`` to compare models. Returns the axes; the
    diagonal is ``ax.lines[0]`` and each call adds one line.

    >>> from matplotlib.figure import Figure
    >>> ax = reliability_diagram([0, 1, 1, 1], [0.25, 0.25, 0.75, 0.75], n_bins=2, label="BKT",
    ...                          ax=Figure().subplots())
    >>> ax.lines[1].get_xdata().tolist(), ax.lines[1].get_label()
    ([0.25, 0.75], 'BKT (ECE 0.250)')
    """
    bins = reliability_bins(y, p, n_bins=n_bins)
    ax = axes(ax, figsize=(5.0, 5.0))
    if not any(line.get_gid() == "diagonal" for line in ax.lines):
        ax.plot(
            [0.0, 1.0],
            [0.0, 1.0],
            linestyle=":",
            color="grey",
            linewidth=1,
            label="perfectly calibrated",
            gid="diagonal",
        )
        if show_counts:
            width = 1.0 / n_bins
            share = np.zeros(n_bins)
            edges = np.minimum((bins.predicted * n_bins).astype(np.intp), n_bins - 1)
            share[edges] = bins.count / bins.count.sum()
            ax.bar(
                np.arange(n_bins) * width,
                share,
                width=width,
                align="edge",
                color="grey",
                alpha=0.2,
                label="share of predictions",
            )
    name = f"ECE {bins.ece:.3f}" if label is None else f"{label} (ECE {bins.ece:.3f})"
    ax.plot(bins.predicted, bins.observed, marker="o", label=name)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("predicted probability of success")
    ax.set_ylabel("observed rate")
    if title is not None:
        ax.set_title(title)
    ax.legend(loc="upper left")
    return ax
