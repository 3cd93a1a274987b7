"""The learner model's per-answer maths, compiled (optional: extra ``fast``).

:func:`answers` applies, in order, the answers of a run to dense ability and
memory tables: the same steps as :func:`learnloop.tracing._apply.update_topics`
and its memory update (the one-step Laplace update of each target's belief,
the hierarchical prior, novelty, the practice and failure gains, the additive
hierarchy with its momentum, the FSRS memory of the topic). :func:`runs` is
:func:`learnloop.tracing.replay.trace` for many runs one after the other: the
prediction from the item's own topic (the nested belief borrowed up the chain,
or the additive sum with its momentum; novelty; the variance-widened
logistic), then the same update of the answer's targets (:func:`update`, one
function for both), the prerequisite gating's readiness and the practice gain;
the memory model and the per-item bookkeeping do not enter a prediction and
are left out there. Both are loops over arrays that numba compiles (cached on
disk, releasing the GIL), in one module, so that numba's cache of each is
rebuilt whenever the code they share changes. This module imports numba:
:mod:`learnloop.tracing._columns` and :mod:`learnloop.tracing.replay` import it
only when numba is installed, and decide when to use it; the per-event path
and the scalar loop stay the references their tests compare against.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

_VAR_MIN = 1e-6
_DAY = 86400.0
_FACTOR = 19.0 / 81.0
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


def _py_d0(w: np.ndarray, grade: int) -> float:
    return min(10.0, max(1.0, float(w[4]) - (grade - 3) * float(w[5])))


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


def _py_update(
    ability: np.ndarray,  # (T + 1, 3) written in place
    momentum: np.ndarray,  # (2,) written in place
    chains: np.ndarray,
    chain_len: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    settings: np.ndarray,  # as :func:`answers` reads them
    decay2: float,
    t: int,
    a: float,
    b: float,
    sc: float,
    nodes: np.ndarray,  # scratch
    weights: np.ndarray,
    prior_m: np.ndarray,
    prior_v: np.ndarray,
) -> None:
    """One answer's update of its targets' beliefs (the additive sum with its momentum, or the
    hierarchy's one-step Laplace updates of the topic, its ancestors and its successors), the part
    :func:`answers` and :func:`runs` share. ``decay2``: the momentum's decay squared, as the caller
    has it."""
    parent_w, pre_w, drift, topic_var = settings[0], settings[1], settings[2], settings[3]
    decay, momentum_var = settings[5], settings[7]
    fast = momentum_var > 0.0
    overall = ability.shape[0] - 1
    if settings[4] > 0.0:
        n = chain_len[t]
        total_m = 0.0
        total_v = 0.0
        for j in range(n):
            node = chains[t, j]
            v = max(ability[node, 1] + drift, _VAR_MIN)
            prior_v[j] = v
            total_m += ability[node, 0]
            total_v += v
        m_fast = 0.0
        v_fast = 0.0
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
        return
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
    for j in range(count):  # every prior is read before any is written
        prior_m[j], prior_v[j] = _belief(ability, chains, chain_len, nodes[j], overall, topic_var)
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


def _py_answer(
    t: int,  # the topic the answer was given in
    b: float,  # the item's difficulty
    a: float,  # the item's discrimination
    s: float,  # the score the model reads
    practice: bool,  # the gain applies
    now: float,  # epoch seconds
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
    nodes: np.ndarray,  # scratch
    weights: np.ndarray,
    prior_m: np.ndarray,
    prior_v: np.ndarray,
) -> None:
    """One answer: its targets' beliefs, the practice gain and the topic's memory (FSRS)."""
    w = fsrs
    lapse_below, good_from, time_scale, exp_w8 = fsrs[17], fsrs[18], fsrs[19], fsrs[20]
    novelty = nov[t]
    if novelty != 0.0 and ability[t, 2] <= 0.0:
        b = b + novelty
    sc = 0.0 if s < 0.0 else (1.0 if s > 1.0 else s)
    update(
        ability, momentum, chains, chain_len, succ_ptr, succ_idx, settings, settings[6], t, a, b, sc,
        nodes, weights, prior_m, prior_v,
    )  # fmt: skip
    if practice:
        g = gain[t]
        f = fail[t]
        ability[t, 0] = ability[t, 0] + (g if f == g else s * g + (1.0 - s) * f)
    grade = 1 if s < lapse_below else (2 if s < good_from else 3)
    if math.isnan(memory[t, 0]):
        memory[t, 0] = w[grade - 1]
        memory[t, 1] = _d0(w, grade)
        memory[t, 2] = now
        memory[t, 3] = 1.0
        memory[t, 4] = 1.0 if grade == 1 else 0.0
        return
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


def _py_scratch(chains: np.ndarray, succ_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The scratch arrays of :func:`update` (nodes, weights, prior means and variances)."""
    width = chains.shape[1] + (succ_idx.shape[0] if succ_idx.shape[0] else 0) + 1
    return np.empty(width, dtype=np.intp), np.empty(width), np.empty(width), np.empty(width)


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
    chains: np.ndarray,  # as :func:`_py_answer` reads them
    chain_len: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    gain: np.ndarray,
    fail: np.ndarray,
    nov: np.ndarray,
    settings: np.ndarray,
    fsrs: np.ndarray,
) -> None:
    nodes, weights, prior_m, prior_v = _scratch(chains, succ_idx)
    for k in range(topic.shape[0]):
        answer(
            topic[k], b_of[k], a_of[k], score[k], practice[k], ts[k], ability, memory, momentum, chains, chain_len,
            succ_ptr, succ_idx, gain, fail, nov, settings, fsrs, nodes, weights, prior_m, prior_v,
        )  # fmt: skip


def _py_run(
    item: np.ndarray,  # (n,) the run's columns, in time order (see EventColumns); item -1: not applied
    kind: np.ndarray,
    ts: np.ndarray,
    score: np.ndarray,
    topic: np.ndarray,
    time_ms: np.ndarray,
    fraction: np.ndarray,
    practice: np.ndarray,
    item_topic: np.ndarray,  # (I,)
    b_of: np.ndarray,  # (I,)
    a_of: np.ndarray,  # (I,)
    scorable: np.ndarray,  # (I,) bool
    skip_score: float,  # the score a skip is read as (NaN: none)
    ability: np.ndarray,  # (T + 1, 3) the start's, written in place
    memory: np.ndarray,  # (T, 5) the start's, written in place
    momentum: np.ndarray,  # (2,) the start's, written in place
    slot: np.ndarray,  # (n,) the row of each event's item in ``rows`` (read for the items 0 to I - 1 only)
    rows: np.ndarray,  # (K, 6) the rows of the items met before or in the run (blank if not before), written
    last: np.ndarray,  # (K,) each one's last event in the run (-1: none), written
    lo: int,  # the events lo to hi - 1 are applied (those before: by the calls before, in order)
    hi: int,
    carry: np.ndarray,  # (2,) the events applied by the calls before, and the time of the latest; written
    snap: int,  # where the tables are copied after the events in the arrays below (-1: nowhere)
    out_ability: np.ndarray,  # (S, T + 1, 3) written
    out_memory: np.ndarray,  # (S, T, 5)
    out_momentum: np.ndarray,  # (S, 2)
    out_rows: np.ndarray,  # (S, K, 6)
    out_last: np.ndarray,  # (S, K)
    out_events: np.ndarray,  # (S,) events applied up to each stop
    chains: np.ndarray,  # as :func:`_py_answer` reads them
    chain_len: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    gain: np.ndarray,
    fail: np.ndarray,
    nov: np.ndarray,
    settings: np.ndarray,
    fsrs: np.ndarray,
) -> bool:
    """Events of a run applied in order: each item's row (attempts, skips, last score, largest theory
    fraction, time spent, last time), then the answer (an attempt on a scorable item, a skip when
    skips are scored) as :func:`answers` applies it. False (the tables left part-written) at the first
    event that the grouping of :mod:`learnloop.tracing._columns` does not cover: one that fails the
    model's validation, one at its item's latest time (which could be an exact duplicate), or one
    earlier than the event before it."""
    n_items = item_topic.shape[0]
    n_topics = memory.shape[0]
    nodes, weights, prior_m, prior_v = _scratch(chains, succ_idx)
    applied = int(carry[0])
    before = carry[1]
    for k in range(lo, hi):
        i = item[k]
        if i < 0:
            continue
        code = kind[k]
        now = ts[k]
        given = score[k]
        frac = fraction[k]
        t = topic[k]
        if i >= n_items or code < 1 or code > 3 or not math.isfinite(now) or now < before:
            return False
        if given < 0.0 or given > 1.0 or frac < 0.0 or frac > 1.0 or t < -1 or t >= n_topics:
            return False
        if code == 1 and scorable[i] and math.isnan(given):
            return False
        r = slot[k]
        if rows[r, 5] == now:
            return False
        before = now
        applied += 1
        last[r] = k
        spent = time_ms[k]
        rows[r, 4] = rows[r, 4] + float(spent if spent > 0 else 0)
        if math.isnan(rows[r, 5]) or now > rows[r, 5]:
            rows[r, 5] = now
        answered = math.nan
        if code == 1:
            rows[r, 0] = rows[r, 0] + 1.0
            if scorable[i]:
                rows[r, 2] = given
                answered = given
        elif code == 2:
            rows[r, 1] = rows[r, 1] + 1.0
            answered = skip_score
        else:
            seen = 1.0 if math.isnan(frac) else frac
            if seen > rows[r, 3]:
                rows[r, 3] = seen
        if not math.isnan(answered):
            answer(
                item_topic[i] if t < 0 else t, b_of[i], a_of[i], answered, practice[k], now, ability, memory,
                momentum, chains, chain_len, succ_ptr, succ_idx, gain, fail, nov, settings, fsrs, nodes,
                weights, prior_m, prior_v,
            )  # fmt: skip
    carry[0] = applied
    carry[1] = before
    if snap >= 0:
        out_ability[snap] = ability
        out_memory[snap] = memory
        out_momentum[snap] = momentum
        out_rows[snap] = rows
        out_last[snap] = last
        out_events[snap] = applied
    return True


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
    topic_var = settings[3]
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
            update(
                ability,
                momentum,
                chains,
                chain_len,
                succ_ptr,
                succ_idx,
                settings,
                rho * rho,
                t,
                a,
                b,
                sc,
                nodes,
                weights,
                prior_m,
                prior_v,
            )
            if practice:
                g = gain[t]
                f = fail[t]
                ability[t, 0] = ability[t, 0] + (g if f == g else s * g + (1.0 - s) * f) * ready


_JIT = numba.njit(cache=True, nogil=True)
_sigmoid: Any = _JIT(_py_sigmoid)
_log_sigmoid: Any = _JIT(_py_log_sigmoid)
_d0: Any = _JIT(_py_d0)
_belief: Any = _JIT(_py_belief)
#: one answer's update of its targets (compiled with its callers)
update: Any = _JIT(_py_update)
#: one answer (compiled with its callers)
answer: Any = _JIT(_py_answer)
_scratch: Any = _JIT(_py_scratch)
#: the compiled loop of a run's answers (compiled at its first call, or read from numba's cache)
answers: Any = _JIT(_py_answers)
#: events of a run applied at once, holding the GIL throughout (see ``_columns.apply_run``)
run: Any = numba.njit(cache=True)(_py_run)
#: the compiled replay (compiled at its first call, or read from numba's cache)
runs: Any = _JIT(_py_runs)
