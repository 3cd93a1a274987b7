"""From GOP to a 0..100 phone score: a logistic mapping fitted on labelled speech.

A phone's score is 100 times the estimated probability that it was said as
the target phone:

    score = round(100 * sigmoid(b0 + b1 * gop + b2 * frame_gop))

where ``gop`` is the segment log-likelihood ratio of the target against the
best phone and ``frame_gop`` the mean per-frame ratio of the target's best
state against the best state of any phone (both per frame, both <= 0).

The constants below were fitted by logistic regression (maximum likelihood)
on phones of espeak-ng speech, half said correctly and half replaced by
another phone of the same class, over many words and several voices.
``benchmarks/calibrate_voice_gop.py`` reproduces them and prints the fit;
rerun it after any change to the front end, the alignment or the GOP.

>>> phone_score(0.0, 0.0) >= 90
True
>>> phone_score(-10.0, -5.0) < 20
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

__all__ = ["CALIBRATION", "Calibration", "fit_calibration", "phone_score", "score_band"]


@dataclass(frozen=True, slots=True)
class Calibration:
    """Logistic coefficients: intercept and weights of ``gop`` and ``frame_gop``."""

    intercept: float
    w_gop: float
    w_frame: float

    def probability(self, gop: np.ndarray | float, frame_gop: np.ndarray | float) -> np.ndarray:
        z = self.intercept + self.w_gop * np.asarray(gop) + self.w_frame * np.asarray(frame_gop)
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))


# Fitted by benchmarks/calibrate_voice_gop.py (see the module docstring).
CALIBRATION: Final = Calibration(intercept=2.458, w_gop=0.193, w_frame=0.486)


def phone_score(gop: float, frame_gop: float, calibration: Calibration = CALIBRATION) -> int:
    """The integer 0..100 score of one phone."""
    return int(np.rint(100.0 * float(calibration.probability(gop, frame_gop))))


def score_band(score: int) -> str:
    """The spec's band of a score: ``A`` 90+, ``B`` 80-89, ``C`` 60-79, ``D`` below 60.

    >>> [score_band(s) for s in (100, 90, 89, 80, 79, 60, 59, 0)]
    ['A', 'A', 'B', 'B', 'C', 'C', 'D', 'D']
    """
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    if score >= 60:
        return "C"
    return "D"


def fit_calibration(gop: np.ndarray, frame_gop: np.ndarray, correct: np.ndarray, *, l2: float = 1e-3) -> Calibration:
    """Maximum-likelihood logistic regression (Newton's method, a tiny L2 penalty).

    >>> rng = np.random.default_rng(0)
    >>> g = np.concatenate([rng.normal(-0.2, 0.3, 500), rng.normal(-4, 2, 500)])
    >>> f = g / 2
    >>> y = np.concatenate([np.ones(500), np.zeros(500)])
    >>> cal = fit_calibration(g, f, y)
    >>> bool(cal.probability(0.0, 0.0) > 0.9 and cal.probability(-5.0, -2.5) < 0.1)
    True
    """
    x = np.column_stack([np.ones(len(gop)), np.asarray(gop, float), np.asarray(frame_gop, float)])
    y = np.asarray(correct, dtype=float)
    beta = np.zeros(3)
    penalty = l2 * np.diag([0.0, 1.0, 1.0])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ beta, -50, 50)))
        grad = x.T @ (y - p) - penalty @ beta
        hess = (x * (p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hess + 1e-9 * np.eye(3), grad)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-8:
            break
    return Calibration(float(beta[0]), float(beta[1]), float(beta[2]))
