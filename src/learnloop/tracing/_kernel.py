"""The learner model's per-answer maths over a run of events, compiled (optional: extra ``fast``).

:func:`answers` applies, in order, the answers of a run to dense ability and
memory tables: the same steps as :func:`learnloop.tracing._apply.update_topics`
and its memory update (the one-step Laplace update of each target's belief,
the hierarchical prior, novelty, the practice and failure gains, the additive
hierarchy with its momentum, the FSRS memory of the topic), written as one
loop over arrays that numba compiles (cached on disk, releasing the GIL). This
module imports numba: :mod:`learnloop.tracing._columns` imports it only when
numba is installed, and decides when to use it; the per-event path stays the
reference its tests compare against.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

_VAR_MIN = 1e-6
_DAY = 86400.0
_FACTOR = 19.0 / 81.0


def _py_sigmoid(z: float) -> float:
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _py_d0(w: np.ndarray, grade: int) -> float:
    return min(10.0, max(1.0, float(w[4]) - (grade - 3) * float(w[5])))


def _py_answers(
    topic: np.ndarray,  # (n,) the topic each answer was given in
    b_of: np.ndarray,  # (n,) the item's difficulty
    a_of: np.ndarray,  # (n,) the item's discrimination
    score: np.ndarray,  # (n,) the score the model reads
    practice: np.ndarray,  # (n,) bool: the gain applies
    ts: np.ndarray,  # (n,) epoch seconds
    ability: np.ndarray,  # (T + 1, 3) written in place
    memory: np.ndarray,  # (T, 5) written in place
    momentum: np.ndarray,  # (2,) written in place
    chains: np.ndarray,  # (T, D) each topic's chain, padded with T
    chain_len: np.ndarray,  # (T,)
    succ_ptr: np.ndarray,  # (T + 1,) CSR of the prerequisite successors
    succ_idx: np.ndarray,
    gain: np.ndarray,  # (T,)
    fail: np.ndarray,  # (T,)
    nov: np.ndarray,  # (T,)
    settings: np.ndarray,  # parent_w, pre_w, drift, topic_var, additive, decay, decay**2, momentum_var
    fsrs: np.ndarray,  # the 17 weights, lapse_below, good_from, time_scale, exp(w8)
) -> None:
    parent_w, pre_w, drift, topic_var = settings[0], settings[1], settings[2], settings[3]
    additive = settings[4] > 0.0
    decay, decay2, momentum_var = settings[5], settings[6], settings[7]
    fast = momentum_var > 0.0
    overall = ability.shape[0] - 1
    w = fsrs
    lapse_below, good_from, time_scale, exp_w8 = fsrs[17], fsrs[18], fsrs[19], fsrs[20]
    width = chains.shape[1] + (succ_idx.shape[0] if succ_idx.shape[0] else 0) + 1
    nodes = np.empty(width, dtype=np.intp)
    weights = np.empty(width)
    prior_m = np.empty(width)
    prior_v = np.empty(width)
    for k in range(topic.shape[0]):
        t = topic[k]
        b = b_of[k]
        a = a_of[k]
        s = score[k]
        novelty = nov[t]
        if novelty != 0.0 and ability[t, 2] <= 0.0:
            b = b + novelty
        sc = 0.0 if s < 0.0 else (1.0 if s > 1.0 else s)
        if additive:
            n = chain_len[t]
            total_m = 0.0
            total_v = 0.0
            for j in range(n):
                node = chains[t, j]
                v = max(ability[node, 1] + drift, _VAR_MIN)
                prior_v[j] = v
                total_m += ability[node, 0]
                total_v += v
            if fast:
                m_fast = decay * momentum[0]
                v_fast = max(decay2 * momentum[1] + momentum_var - drift + drift, _VAR_MIN)
                total_m += m_fast
                total_v += v_fast
            p = _sigmoid(a * (total_m - b))
            h = a * a * p * (1.0 - p)
            den = 1.0 + total_v * h
            step = a * (sc - p) / den
            for j in range(n):
                node = chains[t, j]
                v = prior_v[j]
                ability[node, 0] = ability[node, 0] + v * step
                ability[node, 1] = max(v - v * v * h / den, _VAR_MIN)
                ability[node, 2] = ability[node, 2] + 1.0
            if fast:
                momentum[0] = m_fast + v_fast * step
                momentum[1] = max(v_fast - v_fast * v_fast * h / den, _VAR_MIN)
        else:
            # the targets: the topic, its ancestors and the overall node, its successors
            count = 0
            for j in range(chain_len[t]):
                nodes[count] = chains[t, j]
                weights[count] = 1.0 if j == 0 else parent_w
                count += 1
            for j in range(succ_ptr[t], succ_ptr[t + 1]):
                nodes[count] = succ_idx[j]
                weights[count] = pre_w
                count += 1
            # every prior is read before any is written
            for j in range(count):
                node = nodes[j]
                if ability[node, 2] > 0.0 or node == overall:
                    prior_m[j] = ability[node, 0]
                    prior_v[j] = ability[node, 1]
                    continue
                for level in range(1, chain_len[node]):
                    up = chains[node, level]
                    if ability[up, 2] > 0.0 or up == overall:
                        prior_m[j] = ability[up, 0]
                        prior_v[j] = ability[up, 1] + topic_var * level
                        break
            for j in range(count):
                weight = weights[j]
                if weight <= 0.0:
                    continue
                node = nodes[j]
                v = prior_v[j] + drift
                if v < _VAR_MIN:
                    v = _VAR_MIN
                prec = 1.0 / v
                mean = prior_m[j]
                p0 = _sigmoid(a * (mean - b))
                wa = weight * a
                m2 = mean + wa * (sc - p0) / (prec + wa * a * p0 * (1.0 - p0))
                p1 = _sigmoid(a * (m2 - b))
                ability[node, 0] = m2
                ability[node, 1] = 1.0 / (prec + wa * a * p1 * (1.0 - p1))
                ability[node, 2] = ability[node, 2] + weight
        if practice[k]:
            g = gain[t]
            f = fail[t]
            ability[t, 0] = ability[t, 0] + (g if f == g else s * g + (1.0 - s) * f)
        # the topic's memory (FSRS)
        now = ts[k]
        grade = 1 if s < lapse_below else (2 if s < good_from else 3)
        if math.isnan(memory[t, 0]):
            memory[t, 0] = w[grade - 1]
            memory[t, 1] = _d0(w, grade)
            memory[t, 2] = now
            memory[t, 3] = 1.0
            memory[t, 4] = 1.0 if grade == 1 else 0.0
            continue
        st = memory[t, 0]
        d = memory[t, 1]
        last = memory[t, 2]
        elapsed = max(0.0, now - last) / _DAY * time_scale
        r = (1.0 + _FACTOR * max(elapsed, 0.0) / st) ** -0.5
        if grade == 1:
            new_s = w[11] * d ** -w[12] * ((st + 1.0) ** w[13] - 1.0) * math.exp(w[14] * (1.0 - r))
            new_s = min(new_s, st)
        else:
            hard = w[15] if grade == 2 else 1.0
            new_s = st * (1.0 + exp_w8 * (11.0 - d) * st ** -w[9] * (math.exp(w[10] * (1.0 - r)) - 1.0) * hard)
        new_d = w[7] * _d0(w, 3) + (1.0 - w[7]) * (d - w[6] * (grade - 3))
        memory[t, 0] = max(new_s, 0.01)
        memory[t, 1] = min(10.0, max(1.0, new_d))
        memory[t, 2] = max(now, last)
        memory[t, 3] = memory[t, 3] + 1.0
        memory[t, 4] = memory[t, 4] + (1.0 if grade == 1 else 0.0)


_JIT = numba.njit(cache=True, nogil=True)
_sigmoid: Any = _JIT(_py_sigmoid)
_d0: Any = _JIT(_py_d0)
#: the compiled loop (compiled at its first call, or read from numba's cache)
answers: Any = _JIT(_py_answers)
