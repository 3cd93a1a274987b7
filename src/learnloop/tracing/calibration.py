r"""Item calibration from an event log: marginal maximum a posteriori (Bock-Aitkin EM).

Given events ``(person, item, score)`` with scores in [0, 1], :func:`calibrate`
estimates each item's difficulty ``b`` (and, for 2PL, discrimination ``a``)
with abilities integrated out over a standard normal population on a fixed
quadrature grid :math:`x_q` with weights :math:`w_q`:

* E-step: each person's posterior over the grid,
  :math:`\pi_{pq} \propto w_q \prod_{e \in p} p_{i_e q}^{s_e} (1 - p_{i_e q})^{1 - s_e}`,
  computed for all persons at once with two sparse products;
* M-step: with expected counts :math:`n_{iq} = \sum_{e \in i} \pi_{p_e q}` and
  :math:`r_{iq} = \sum_{e \in i} s_e \pi_{p_e q}`, maximise
  :math:`\sum_q r_{iq} \log p_{iq} + (n_{iq} - r_{iq}) \log(1 - p_{iq})` plus
  the log priors :math:`b_i \sim N(b^0_i, \sigma_b^2)` (``b^0`` is the
  cold-start value, so sparsely answered items stay near it) and
  :math:`\log a_i \sim N(0, \sigma_a^2)`, with L-BFGS-B and analytic gradients.

Abilities are returned as posterior means (EAP) with posterior standard
deviations. A tqdm progress bar shows long fits (``progress=True``); Ctrl-C
stops the fit cleanly and returns the last completed iteration with
``interrupted=True``. Inputs are never modified.

>>> from learnloop.sim import generate_irt
>>> data = generate_irt(200, 30, seed=2)
>>> fit = calibrate(data.person, data.item, data.score)
>>> bool(np.corrcoef(fit.b, data.b)[0, 1] > 0.95)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from tqdm.auto import tqdm

from ._types import ArrayLike, FloatArray

__all__ = ["Calibration", "calibrate", "refine_step"]


@dataclass(frozen=True)
class Calibration:
    """The result of :func:`calibrate`."""

    b: FloatArray
    a: FloatArray
    theta: FloatArray
    theta_sd: FloatArray
    log_posterior: float
    n_iter: int
    converged: bool
    interrupted: bool
    #: the standard deviation of the abilities in the population (fixed or estimated)
    ability_sd: float = 1.0


def minimize(*args: Any, **kwargs: Any) -> Any:
    """``scipy.optimize.minimize``, imported on first use (scipy is not imported with learnloop)."""
    from scipy.optimize import minimize as scipy_minimize

    return scipy_minimize(*args, **kwargs)


def _m_step_objective(
    params: FloatArray,
    r: FloatArray,
    n: FloatArray,
    nodes: FloatArray,
    b0: FloatArray,
    b_prec: float,
    a_prec: float,
    two_pl: bool,
) -> tuple[float, FloatArray]:
    from scipy.special import log_expit

    n_items = b0.size
    b = params[:n_items]
    log_a = params[n_items:] if two_pl else np.zeros(n_items)
    a = np.exp(log_a)
    dev = nodes[None, :] - b[:, None]
    z = a[:, None] * dev
    log_p = log_expit(z)
    value = float((r * log_p + (n - r) * log_expit(-z)).sum())
    value -= 0.5 * b_prec * float(((b - b0) ** 2).sum())
    resid = r - n * np.exp(log_p)  # d loglik / dz
    grad_b = -(a * resid.sum(axis=1)) - b_prec * (b - b0)
    if not two_pl:
        return -value, -grad_b
    value -= 0.5 * a_prec * float((log_a**2).sum())
    grad_la = (resid * z).sum(axis=1) - a_prec * log_a
    return -value, -np.concatenate([grad_b, grad_la])


def calibrate(
    person: ArrayLike,
    item: ArrayLike,
    score: ArrayLike,
    *,
    n_items: int | None = None,
    n_persons: int | None = None,
    model: Literal["rasch", "2pl"] = "rasch",
    b_prior_mean: ArrayLike = 0.0,
    b_prior_sd: float = 1.5,
    a_prior_sd: float = 0.5,
    n_quad: int = 41,
    max_iter: int = 500,
    tol: float = 1e-6,
    progress: bool = False,
    ability_sd: float | None = 1.0,
) -> Calibration:
    """Calibrate item parameters by marginal MAP (see the module docstring).

    ``b_prior_mean`` is a scalar or one value per item (e.g.
    ``difficulty_to_b(cold_start_difficulty)``). Iteration stops when the log
    posterior changes by less than ``tol`` per event.

    ``ability_sd``: the spread of the abilities, N(0, ``ability_sd``²); None
    estimates it (Rasch only: with 2PL the discriminations carry the scale),
    each iteration setting it to the root mean posterior second moment of the
    abilities (the marginal-likelihood EM step for a population variance). A
    fixed spread of 1 on learners who differ more compresses the difficulties
    toward 0.
    """
    import scipy.sparse as sp  # scipy is imported on first use, not with learnloop
    from scipy.optimize import Bounds
    from scipy.special import log_expit

    p_idx = np.asarray(person, dtype=np.intp).ravel()
    i_idx = np.asarray(item, dtype=np.intp).ravel()
    s = np.asarray(score, dtype=np.float64).ravel()
    problems = []
    if not p_idx.size == i_idx.size == s.size:
        problems.append(f"person, item and score differ in length: {p_idx.size}, {i_idx.size}, {s.size}")
    elif np.any(~np.isfinite(s) | (s < 0.0) | (s > 1.0)):
        problems.append("scores must lie in [0, 1]")
    if model not in ("rasch", "2pl"):
        problems.append(f"model must be 'rasch' or '2pl', got {model!r}")
    if ability_sd is None and model == "2pl":
        problems.append("the ability spread is estimated with the Rasch model only (2PL: give ability_sd)")
    elif ability_sd is not None and not ability_sd > 0.0:
        problems.append(f"ability_sd must be positive, got {ability_sd}")
    if p_idx.size and (p_idx.min() < 0 or i_idx.min() < 0):
        problems.append("person and item indices must be non-negative")
    if problems:
        raise ValueError("; ".join(problems))
    n_items = int(i_idx.max()) + 1 if n_items is None else n_items
    n_persons = int(p_idx.max()) + 1 if n_persons is None else n_persons
    if p_idx.size and (i_idx.max() >= n_items or p_idx.max() >= n_persons):
        raise ValueError(f"indices out of range for n_items={n_items}, n_persons={n_persons}")
    b0 = np.broadcast_to(np.asarray(b_prior_mean, dtype=np.float64), (n_items,)).copy()
    two_pl = model == "2pl"

    unit = np.linspace(-5.0, 5.0, n_quad)
    sigma = 1.0 if ability_sd is None else float(ability_sd)
    nodes = sigma * unit
    log_w = -0.5 * unit**2
    log_w -= np.log(np.exp(log_w).sum())
    shape = (n_persons, n_items)
    right = sp.csr_matrix((s, (p_idx, i_idx)), shape=shape)
    wrong = sp.csr_matrix((1.0 - s, (p_idx, i_idx)), shape=shape)
    count = sp.csr_matrix((np.ones_like(s), (p_idx, i_idx)), shape=shape)
    right_t, count_t = right.T.tocsr(), count.T.tocsr()

    b = b0.copy()
    log_a = np.zeros(n_items)
    b_prec, a_prec = 1.0 / b_prior_sd**2, 1.0 / a_prior_sd**2
    post = np.broadcast_to(np.exp(log_w), (n_persons, n_quad))
    # the box of every parameter, as arrays (a list of pairs costs a conversion per item and M-step)
    lower = np.concatenate([np.full(n_items, -6.0), np.full(n_items if two_pl else 0, -1.5)])
    bounds = Bounds(lower, -lower)
    last = -math.inf
    n_iter, converged, interrupted = 0, False, False
    bar = tqdm(total=max_iter, desc="calibrating items", disable=not progress, leave=False)
    try:
        for it in range(max_iter):
            a = np.exp(log_a)
            z = a[:, None] * (nodes[None, :] - b[:, None])
            loglik = right @ log_expit(z) + wrong @ log_expit(-z)  # (persons, nodes)
            joint = loglik + log_w[None, :]
            peak = joint.max(axis=1, keepdims=True)
            dens = np.exp(joint - peak)
            total = dens.sum(axis=1, keepdims=True)
            new_post = dens / total
            value = float((np.log(total) + peak).sum())
            value -= 0.5 * b_prec * float(((b - b0) ** 2).sum()) + (
                0.5 * a_prec * float((log_a**2).sum()) if two_pl else 0.0
            )
            r = right_t @ new_post
            n = count_t @ new_post
            start = np.concatenate([b, log_a]) if two_pl else b
            res = minimize(
                _m_step_objective,
                start,
                args=(r, n, nodes, b0, b_prec, a_prec, two_pl),
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
            )
            # commit the iteration only once it is complete
            post = new_post
            if ability_sd is None:  # the population spread: root mean posterior second moment
                sigma = float(np.sqrt(np.mean(new_post @ nodes**2)))
                nodes = sigma * unit
            b = res.x[:n_items].copy()
            if two_pl:
                log_a = res.x[n_items:].copy()
            n_iter = it + 1
            bar.update(1)
            bar.set_postfix(log_posterior=f"{value:.2f}")
            if abs(value - last) < tol * max(s.size, 1):
                converged = True
                break
            last = value
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    theta = post @ nodes
    theta_sd = np.sqrt(np.maximum(post @ nodes**2 - theta**2, 0.0))
    return Calibration(
        b=b,
        a=np.exp(log_a),
        theta=np.asarray(theta, dtype=np.float64),
        theta_sd=np.asarray(theta_sd, dtype=np.float64),
        log_posterior=float(last if math.isfinite(last) else np.nan),
        n_iter=n_iter,
        converged=converged,
        interrupted=interrupted,
        ability_sd=sigma,
    )


def refine_step(
    item: ArrayLike,
    score: ArrayLike,
    p: ArrayLike,
    b: ArrayLike,
    a: ArrayLike,
    *,
    b_prior_mean: ArrayLike,
    a_prior_mean: ArrayLike = 1.0,
    b_prior_sd: float = 0.45,
    a_prior_sd: float | None = 0.3,
) -> tuple[FloatArray, FloatArray]:
    """One Gauss-Newton step on the items' ``b`` (and ``log a`` unless ``a_prior_sd`` is None) of
    a model that predicted ``p`` for each response, its logit being ``a (θ − b)``.

    ``item`` and ``score`` give the responses, ``b`` and ``a`` the current parameters (one per
    item). The logit's derivatives are taken as ``−a`` in ``b`` and ``logit(p)`` in ``log a``,
    θ held fixed: for an online learner model (whose θ moves with each answer, and whose
    predictions shrink toward ½ with the uncertainty) this is the step of a discriminative fit of
    the items to its own next-response predictions, repeated with fresh predictions. The priors
    ``b ~ N(b_prior_mean, b_prior_sd²)`` and ``log a ~ N(log a_prior_mean, a_prior_sd²)`` keep
    each item near a static calibration. ``b`` is kept in ±6 and ``a`` in [e^−1.5, e^1.5].
    """
    i = np.asarray(item, dtype=np.intp).ravel()
    y = np.asarray(score, dtype=np.float64).ravel()
    q = np.clip(np.asarray(p, dtype=np.float64).ravel(), 1e-9, 1.0 - 1e-9)
    b = np.asarray(b, dtype=np.float64).astype(np.float64, copy=True)
    log_a = np.log(np.asarray(a, dtype=np.float64))
    if not i.size == y.size == q.size:
        raise ValueError(f"item, score and p differ in length: {i.size}, {y.size}, {q.size}")
    n = b.size
    b0 = np.broadcast_to(np.asarray(b_prior_mean, dtype=np.float64), (n,))
    la0 = np.log(np.broadcast_to(np.asarray(a_prior_mean, dtype=np.float64), (n,)))
    w, r = q * (1.0 - q), y - q
    x_b = -np.exp(log_a)[i]
    lam_b = 1.0 / b_prior_sd**2
    g_b = np.bincount(i, weights=r * x_b, minlength=n) - lam_b * (b - b0)
    h_bb = np.bincount(i, weights=w * x_b * x_b, minlength=n) + lam_b
    if a_prior_sd is None:
        return np.clip(b + g_b / h_bb, -6.0, 6.0), np.exp(log_a)
    x_a = np.log(q / (1.0 - q))
    lam_a = 1.0 / a_prior_sd**2
    g_a = np.bincount(i, weights=r * x_a, minlength=n) - lam_a * (log_a - la0)
    h_aa = np.bincount(i, weights=w * x_a * x_a, minlength=n) + lam_a
    h_ab = np.bincount(i, weights=w * x_a * x_b, minlength=n)
    det = h_bb * h_aa - h_ab * h_ab  # positive: the priors make each 2x2 block positive definite
    new_b = b + (h_aa * g_b - h_ab * g_a) / det
    new_log_a = log_a + (h_bb * g_a - h_ab * g_b) / det
    return np.clip(new_b, -6.0, 6.0), np.exp(np.clip(new_log_a, -1.5, 1.5))
