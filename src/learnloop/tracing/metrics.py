"""Scores for probabilistic predictions of binary outcomes: AUC, calibration, log loss.

>>> auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
0.75
>>> expected_calibration_error([0, 1], [0.5, 0.5])
0.0
"""

from __future__ import annotations

import numpy as np

from ._types import ArrayLike

__all__ = ["auc", "expected_calibration_error", "log_loss"]


def auc(y: ArrayLike, p: ArrayLike) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half)."""
    from scipy.stats import rankdata  # scipy is imported on first use, not with learnloop

    y_arr = np.asarray(y, dtype=np.float64).ravel() >= 0.5
    ranks = rankdata(np.asarray(p, dtype=np.float64).ravel())
    n_pos = int(y_arr.sum())
    n_neg = y_arr.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("auc needs both positive and negative outcomes")
    return float((ranks[y_arr].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def expected_calibration_error(y: ArrayLike, p: ArrayLike, *, n_bins: int = 10) -> float:
    """Mean |observed rate - mean prediction| over equal-width bins, weighted by bin size.

    ``y`` may hold fractional scores; their mean is compared with the predictions.
    """
    y_arr = np.asarray(y, dtype=np.float64).ravel()
    p_arr = np.asarray(p, dtype=np.float64).ravel()
    if y_arr.size == 0:
        raise ValueError("expected_calibration_error needs at least one prediction")
    bins = np.minimum((p_arr * n_bins).astype(np.intp), n_bins - 1)
    count = np.bincount(bins, minlength=n_bins)
    gap = np.abs(np.bincount(bins, y_arr, n_bins) - np.bincount(bins, p_arr, n_bins))
    return float(gap.sum() / y_arr.size) if count.any() else 0.0


def log_loss(y: ArrayLike, p: ArrayLike, *, eps: float = 1e-12) -> float:
    """Mean negative log-likelihood of (possibly fractional) outcomes."""
    y_arr = np.asarray(y, dtype=np.float64).ravel()
    p_arr = np.clip(np.asarray(p, dtype=np.float64).ravel(), eps, 1.0 - eps)
    return float(-np.mean(y_arr * np.log(p_arr) + (1.0 - y_arr) * np.log1p(-p_arr)))
