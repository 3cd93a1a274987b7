"""The replay of learners' answers with a prediction before each, compiled (optional: extra ``fast``).

:func:`runs` is :func:`learnloop.tracing.replay.trace` for many runs one after the other, written as
one loop over arrays that numba compiles (cached on disk, releasing the GIL): the prediction from
the item's own topic (the nested belief borrowed up the chain, or the additive sum with its
momentum; novelty; the variance-widened logistic), then the update of the answer's targets, the
prerequisite gating's readiness and the practice gain, in the same order of operations as the
scalar loop, so the two agree to float rounding. The memory model and the per-item bookkeeping do
not enter a prediction and are left out. This module imports numba:
:mod:`learnloop.tracing.replay` imports it only when numba is installed; the scalar loop stays the
reference its tests compare against.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

_VAR_MIN = 1e-6
_PI_OVER_8 = math.pi / 8.0


def _py_sigmoid(z: float) -> float:
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _py_log_sigmoid(x: float) -> float:
    """``-np.logaddexp(0, -x)`` as numpy computes it."""
    y = -x
    if y == 0.0:
        return -math.log(2.0)
    if y > 0.0:
        return -(y + math.log1p(math.exp(-y)))
    return -math.log1p(math.exp(y))


def _py_runs(
    pos: np.ndarray,  # (n,) item positions, the runs one after the other
    score: np.ndarray,  # (n,)
    topic: np.ndarray,  # (n,) the topic each answer was given in (-1: the item's own)
    starts: np.ndarray,  # (r,) where each run begins in pos
    lengths: np.ndarray,  # (r,)
    item_topic: np.ndarray,  # (I,)
    b_of: np.ndarray,  # (I,)
    a_of: np.ndarray,  # (I,)
    start: np.ndarray,  # (T + 1, 3) the state every run starts from
    start_momentum: np.ndarray,  # (2,)
    chains: np.ndarray,  # (T, D) each topic's chain, padded with T
    chain_len: np.ndarray,  # (T,)
    succ_ptr: np.ndarray,  # (T + 1,) CSR of the prerequisite successors
    succ_idx: np.ndarray,
    gain: np.ndarray,  # (T,)
    fail: np.ndarray,  # (T,)
    nov: np.ndarray,  # (T,)
    settings: np.ndarray,  # parent_w, pre_w, drift, topic_var, additive, decay, decay**2, momentum_var
    gate_node: np.ndarray,  # (T, W) each topic's requirements
    gate_len: np.ndarray,  # (T,) how many (0: none)
    gate_weight: np.ndarray,  # (T, W)
    gate_mean_b: np.ndarray,  # (T, W)
    gating: float,  # the gating exponent (0: none)
    practice: bool,
    out: np.ndarray,  # (n,) written
) -> None:
    parent_w, pre_w, drift, topic_var = settings[0], settings[1], settings[2], settings[3]
    additive = settings[4] > 0.0
    rho, q = settings[5], settings[7]
    fast = q > 0.0
    overall = start.shape[0] - 1
    width = chains.shape[1] + (succ_idx.shape[0] if succ_idx.shape[0] else 0) + 1
    nodes = np.empty(width, dtype=np.intp)
    weights = np.empty(width)
    prior_m = np.empty(width)
    prior_v = np.empty(width)
    ability = start.copy()
    momentum = start_momentum.copy()
    for r in range(starts.shape[0]):
        ability[:, :] = start
        momentum[0] = start_momentum[0]
        momentum[1] = start_momentum[1]
        for k in range(starts[r], starts[r] + lengths[r]):
            i = pos[k]
            s = score[k]
            b = b_of[i]
            a = a_of[i]
            it = item_topic[i]
            t = it if topic[k] < 0 else topic[k]
            # the prediction, from the item's own topic
            if additive:
                m = 0.0
                v = 0.0
                for j in range(chain_len[it]):
                    m += ability[chains[it, j], 0]
                    v += ability[chains[it, j], 1]
                if nov[it] != 0.0 and ability[it, 2] <= 0.0:
                    m -= nov[it]
                if fast:
                    m += rho * momentum[0]
                    v += rho * rho * momentum[1] + q
            else:
                m, v = _belief(ability, chains, chain_len, it, overall, topic_var)
                if nov[it] != 0.0 and ability[it, 2] <= 0.0:
                    m -= nov[it]
            z = a * (m - b) / math.sqrt(1.0 + _PI_OVER_8 * a * a * v)
            out[k] = 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0
            # the update
            if nov[t] != 0.0 and ability[t, 2] <= 0.0:
                b += nov[t]
            ready = 1.0
            if practice and gating > 0.0 and gate_len[t] > 0:  # the beliefs before the answer
                total = 0.0
                for j in range(gate_len[t]):
                    p = gate_node[t, j]
                    if additive:
                        mp = 0.0
                        for level in range(chain_len[p]):
                            mp += ability[chains[p, level], 0]
                    else:
                        mp, _ = _belief(ability, chains, chain_len, p, overall, topic_var)
                    total += gate_weight[t, j] * _log_sigmoid(mp - gate_mean_b[t, j])
                ready = math.exp(gating * total)
            sc = 0.0 if s < 0.0 else (1.0 if s > 1.0 else s)
            if additive:
                n = chain_len[t]
                total_m = 0.0
                total_v = 0.0
                for j in range(n):
                    node = chains[t, j]
                    vj = max(ability[node, 1] + drift, _VAR_MIN)
                    prior_v[j] = vj
                    total_m += ability[node, 0]
                    total_v += vj
                m_fast = 0.0
                v_fast = 0.0
                if fast:
                    m_fast = rho * momentum[0]
                    v_fast = max(rho * rho * momentum[1] + q - drift + drift, _VAR_MIN)
                    total_m += m_fast
                    total_v += v_fast
                p_ = _sigmoid(a * (total_m - b))
                h = a * a * p_ * (1.0 - p_)
                den = 1.0 + total_v * h
                step = a * (sc - p_) / den
                for j in range(n):
                    node = chains[t, j]
                    vj = prior_v[j]
                    ability[node, 0] = ability[node, 0] + vj * step
                    ability[node, 1] = max(vj - vj * vj * h / den, _VAR_MIN)
                    ability[node, 2] = ability[node, 2] + 1.0
                if fast:
                    momentum[0] = m_fast + v_fast * step
                    momentum[1] = max(v_fast - v_fast * v_fast * h / den, _VAR_MIN)
            else:
                count = 0
                for j in range(chain_len[t]):
                    nodes[count] = chains[t, j]
                    weights[count] = 1.0 if j == 0 else parent_w
                    count += 1
                for j in range(succ_ptr[t], succ_ptr[t + 1]):
                    nodes[count] = succ_idx[j]
                    weights[count] = pre_w
                    count += 1
                for j in range(count):  # every prior is read before any is written
                    prior_m[j], prior_v[j] = _belief(ability, chains, chain_len, nodes[j], overall, topic_var)
                for j in range(count):
                    weight = weights[j]
                    if weight <= 0.0:
                        continue
                    node = nodes[j]
                    vj = prior_v[j] + drift
                    if vj < _VAR_MIN:
                        vj = _VAR_MIN
                    prec = 1.0 / vj
                    mean = prior_m[j]
                    p0 = _sigmoid(a * (mean - b))
                    wa = weight * a
                    m2 = mean + wa * (sc - p0) / (prec + wa * a * p0 * (1.0 - p0))
                    p1 = _sigmoid(a * (m2 - b))
                    ability[node, 0] = m2
                    ability[node, 1] = 1.0 / (prec + wa * a * p1 * (1.0 - p1))
                    ability[node, 2] = ability[node, 2] + weight
            if practice:
                g = gain[t]
                f = fail[t]
                ability[t, 0] = ability[t, 0] + (g if f == g else s * g + (1.0 - s) * f) * ready


def _py_belief(
    ability: np.ndarray, chains: np.ndarray, chain_len: np.ndarray, node: int, overall: int, topic_var: float
) -> tuple[float, float]:
    """The nested hierarchy's belief of ``node``: its own once answered, else its nearest answered
    ancestor's (the overall node's at the latest), widened by ``topic_var`` a level."""
    if ability[node, 2] > 0.0 or node == overall:
        return ability[node, 0], ability[node, 1]
    for level in range(1, chain_len[node]):
        up = chains[node, level]
        if ability[up, 2] > 0.0 or up == overall:
            return ability[up, 0], ability[up, 1] + topic_var * level
    return ability[overall, 0], ability[overall, 1]


_JIT = numba.njit(cache=True, nogil=True)
_sigmoid: Any = _JIT(_py_sigmoid)
_log_sigmoid: Any = _JIT(_py_log_sigmoid)
_belief: Any = _JIT(_py_belief)
#: the compiled replay (compiled at its first call, or read from numba's cache)
runs: Any = _JIT(_py_runs)
