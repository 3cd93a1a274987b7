r"""Bayesian Knowledge Tracing (BKT): a two-state hidden Markov model per skill.

A learner either knows a skill (state K) or not (U). Before the first attempt
P(K) = ``prior``; between attempts an unknown skill is learnt with probability
``learn`` and a known one forgotten with probability ``forget`` (0 in classic
BKT). An attempt is correct with probability ``1 - slip`` in K and ``guess`` in U.

Filtering one observation (correct :math:`o \in \{0, 1\}`) from the belief
:math:`k = P(K)`::

    e_K = (1 - slip) if o else slip;   e_U = guess if o else (1 - guess)
    k'  = k e_K / (k e_K + (1 - k) e_U)              # condition on the answer
    k'' = k' (1 - forget) + (1 - k') learn           # then move one step on

The fit is Baum-Welch EM over many sequences at once. Sequences are sorted by
length (longest first), so the sequences still running at step ``t`` are the
first ``n_active[t]``; their answers at step ``t`` are stored one after the
other in a flat array (``flat_obs[step_ptr[t]:step_ptr[t + 1]]``), with no
padding: memory grows with the number of answers, not with the longest
sequence times the number of sequences. Each time step is a handful of numpy
operations over every (restart, running sequence) pair, and all skills are
fitted together, each with its own parameters. Identical
sequences of a skill are merged into one weighted column first, and the
random restarts run side by side along an extra axis. ``guess`` and
``slip`` are bounded by ``max_guess`` / ``max_slip``: 0.5 by default, the
guard against the degenerate solution where "knowing" makes a learner answer
worse than not knowing (on validation folds of the ASSISTments and STATICS
benchmark files it beat the tighter 0.3 by 0.002–0.014 AUC and came within
0.003 of no bound).

>>> params = BKTParams(prior=0.3, learn=0.2, guess=0.2, slip=0.1)
>>> round(float(bkt_p_correct(0.3, params)), 4)
0.41
>>> round(float(bkt_step(0.3, 1, params)), 4)
0.7268
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ._ragged import _answers, _steps, _time_major
from ._types import ArrayLike, BoolArray, FloatArray, IntArray

__all__ = ["BKT", "BKTParams", "Sequences", "bkt_p_correct", "bkt_step", "predict_sequences"]

_MIN_P = 1e-4


@dataclass(frozen=True, slots=True)
class BKTParams:
    """The five BKT probabilities of one skill."""

    prior: float
    learn: float
    guess: float
    slip: float
    forget: float = 0.0

    def __post_init__(self) -> None:
        bad = [f"{k}={v!r}" for k, v in asdict(self).items() if not 0.0 <= float(v) <= 1.0]
        if bad:
            raise ValueError("BKT probabilities must lie in [0, 1]: " + ", ".join(bad))

    def to_dict(self) -> dict[str, float]:
        """The parameters as a plain dict (JSON-ready)."""
        return {k: float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, float]) -> BKTParams:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: float(v) for k, v in data.items()})

    def as_array(self) -> FloatArray:
        """``[prior, learn, guess, slip, forget]``."""
        return np.array([self.prior, self.learn, self.guess, self.slip, self.forget])


def bkt_p_correct(p_known: ArrayLike, params: BKTParams) -> FloatArray:
    """P(next attempt correct) = k (1 - slip) + (1 - k) guess."""
    k = np.asarray(p_known, dtype=np.float64)
    return k * (1.0 - params.slip) + (1.0 - k) * params.guess


def bkt_step(p_known: ArrayLike, correct: ArrayLike, params: BKTParams) -> FloatArray:
    """Condition P(known) on one observed answer, then apply one transition.

    Works element-wise on arrays (one belief per learner).
    """
    k = np.asarray(p_known, dtype=np.float64)
    o = np.asarray(correct, dtype=np.float64)
    e_k = params.slip + o * (1.0 - 2.0 * params.slip)
    e_u = (1.0 - params.guess) + o * (2.0 * params.guess - 1.0)
    num = k * e_k
    post = num / (num + (1.0 - k) * e_u)
    return post * (1.0 - params.forget) + (1.0 - post) * params.learn


@dataclass(frozen=True, eq=False)
class Sequences:
    """Binary answer sequences, one per (skill, student), in a flat time-major layout.

    Sequences are sorted by decreasing length, so the sequences still running
    at step ``t`` are the first ``n_active[t]``; their answers at step ``t``
    are ``flat_obs[step_ptr[t]:step_ptr[t + 1]]`` (sequence ``j``'s at
    position ``step_ptr[t] + j``), and ``flat_index`` maps each back to the
    position in the event arrays given to :meth:`from_events`. ``obs`` and
    ``event_index`` give the padded ``(max_len, n_sequences)`` forms on demand
    (for inspection: they take max_len x n_sequences memory; the fit never
    builds them).
    """

    flat_obs: FloatArray
    flat_index: IntArray
    step_ptr: IntArray
    lengths: IntArray
    skill: IntArray
    student: IntArray
    n_skills: int

    @property
    def n_active(self) -> IntArray:
        """Number of sequences still running at each time step."""
        return np.diff(self.step_ptr)

    @property
    def max_len(self) -> int:
        """The longest sequence's length."""
        return int(self.step_ptr.size - 1)

    def _dense(self, flat: np.ndarray, fill: float) -> np.ndarray:
        out = np.full((self.max_len, self.lengths.size), fill, dtype=flat.dtype)
        t, j = _steps(self.lengths)
        out[t, j] = flat[self.step_ptr[t] + j]
        return out

    @property
    def obs(self) -> FloatArray:
        """``obs[t, j]``: the t-th answer of sequence ``j`` (0 on padding)."""
        return self._dense(self.flat_obs, 0.0)

    @property
    def event_index(self) -> IntArray:
        """``event_index[t, j]``: the event behind ``obs[t, j]`` (-1 on padding)."""
        return self._dense(self.flat_index, -1)

    @property
    def valid(self) -> BoolArray:
        """``(max_len, n_sequences)`` mask of real (not padded) answers."""
        return self.lengths[None, :] > np.arange(self.max_len)[:, None]

    @classmethod
    def from_events(
        cls,
        skill: ArrayLike,
        student: ArrayLike,
        correct: ArrayLike,
        *,
        n_skills: int | None = None,
    ) -> Sequences:
        """Group events (given in time order) into one sequence per (skill, student).

        ``correct`` may be boolean, 0/1 or a score in [0, 1] (thresholded at 0.5).
        Student indices may be any non-negative integers (pairs are grouped by
        value, not by a dense product of skills and students).

        >>> seqs = Sequences.from_events([0, 0, 1, 0], [7, 7, 7, 8], [1, 0, 1, 1])
        >>> seqs.obs.T.tolist(), seqs.lengths.tolist(), seqs.skill.tolist()
        ([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], [2, 1, 1], [0, 0, 1])
        """
        sk = np.asarray(skill, dtype=np.int64).ravel()
        st = np.asarray(student, dtype=np.int64).ravel()
        ok = (np.asarray(correct, dtype=np.float64).ravel() >= 0.5).astype(np.float64)
        if not sk.size == st.size == ok.size:
            raise ValueError(f"skill, student and correct differ in length: {sk.size}, {st.size}, {ok.size}")
        if sk.size and (sk.min() < 0 or st.min() < 0):
            raise ValueError("skill and student indices must be non-negative")
        k = int(sk.max()) + 1 if sk.size else 0
        n_skills = k if n_skills is None else n_skills
        if k > n_skills:
            raise ValueError(f"skill index {k - 1} out of range for n_skills={n_skills}")
        order = np.lexsort((st, sk))  # stable: time order kept within each (skill, student)
        sk_o, st_o = sk[order], st[order]
        new_group = np.ones(order.size, dtype=bool)
        new_group[1:] = (sk_o[1:] != sk_o[:-1]) | (st_o[1:] != st_o[:-1])
        first = np.flatnonzero(new_group)
        counts = np.diff(np.r_[first, order.size]).astype(np.intp)
        # longest first (ties by skill, then student) so the running sequences form a prefix
        rank = np.lexsort((st_o[first], sk_o[first], -counts))
        starts = first[rank]
        lengths = counts[rank]
        t, j = _steps(lengths)
        events = order[starts[j] + t]  # sequence-major: sequence 0's events, then sequence 1's, ...
        flat_index, step_ptr = _time_major(events, lengths)
        return cls(
            flat_obs=ok[flat_index],
            flat_index=flat_index.astype(np.intp),
            step_ptr=step_ptr,
            lengths=lengths,
            skill=sk_o[starts].astype(np.intp),
            student=st_o[starts].astype(np.intp),
            n_skills=n_skills,
        )


def _forward(
    obs: FloatArray, step_ptr: IntArray, prm: FloatArray, *, keep: bool
) -> tuple[list[FloatArray], list[FloatArray], FloatArray]:
    """Filter all sequences; prm is (5, R, S). Returns predicted and filtered P(K), loglik (R, S)."""
    prior, learn, guess, slip, forget = prm
    d_k = 1.0 - 2.0 * slip
    c_u = 1.0 - guess
    d_u = 2.0 * guess - 1.0
    stay = 1.0 - forget - learn
    k = prior.copy()
    loglik = np.zeros_like(prior)
    preds: list[FloatArray] = []
    posts: list[FloatArray] = []
    ptr = step_ptr.tolist()
    for t in range(len(ptr) - 1):
        n = ptr[t + 1] - ptr[t]
        if n < k.shape[1]:
            k = k[:, :n]
        o = obs[ptr[t] : ptr[t + 1]]
        e_k = slip[:, :n] + o * d_k[:, :n]
        e_u = c_u[:, :n] + o * d_u[:, :n]
        num = k * e_k
        den = k * e_u
        np.subtract(e_u, den, out=den)
        den += num
        post = num / den
        loglik[:, :n] += np.log(den)
        if keep:
            preds.append(k)
            posts.append(post)
        k = post * stay[:, :n]
        k += learn[:, :n]
    return preds, posts, loglik


def _expected_counts(
    obs: FloatArray, step_ptr: IntArray, prm: FloatArray, preds: list[FloatArray], posts: list[FloatArray]
) -> FloatArray:
    """Backward smoothing; returns soft counts (7, R, S) summed over time."""
    _, learn, _, _, forget = prm
    r, s = prm.shape[1], prm.shape[2]
    acc = np.zeros((7, r, s))
    # 0: g at t=0, 1: sum g, 2: sum g*o, 3: sum g over t with a successor,
    # 4: sum xi(U->K), 5: sum xi(K->U), 6: number of transitions
    g = posts[-1]
    g_next = g
    n_last = g.shape[1]
    forgets = bool(forget.any())
    for t in range(len(posts) - 1, -1, -1):
        n = posts[t].shape[1]
        if t < len(posts) - 1:
            m = n_last
            pk_next = preds[t + 1]
            ratio_k = g_next / pk_next
            g = posts[t].copy()
            if forgets:
                ratio_u = (1.0 - g_next) / (1.0 - pk_next)
                fm = forget[:, :m]
                gm = posts[t][:, :m] * ((1.0 - fm) * ratio_k + fm * ratio_u)
                acc[5][:, :m] += posts[t][:, :m] * fm * ratio_u
            else:
                gm = posts[t][:, :m] * ratio_k
            g[:, :m] = gm
            acc[4][:, :m] += (ratio_k - posts[t][:, :m] * ratio_k) * learn[:, :m]
            acc[3][:, :m] += gm
            acc[6][:, :m] += 1.0
        else:
            g = posts[t]
        acc[1][:, :n] += g
        acc[2][:, :n] += g * obs[step_ptr[t] : step_ptr[t + 1]]
        g_next = g
        n_last = n
    acc[0] = g
    return acc


def _distinct(sequences: Sequences) -> tuple[FloatArray, IntArray, IntArray, IntArray, FloatArray]:
    """Identical (skill, answers) sequences merged into one weighted sequence, longest first.

    Returns the merged sequences' flat time-major answers, ``step_ptr``, lengths,
    skills and weights (how many sequences each stands for).
    """
    lengths, skill = sequences.lengths, sequences.skill
    n = skill.size
    if n == 0:
        return sequences.flat_obs, sequences.step_ptr, lengths, skill, np.ones(0)
    t, j = _steps(lengths)
    answers = sequences.flat_obs[sequences.step_ptr[t] + j]  # sequence-major
    starts = np.cumsum(lengths) - lengths
    picks: list[IntArray] = []
    weights: list[IntArray] = []
    # sequences of one length are contiguous (longest first): hash each length's rows at once
    bounds = np.flatnonzero(np.r_[True, lengths[1:] != lengths[:-1], True])
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        length = int(lengths[lo])
        block = answers[starts[lo] : starts[lo] + length * (hi - lo)].reshape(hi - lo, length)
        bits = np.packbits(block.astype(np.uint8), axis=1)
        head = skill[lo:hi].astype(np.int64).view(np.uint8).reshape(hi - lo, -1)
        rows = np.ascontiguousarray(np.column_stack([head, bits]))
        keys = rows.view(np.dtype((np.void, rows.shape[1]))).ravel()
        _, first, counts = np.unique(keys, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")  # first appearance within the length
        picks.append(lo + first[order])
        weights.append(counts[order])
    pick = np.concatenate(picks)
    weight = np.concatenate(weights).astype(np.float64)
    kept = lengths[pick]
    rows = np.repeat(starts[pick] - np.cumsum(kept) + kept, kept) + np.arange(int(kept.sum()))
    flat, step_ptr = _time_major(answers[rows], kept)
    return flat, step_ptr, kept, skill[pick], weight


class BKT:
    """Fit BKT parameters per skill by EM with random restarts.

    Hyperparameters (keyword-only): ``n_restarts`` random starting points per
    skill; ``max_iter`` EM iterations; ``tol`` stopping threshold on the change
    of the mean log-likelihood per answer; ``max_guess`` / ``max_slip`` upper
    bounds; ``fit_forget`` to learn a forgetting probability (else fixed at 0);
    ``select_after`` short EM runs after which only the best restart of each
    skill is carried on to convergence (``None`` runs every restart to the
    end); ``seed`` for the starting points.

    Learned attributes: ``params_`` (n_skills, 5) array of
    prior/learn/guess/slip/forget, ``log_likelihood_`` (n_skills,),
    ``n_iter_`` and ``converged_``.

    >>> from learnloop.sim import generate_bkt
    >>> data = generate_bkt(n_students=300, n_skills=1, seq_len=20, seed=1)
    >>> model = BKT(seed=0).fit(data.sequences())
    >>> bool(np.abs(model.params_[0, :4] - data.true_params[0, :4]).max() < 0.1)
    True
    """

    def __init__(
        self,
        *,
        n_restarts: int = 5,
        max_iter: int = 100,
        tol: float = 1e-8,
        max_guess: float = 0.5,
        max_slip: float = 0.5,
        fit_forget: bool = False,
        select_after: int | None = 5,
        seed: int | None = 0,
    ) -> None:
        problems = []
        if n_restarts < 1:
            problems.append(f"n_restarts must be >= 1, got {n_restarts}")
        if max_iter < 1:
            problems.append(f"max_iter must be >= 1, got {max_iter}")
        if not 0.0 < max_guess < 1.0 or not 0.0 < max_slip < 1.0:
            problems.append(f"max_guess and max_slip must lie in (0, 1), got {max_guess}, {max_slip}")
        if problems:
            raise ValueError("; ".join(problems))
        self.n_restarts = n_restarts
        self.max_iter = max_iter
        self.tol = tol
        self.max_guess = max_guess
        self.max_slip = max_slip
        self.fit_forget = fit_forget
        self.select_after = select_after
        self.seed = seed

    # -- fitting ---------------------------------------------------------------

    def _initial(self, n_skills: int, rng: np.random.Generator) -> FloatArray:
        r = self.n_restarts
        prm = np.empty((5, r, n_skills))
        prm[0] = rng.uniform(0.05, 0.9, (r, n_skills))
        prm[1] = rng.uniform(0.02, 0.4, (r, n_skills))
        prm[2] = rng.uniform(0.02, self.max_guess, (r, n_skills))
        prm[3] = rng.uniform(0.02, self.max_slip, (r, n_skills))
        prm[4] = rng.uniform(0.0, 0.1, (r, n_skills)) if self.fit_forget else 0.0
        # the first restart starts from a conventional point
        prm[:, 0, :] = np.array(
            [0.4, 0.15, min(0.2, self.max_guess), min(0.1, self.max_slip), 0.05 if self.fit_forget else 0.0]
        )[:, None]
        return prm

    def _m_step(
        self, acc_k: FloatArray, n_seq_k: FloatArray, obs_k: FloatArray, n_obs_k: FloatArray, prm: FloatArray
    ) -> FloatArray:
        g0, sg, sgo, sgt, x_uk, x_ku, n_tr = acc_k
        with np.errstate(invalid="ignore", divide="ignore"):
            prior = g0 / n_seq_k
            learn = x_uk / (n_tr - sgt)
            guess = (obs_k - sgo) / (n_obs_k - sg)
            slip = (sg - sgo) / sg
            forget = x_ku / sgt if self.fit_forget else np.zeros_like(prior)
        new = np.stack([prior, learn, guess, slip, forget])
        new = np.where(np.isfinite(new), new, prm)
        hi = np.array([1 - _MIN_P, 1 - _MIN_P, self.max_guess, self.max_slip, 0.5 if self.fit_forget else 0.0])
        lo = np.array([_MIN_P, _MIN_P, _MIN_P, _MIN_P, 0.0])
        return np.clip(new, lo[:, None, None], hi[:, None, None])

    def fit(self, sequences: Sequences) -> BKT:
        """Fit every skill of ``sequences``; returns ``self``."""
        rng = np.random.default_rng(self.seed)
        k = sequences.n_skills
        obs, step_ptr, lengths, skill, weight = _distinct(sequences)
        per_sequence = np.bincount(np.repeat(np.arange(lengths.size), lengths), weights=_answers(obs, step_ptr, lengths),
                                   minlength=lengths.size)  # fmt: skip
        # per skill: sequences, answers and right answers (a merged sequence counts its weight)
        n_seq_k = _per_skill(np.ones(skill.size), skill, weight, k)
        n_obs_k = _per_skill(lengths.astype(np.float64), skill, weight, k)
        obs_k = _per_skill(np.asarray(per_sequence, dtype=np.float64), skill, weight, k)
        prm_k = self._initial(k, rng)  # (5, R, K)
        ll_prev = np.full((prm_k.shape[1], k), -np.inf)
        n_iter = np.zeros(k, dtype=np.intp)
        done = n_seq_k == 0
        for it in range(self.max_iter):
            if self.select_after is not None and it == self.select_after and prm_k.shape[1] > 1:
                best = ll_prev.argmax(axis=0)
                prm_k = prm_k[:, best, np.arange(k)][:, None, :]
                ll_prev = ll_prev[best, np.arange(k)][None, :]
            prm = prm_k[:, :, skill]
            preds, posts, ll = _forward(obs, step_ptr, prm, keep=True)
            acc = _expected_counts(obs, step_ptr, prm, preds, posts)
            ll_k = _per_skill(ll, skill, weight, k)
            acc_k = _per_skill(acc, skill, weight, k)
            new = self._m_step(acc_k, n_seq_k, obs_k, n_obs_k, prm_k)
            change = np.abs(ll_k - ll_prev).max(axis=0) / np.maximum(n_obs_k, 1)
            now_done = done | (change < self.tol)
            n_iter[~done] += 1
            prm_k = np.where(now_done[None, None, :], prm_k, new)
            ll_prev = np.where(done[None, :], ll_prev, ll_k)  # a finished skill keeps its likelihood
            done = now_done
            if done.all():
                break
            running = ~done[skill]
            if running.mean() < 0.75:  # drop the sequences of finished skills from the passes
                answers = _answers(obs, step_ptr, lengths)[np.repeat(running, lengths)]
                lengths, skill, weight = lengths[running], skill[running], weight[running]
                obs, step_ptr = _time_major(answers, lengths)
        best = ll_prev.argmax(axis=0)
        self.params_ = prm_k[:, best, np.arange(k)].T.copy()
        self.log_likelihood_ = ll_prev[best, np.arange(k)]
        self.n_iter_ = n_iter
        self.converged_ = done
        return self

    # -- prediction ------------------------------------------------------------

    def params_for(self, skill: int) -> BKTParams:
        """The fitted parameters of one skill."""
        return BKTParams(*(float(v) for v in self.params_[skill]))

    def predict_sequences(self, sequences: Sequences) -> FloatArray:
        """One-step-ahead P(correct) for every answer, in the original event order.

        The prediction for an answer uses only the answers before it.
        """
        return predict_sequences(self.params_, sequences)


def _per_skill(x: FloatArray, skill: IntArray, weight: FloatArray, k: int) -> FloatArray:
    """Weighted sums over sequences (last axis) by skill. Each skill's terms are added in
    sequence order, so dropping other skills' sequences does not change a skill's sums."""
    lead = x.shape[:-1]
    rows = int(np.prod(lead))
    index = (np.arange(rows)[:, None] * k + skill[None, :]).ravel()
    sums = np.bincount(index, weights=(x.reshape(rows, -1) * weight).ravel(), minlength=rows * k)
    return np.asarray(sums, dtype=np.float64).reshape(*lead, k)


def predict_sequences(params: ArrayLike, sequences: Sequences) -> FloatArray:
    """One-step-ahead P(correct) of each event given per-skill params (n_skills, 5).

    Returns a flat array aligned with the events given to
    :meth:`Sequences.from_events`.
    """
    p = np.asarray(params, dtype=np.float64)
    prm = p.T[:, None, sequences.skill]
    preds, _, _ = _forward(sequences.flat_obs, sequences.step_ptr, prm, keep=True)
    out = np.full(int(sequences.lengths.sum()), math.nan)
    guess, slip = prm[2, 0], prm[3, 0]
    ptr = sequences.step_ptr
    for t, k in enumerate(preds):
        n = k.shape[1]
        out[sequences.flat_index[ptr[t] : ptr[t + 1]]] = k[0] * (1.0 - slip[:n]) + (1.0 - k[0]) * guess[:n]
    return out
