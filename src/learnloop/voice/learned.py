"""The small learned models of the voice scorer: linear, logistic and a one-layer network, with their fits.

Plain numpy (:func:`fit_network` alone needs scipy, imported when called), fitted on
standardised inputs; :mod:`learnloop.voice.assessment` stores them in ``assessment.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Linear", "Network", "fit_linear", "fit_logistic", "fit_network", "sigmoid"]


@dataclass(frozen=True, eq=False)
class Linear:
    """``y = b + w . (x - mean) / sd``."""

    mean: np.ndarray
    sd: np.ndarray
    weights: np.ndarray
    bias: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.sd) @ self.weights + self.bias  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        return {"mean": _list(self.mean), "sd": _list(self.sd), "weights": _list(self.weights), "bias": self.bias}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Linear:
        return cls(_array(d["mean"]), _array(d["sd"]), _array(d["weights"]), float(d["bias"]))


@dataclass(frozen=True, eq=False)
class Network:
    """``y = b2 + w2 . tanh(W1 (x - mean) / sd + b1)``: one hidden layer."""

    mean: np.ndarray
    sd: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(((x - self.mean) / self.sd) @ self.w1 + self.b1) @ self.w2 + self.b2  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": _list(self.mean),
            "sd": _list(self.sd),
            "w1": _list(self.w1),
            "b1": _list(self.b1),
            "w2": _list(self.w2),
            "b2": self.b2,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Network:
        return cls(
            _array(d["mean"]), _array(d["sd"]), _array(d["w1"]), _array(d["b1"]), _array(d["w2"]), float(d["b2"])
        )


def _list(a: np.ndarray) -> Any:
    return np.asarray(a, dtype=np.float64).round(6).tolist()


def _array(v: Any) -> np.ndarray:
    out = np.asarray(v, dtype=np.float64)
    out.setflags(write=False)
    return out


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    sd = x.std(axis=0)
    return mean, np.where(sd > 1e-9, sd, 1.0)


def fit_linear(x: np.ndarray, y: np.ndarray, *, ridge: float = 1.0) -> Linear:
    """Ridge regression on standardised columns (the bias is not penalised)."""
    mean, sd = _standardise(x)
    z = (x - mean) / sd
    a = z.T @ z + ridge * np.eye(z.shape[1])
    weights = np.linalg.solve(a, z.T @ (y - y.mean()))
    return Linear(mean, sd, weights, float(y.mean()))


def fit_logistic(x: np.ndarray, y: np.ndarray, *, ridge: float = 1.0, iterations: int = 50) -> Linear:
    """Logistic regression (Newton steps, ``ridge`` on the standardised weights): a
    :class:`Linear` giving the log-odds of ``y`` = 1."""
    mean, sd = _standardise(x)
    z = np.column_stack([np.ones(len(x)), (x - mean) / sd])
    w = np.zeros(z.shape[1])
    penalty = ridge * np.eye(z.shape[1])
    penalty[0, 0] = 0.0
    for _ in range(iterations):
        p = sigmoid(z @ w)
        grad = z.T @ (p - y) + penalty @ w
        hess = (z * (p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return Linear(mean, sd, w[1:], float(w[0]))


def sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(v, -50.0, 50.0)))  # type: ignore[no-any-return]


def fit_network(
    x: np.ndarray, y: np.ndarray, *, hidden: int = 16, l2: float = 1e-3, iterations: int = 300, seed: int = 0
) -> Network:
    """Squared error plus ``l2`` times the squared weights, minimised by L-BFGS."""
    from scipy.optimize import minimize

    mean, sd = _standardise(x)
    z = (x - mean) / sd
    n, p = z.shape
    rng = np.random.default_rng(seed)
    cut = (p * hidden, p * hidden + hidden, p * hidden + 2 * hidden)

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        return theta[: cut[0]].reshape(p, hidden), theta[cut[0] : cut[1]], theta[cut[1] : cut[2]], float(theta[-1])

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w1, b1, w2, b2 = unpack(theta)
        h = np.tanh(z @ w1 + b1)
        err = h @ w2 + b2 - y
        value = float(np.mean(err**2) + l2 * (np.sum(w1**2) + np.sum(w2**2)))
        g = 2.0 * err / n
        gh = np.outer(g, w2) * (1.0 - h**2)
        grad = np.concatenate([(z.T @ gh + 2 * l2 * w1).ravel(), gh.sum(0), h.T @ g + 2 * l2 * w2, [g.sum()]])
        return value, grad

    start = np.concatenate(
        [rng.normal(0.0, p**-0.5, p * hidden), np.zeros(hidden), rng.normal(0.0, hidden**-0.5, hidden), [y.mean()]]
    )
    found = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": iterations})
    w1, b1, w2, b2 = unpack(found.x)
    return Network(mean, sd, w1, b1, w2, b2)
