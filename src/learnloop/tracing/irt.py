r"""Item response theory: the Rasch model and the two-parameter logistic (2PL) model.

A learner of ability :math:`\theta` answers an item of difficulty :math:`b` and
discrimination :math:`a` correctly with probability

.. math:: P(\text{correct} \mid \theta) = \sigma\bigl(a(\theta - b)\bigr),
          \qquad \sigma(z) = 1 / (1 + e^{-z}).

The Rasch model fixes :math:`a = 1`. Abilities are on the logit scale of a
population with mean 0 and standard deviation 1. A cold-start difficulty
:math:`d \in (0, 1)` is the probability that an *average* learner
(:math:`\theta = 0`) fails the item, so :math:`1 - d = \sigma(-b)` and
:math:`b = \operatorname{logit}(d)`.

A fractional score :math:`s \in [0, 1]` enters every likelihood as the
fractional outcome :math:`p^s (1 - p)^{1 - s}`.

>>> float(difficulty_to_b(0.5))
0.0
>>> round(float(p_correct(0.0, difficulty_to_b(0.66))), 2)
0.34
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._types import ArrayLike, FloatArray

__all__ = [
    "B_LIMIT",
    "AbilityEstimate",
    "b_to_difficulty",
    "difficulty_to_b",
    "estimate_ability",
    "expected_p_correct",
    "fisher_information",
    "p_correct",
]

B_LIMIT = 6.0
"""Difficulties and abilities are clipped to ``[-B_LIMIT, B_LIMIT]`` logits."""

_D_EPS = 1.0 / (1.0 + math.exp(B_LIMIT))
PI_OVER_8 = math.pi / 8.0


def difficulty_to_b(d: ArrayLike, *, default: float = 0.5) -> FloatArray:
    """Turn a cold-start difficulty (P(average learner fails)) into the IRT ``b``.

    NaN (an unspecified difficulty) becomes ``default``; the result is clipped
    to ``[-B_LIMIT, B_LIMIT]``.

    >>> difficulty_to_b([0.33, 0.5, float("nan"), 1.0]).round(3).tolist()
    [-0.708, 0.0, 0.0, 6.0]
    """
    arr = np.asarray(d, dtype=np.float64)
    arr = np.where(np.isnan(arr), default, arr)
    arr = np.clip(arr, _D_EPS / 2.0, 1.0 - _D_EPS / 2.0)
    return np.clip(np.log(arr) - np.log1p(-arr), -B_LIMIT, B_LIMIT)  # type: ignore[no-any-return]


def b_to_difficulty(b: ArrayLike) -> FloatArray:
    """Inverse of :func:`difficulty_to_b`: P(an average learner fails).

    >>> b_to_difficulty([0.0]).tolist()
    [0.5]
    """
    return _sigmoid(np.asarray(b, dtype=np.float64))


def _sigmoid(z: FloatArray) -> FloatArray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-z))


def p_correct(theta: ArrayLike, b: ArrayLike, a: ArrayLike = 1.0) -> FloatArray:
    """P(correct) = sigmoid(a (theta - b)), broadcast over all arguments.

    >>> p_correct(0.0, [0.0, 1.0], 2.0).round(4).tolist()
    [0.5, 0.1192]
    """
    z = np.multiply(a, np.subtract(theta, b, dtype=np.float64))
    return _sigmoid(z)


def expected_p_correct(mean: ArrayLike, var: ArrayLike, b: ArrayLike, a: ArrayLike = 1.0) -> FloatArray:
    r"""P(correct) averaged over a Gaussian belief N(mean, var) about the ability.

    Uses the probit approximation
    :math:`\int \sigma(a(\theta-b))\,N(\theta; m, v)\,d\theta \approx
    \sigma\bigl(a(m-b) / \sqrt{1 + \pi a^2 v / 8}\bigr)`, which is accurate to
    about 0.01 and is what keeps uncertain predictions calibrated.

    >>> round(float(expected_p_correct(1.0, 0.0, 0.0)), 4) == round(float(p_correct(1.0, 0.0)), 4)
    True
    >>> float(expected_p_correct(1.0, 4.0, 0.0)) < float(p_correct(1.0, 0.0))
    True
    """
    a_arr = np.asarray(a, dtype=np.float64)
    scale = np.sqrt(1.0 + PI_OVER_8 * (a_arr * a_arr) * np.asarray(var, dtype=np.float64))
    return _sigmoid(a_arr * np.subtract(mean, b, dtype=np.float64) / scale)


def fisher_information(theta: ArrayLike, b: ArrayLike, a: ArrayLike = 1.0) -> FloatArray:
    """Fisher information a^2 p (1 - p) of each item about ``theta``.

    >>> fisher_information(0.0, [0.0]).tolist()
    [0.25]
    """
    p = p_correct(theta, b, a)
    a_arr = np.asarray(a, dtype=np.float64)
    return (a_arr * a_arr) * p * (1.0 - p)


@dataclass(frozen=True, slots=True)
class AbilityEstimate:
    """An ability estimate on the logit scale with its standard error."""

    theta: float
    se: float


def estimate_ability(
    b: ArrayLike,
    scores: ArrayLike,
    a: ArrayLike | None = None,
    *,
    method: Literal["eap", "map"] = "eap",
    prior_mean: float = 0.0,
    prior_sd: float = 1.0,
    n_quad: int = 81,
) -> AbilityEstimate:
    """Estimate one learner's ability from responses to items of known parameters.

    ``method="eap"`` is the posterior mean on a quadrature grid over
    ``prior_mean +- 6 prior_sd`` (its ``se`` is the posterior standard
    deviation); ``method="map"`` is the posterior mode found by Newton's method
    (its ``se`` is the inverse square root of the posterior curvature). Both
    use a Gaussian prior, so all-correct and all-wrong patterns stay finite.

    >>> est = estimate_ability([-1.0, 0.0, 1.0], [1, 1, 1])
    >>> 0.5 < est.theta < 2.0 and 0.5 < est.se < 1.0
    True
    >>> estimate_ability([], [], method="map")
    AbilityEstimate(theta=0.0, se=1.0)
    """
    b_arr = np.asarray(b, dtype=np.float64).ravel()
    s_arr = np.asarray(scores, dtype=np.float64).ravel()
    a_arr = np.ones_like(b_arr) if a is None else np.broadcast_to(np.asarray(a, dtype=np.float64), b_arr.shape)
    if b_arr.shape != s_arr.shape:
        raise ValueError(f"b has {b_arr.size} items but scores has {s_arr.size}")
    if np.any((s_arr < 0.0) | (s_arr > 1.0) | np.isnan(s_arr)):
        raise ValueError("scores must lie in [0, 1]")
    if prior_sd <= 0.0:
        raise ValueError(f"prior_sd must be positive, got {prior_sd}")
    if method == "eap":
        from scipy.special import log_expit  # scipy is imported on first use, not with learnloop

        nodes = prior_mean + prior_sd * np.linspace(-6.0, 6.0, n_quad)
        z = a_arr[None, :] * (nodes[:, None] - b_arr[None, :])
        loglik = (s_arr * log_expit(z) + (1.0 - s_arr) * log_expit(-z)).sum(axis=1)
        logpost = loglik - 0.5 * ((nodes - prior_mean) / prior_sd) ** 2
        w = np.exp(logpost - logpost.max())
        w /= w.sum()
        mean = float(w @ nodes)
        sd = float(math.sqrt(max(float(w @ (nodes - mean) ** 2), 0.0)))
        return AbilityEstimate(theta=mean, se=sd)
    if method == "map":
        prec = 1.0 / (prior_sd * prior_sd)
        theta = prior_mean
        curvature = prec
        for _ in range(50):
            p = _sigmoid(a_arr * (theta - b_arr))
            grad = float(a_arr @ (s_arr - p)) - prec * (theta - prior_mean)
            curvature = float((a_arr * a_arr) @ (p * (1.0 - p))) + prec
            step = max(-1.0, min(1.0, grad / curvature))
            theta += step
            if abs(step) < 1e-10:
                break
        return AbilityEstimate(theta=float(theta), se=float(1.0 / math.sqrt(curvature)))
    raise ValueError(f"method must be 'eap' or 'map', got {method!r}")
