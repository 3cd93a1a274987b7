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

The fit is Baum-Welch EM over many sequences at once, all skills together,
each with its own parameters. Sequences are stored flat (all answers
concatenated, sequence starts marked by ``Sequences.offsets``): memory grows
with the number of answers, not with the longest sequence times the number of
sequences. Without forgetting (the default) a sequence of ``T`` answers has
only ``T + 1`` hidden paths, one per moment the skill may be learnt, and the
E-step is a segmented softmax over them (:mod:`learnloop.tracing._bkt_onset`);
with forgetting the forward filter and the smoother are segmented parallel
scans (products of 2x2 matrices, forwards and from the end, see
:mod:`learnloop.tracing._bkt_scan`). Neither loops over time steps. Identical
sequences of a skill are merged into one weighted sequence first, and the
random restarts run side by side along an extra axis. ``guess`` and ``slip``
are not bounded beyond (0, 1) by default (``max_guess`` / ``max_slip`` set a
bound; see :class:`BKT`).

>>> params = BKTParams(prior=0.3, learn=0.2, guess=0.2, slip=0.1)
>>> round(float(bkt_p_correct(0.3, params)), 4)
0.41
>>> round(float(bkt_step(0.3, 1, params)), 4)
0.7268
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from . import _bkt_onset as _onset
from . import _bkt_scan as _scan
from ._ragged import ragged_steps
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


def bkt_p_correct(p_known: ArrayLike, params: BKTParams, *, logit: bool = False) -> FloatArray:
    """P(next attempt correct) = k (1 - slip) + (1 - k) guess.

    ``logit=True``: ``p_known`` holds the log-odds of P(known) (see :func:`bkt_step`).
    """
    if logit:
        z = np.asarray(p_known, dtype=np.float64)
        return _sigmoid(z) * (1.0 - params.slip) + _sigmoid(-z) * params.guess
    k = np.asarray(p_known, dtype=np.float64)
    return k * (1.0 - params.slip) + (1.0 - k) * params.guess


def bkt_step(p_known: ArrayLike, correct: ArrayLike, params: BKTParams, *, logit: bool = False) -> FloatArray:
    """Condition P(known) on one observed answer, then apply one transition.

    Works element-wise on arrays (one belief per learner).

    ``logit=True``: ``p_known`` and the result are the log-odds of P(known). Use
    it for a belief kept across a long history: held as a probability, a belief
    reaches exactly 1.0 after a long run of correct answers when ``forget`` is 0
    (1 - P(known) falls below what a float64 near 1 resolves), and from then on no
    wrong answer can lower it, while the exact filter recovers after a few. Log-odds
    keep both tails.

    >>> params = BKTParams(prior=0.3, learn=0.2, guess=0.2, slip=0.1)
    >>> z = bkt_step(math.log(0.3 / 0.7), 1, params, logit=True)
    >>> round(float(1.0 / (1.0 + math.exp(-z))), 4)
    0.7268
    """
    o = np.asarray(correct, dtype=np.float64)
    e_k = params.slip + o * (1.0 - 2.0 * params.slip)
    e_u = (1.0 - params.guess) + o * (2.0 * params.guess - 1.0)
    if logit:
        post = np.asarray(p_known, dtype=np.float64) + np.log(e_k) - np.log(e_u)
        known, unknown = _sigmoid(post), _sigmoid(-post)
        # after the transition: k' = post (1 - forget) + (1 - post) learn, and 1 - k' likewise
        stays = known * (1.0 - params.forget) + unknown * params.learn
        leaves = unknown * (1.0 - params.learn) + known * params.forget
        return np.log(stays) - np.log(leaves)
    k = np.asarray(p_known, dtype=np.float64)
    num = k * e_k
    post_k = num / (num + (1.0 - k) * e_u)
    return post_k * (1.0 - params.forget) + (1.0 - post_k) * params.learn


def _sigmoid(z: np.ndarray) -> FloatArray:
    """1 / (1 + exp(-z)), accurate in both tails."""
    out: FloatArray = np.exp(-np.logaddexp(0.0, -z))
    return out


@dataclass(frozen=True, eq=False)
class Sequences:
    """Binary answer sequences, one per (skill, student), in a flat (ragged) layout.

    All answers are concatenated, sequence after sequence (longest first; ties
    by skill, then student): sequence ``j``'s answers are
    ``flat_obs[offsets[j]:offsets[j + 1]]`` and ``flat_index`` maps each back
    to its position in the event arrays given to :meth:`from_events`. Memory
    grows with the number of answers only. ``obs``, ``event_index`` and
    ``valid`` give padded ``(max_len, n_sequences)`` forms on demand (for
    inspection: they take max_len x n_sequences memory; the fit never builds
    them).
    """

    flat_obs: FloatArray
    flat_index: IntArray
    offsets: IntArray
    lengths: IntArray
    skill: IntArray
    student: IntArray
    n_skills: int

    @property
    def n_active(self) -> IntArray:
        """Number of sequences longer than ``t``, for each step ``t``."""
        counts = np.bincount(self.lengths, minlength=self.max_len + 1)
        return np.asarray(counts[::-1].cumsum()[::-1][1:], dtype=np.intp)

    @property
    def max_len(self) -> int:
        """The longest sequence's length."""
        return int(self.lengths.max()) if self.lengths.size else 0

    def _dense(self, flat: np.ndarray, fill: float) -> np.ndarray:
        out = np.full((self.max_len, self.lengths.size), fill, dtype=flat.dtype)
        t, j = ragged_steps(self.lengths)
        out[t, j] = flat
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

    @staticmethod
    def encode(ids: ArrayLike) -> tuple[IntArray, np.ndarray]:
        """Map arbitrary skill (or student) ids to dense indices: ``(indices, labels)``.

        ``labels[indices[i]] == ids[i]``; ``labels`` is sorted. Use it when skill
        ids are strings, or large or sparse integers: :meth:`from_events` and
        :class:`BKT` take indices ``0 .. n_skills - 1`` and ``params_`` has one
        row per index.

        >>> idx, labels = Sequences.encode(["frac", "add", "frac", 10**12])
        >>> idx.tolist(), labels.tolist()
        ([2, 1, 2, 0], ['1000000000000', 'add', 'frac'])
        """
        labels, indices = np.unique(np.asarray(ids).ravel(), return_inverse=True)
        return indices.astype(np.intp), labels

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
        ``skill`` holds indices ``0 .. n_skills - 1`` (map other ids with
        :meth:`encode`); they need not all occur. Student indices may be any
        non-negative integers (pairs are grouped by value, not by a dense
        product of skills and students).

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
        rank = np.lexsort((st_o[first], sk_o[first], -counts))  # longest first, ties by skill, then student
        starts = first[rank]
        lengths = counts[rank]
        t, j = ragged_steps(lengths)
        events = order[starts[j] + t]  # sequence 0's events, then sequence 1's, ...
        return cls(
            flat_obs=ok[events],
            flat_index=events.astype(np.intp),
            offsets=np.r_[0, np.cumsum(lengths)].astype(np.intp),
            lengths=lengths,
            skill=sk_o[starts].astype(np.intp),
            student=st_o[starts].astype(np.intp),
            n_skills=n_skills,
        )


class _Layout:
    """The fit's working copy: merged sequences sorted by skill, flat, cut into chunks of whole sequences."""

    def __init__(self, obs: FloatArray, lengths: IntArray, skill: IntArray, weight: FloatArray, width: int) -> None:
        self.obs, self.lengths, self.skill, self.weight, self.width = obs, lengths, skill, weight, width
        offsets = np.r_[0, np.cumsum(lengths)]
        self.chunks = [
            _scan.Chunk(obs[offsets[lo] : offsets[hi]], lengths[lo:hi], skill[lo:hi], weight[lo:hi], width)
            for lo, hi in _scan.chunks(lengths)
        ]

    def keep(self, running: BoolArray) -> _Layout:
        """Only the given sequences."""
        rows = np.repeat(running, self.lengths)
        return _Layout(self.obs[rows], self.lengths[running], self.skill[running], self.weight[running], self.width)

    def e_step(self, prm: FloatArray) -> FloatArray:
        """Weighted expected counts and log-likelihood per skill (7, R, n_skills) under ``prm`` (5, R, n_skills)."""
        acc = np.zeros((7, *prm.shape[1:]))
        tabs = _scan.tables(prm, self.width)
        for chunk in self.chunks:
            acc[:, :, chunk.run_skill] += chunk.e_step(prm, tabs)  # a chunk's runs are distinct skills
        return acc


class BKT:
    """Fit BKT parameters per skill by EM with random restarts.

    Hyperparameters (keyword-only): ``n_restarts`` random starting points per
    skill; ``max_iter`` EM iterations; ``tol`` stopping threshold on the change
    of the mean log-likelihood per answer; ``max_guess`` / ``max_slip`` upper
    bounds on guess and slip, in (0, 1]: 1 means no bound (as in pyBKT), a
    bound of 0.5 or lower rules out the degenerate solution where "knowing"
    makes a learner answer worse than not knowing; ``fit_forget`` to learn a
    forgetting probability (else fixed at 0); ``select_after`` short EM runs
    after which only the best restart of each skill is carried on to
    convergence (``None`` runs every restart to the end); ``seed`` for the
    starting points.

    The default, no bound (1), was chosen among 0.3, 0.5 and 1 by validation
    AUC on the five ``*_train{k}`` / ``*_valid{k}`` folds of the DKVMN
    ASSISTments 2009, ASSISTments 2015 and STATICS files and on five folds (by
    student) of the DKT ASSISTments builder training file; the test files were
    not used. Mean AUC for 0.3 / 0.5 / 1: ASSIST09 0.7127 / 0.7145 / 0.7144,
    ASSIST15 0.7006 / 0.7022 / 0.7022, STATICS 0.6735 / 0.6928 / 0.6994,
    builder 0.7704 / 0.7746 / 0.7749.

    Skills are indices ``0 .. n_skills - 1`` (see :meth:`Sequences.encode` for
    other ids); only the skills that occur are fitted, so unused indices cost
    nothing but their row of ``params_`` (the starting point
    prior 0.4, learn 0.15, guess 0.2, slip 0.1).

    Learned attributes: ``params_`` (n_skills, 5) array of
    prior/learn/guess/slip/forget, ``log_likelihood_`` (n_skills,),
    ``n_iter_``, ``converged_`` and ``fitted_`` (the skills that had answers).
    :meth:`params` gives them by name, per fitted skill (as pyBKT's ``params()``).

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
        max_guess: float = 1.0,
        max_slip: float = 1.0,
        fit_forget: bool = False,
        select_after: int | None = 5,
        seed: int | None = 0,
    ) -> None:
        problems = []
        if n_restarts < 1:
            problems.append(f"n_restarts must be >= 1, got {n_restarts}")
        if max_iter < 1:
            problems.append(f"max_iter must be >= 1, got {max_iter}")
        if not 0.0 < max_guess <= 1.0 or not 0.0 < max_slip <= 1.0:
            problems.append(f"max_guess and max_slip must lie in (0, 1], got {max_guess}, {max_slip}")
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

    def _start(self) -> FloatArray:
        """The conventional starting point (also the parameters of skills without data)."""
        f = 0.05 if self.fit_forget else 0.0
        return np.array([0.4, 0.15, min(0.2, self.max_guess), min(0.1, self.max_slip), f])

    def _initial(self, n_skills: int, rng: np.random.Generator) -> FloatArray:
        r = self.n_restarts
        prm = np.empty((5, r, n_skills))
        prm[0] = rng.uniform(0.05, 0.9, (r, n_skills))
        prm[1] = rng.uniform(0.02, 0.4, (r, n_skills))
        prm[2] = rng.uniform(0.02, min(self.max_guess, 0.5), (r, n_skills))
        prm[3] = rng.uniform(0.02, min(self.max_slip, 0.5), (r, n_skills))
        prm[4] = rng.uniform(0.0, 0.1, (r, n_skills)) if self.fit_forget else 0.0
        prm[:, 0, :] = self._start()[:, None]  # the first restart starts from the conventional point
        return prm

    def _m_step(
        self, acc_k: FloatArray, n_seq_k: FloatArray, obs_k: FloatArray, n_obs_k: FloatArray, prm: FloatArray
    ) -> FloatArray:
        g0, sg, sgo, sgt, x_uk, x_ku, _ = acc_k
        n_tr = n_obs_k - n_seq_k
        with np.errstate(invalid="ignore", divide="ignore"):
            prior = g0 / n_seq_k
            learn = x_uk / (n_tr - sgt)
            guess = (obs_k - sgo) / (n_obs_k - sg)
            slip = (sg - sgo) / sg
            forget = x_ku / sgt if self.fit_forget else np.zeros_like(prior)
        new = np.stack([prior, learn, guess, slip, forget])
        new = np.where(np.isfinite(new), new, prm)
        top = 1.0 - _MIN_P
        hi = np.array([top, top, min(self.max_guess, top), min(self.max_slip, top), 0.5 if self.fit_forget else 0.0])
        lo = np.array([_MIN_P, _MIN_P, _MIN_P, _MIN_P, 0.0])
        return np.clip(new, lo[:, None, None], hi[:, None, None])  # type: ignore[no-any-return]

    def fit(self, sequences: Sequences) -> BKT:
        """Fit every skill of ``sequences``; returns ``self``."""
        rng = np.random.default_rng(self.seed)
        used, skill = np.unique(sequences.skill, return_inverse=True)  # fit only the skills that occur
        k = used.size
        obs, lengths, skill, weight = _scan.merge_identical(sequences.flat_obs, sequences.lengths, skill.ravel())
        data: _Layout | _onset.Layout
        if self.fit_forget:
            # answers per block of the filter: tables of 2 ** (width + 1) products per skill and restart stay small
            width = int(np.clip(np.log2(max(obs.size / (k * self.n_restarts + 1), 2.0)) - 1, 1, 6))
            data = _Layout(obs, lengths, skill, weight, width)
        else:  # no forgetting: the E-step by the moment of learning
            data = _onset.Layout(obs, lengths, skill, weight)
        per_sequence = np.add.reduceat(obs, np.r_[0, np.cumsum(lengths)[:-1]]) if lengths.size else np.zeros(0)
        # per skill: sequences, answers and right answers (a merged sequence counts its weight)
        n_seq_k = np.asarray(np.bincount(skill, weights=weight, minlength=k), dtype=np.float64)
        n_obs_k = np.asarray(np.bincount(skill, weights=weight * lengths, minlength=k), dtype=np.float64)
        obs_k = np.asarray(np.bincount(skill, weights=weight * per_sequence, minlength=k), dtype=np.float64)
        prm_k = self._initial(k, rng)  # (5, R, K)
        ll_prev = np.full((prm_k.shape[1], k), -np.inf)
        n_iter = np.zeros(k, dtype=np.intp)
        done = n_seq_k == 0
        for it in range(self.max_iter):
            if self.select_after is not None and it == self.select_after and prm_k.shape[1] > 1:
                best = ll_prev.argmax(axis=0)
                prm_k = prm_k[:, best, np.arange(k)][:, None, :]
                ll_prev = ll_prev[best, np.arange(k)][None, :]
            acc_k = data.e_step(prm_k)
            ll_k = acc_k[6]
            new = self._m_step(acc_k, n_seq_k, obs_k, n_obs_k, prm_k)
            change = np.abs(ll_k - ll_prev).max(axis=0) / np.maximum(n_obs_k, 1)
            now_done = done | (change < self.tol)
            n_iter[~done] += 1
            prm_k = np.where(now_done[None, None, :], prm_k, new)
            ll_prev = np.where(done[None, :], ll_prev, ll_k)  # a finished skill keeps its likelihood
            done = now_done
            if done.all():
                break
            running = ~done[data.skill]
            if running.mean() < 0.75:  # drop the sequences of finished skills from the passes
                data = data.keep(running)
        best = ll_prev.argmax(axis=0)
        self.params_ = np.tile(self._start(), (sequences.n_skills, 1))
        self.params_[used] = prm_k[:, best, np.arange(k)].T
        self.log_likelihood_ = np.zeros(sequences.n_skills)
        self.log_likelihood_[used] = ll_prev[best, np.arange(k)]
        self.n_iter_ = np.zeros(sequences.n_skills, dtype=np.intp)
        self.n_iter_[used] = n_iter
        self.converged_ = np.ones(sequences.n_skills, dtype=bool)
        self.converged_[used] = done
        self.fitted_ = np.zeros(sequences.n_skills, dtype=bool)
        self.fitted_[used] = True
        return self

    def params(self, skill_ids: Sequence[Hashable] | None = None) -> dict[Hashable, dict[str, float]]:
        """The fitted parameters by name, per skill that had answers: ``{skill: {"prior": ..,
        "learn": .., "guess": .., "slip": .., "forget": ..}}``, skills in index order. A skill is
        its index, or ``skill_ids[index]`` when given (e.g. the ``labels`` of :meth:`Sequences.encode`).

        >>> model = BKT(seed=0).fit(Sequences.from_events([1, 1, 1], [0, 0, 0], [0, 1, 1], n_skills=3))
        >>> list(model.params(["add", "sub", "mul"]))
        ['sub']
        >>> sorted(model.params()[1])
        ['forget', 'guess', 'learn', 'prior', 'slip']
        """
        fitted = getattr(self, "fitted_", None)
        if fitted is None:
            raise ValueError("fit the model first")
        if skill_ids is not None and len(skill_ids) != fitted.size:
            raise ValueError(f"{len(skill_ids)} skill ids given for {fitted.size} skills")
        return {
            (k if skill_ids is None else skill_ids[k]): self.params_for(k).to_dict()
            for k in np.flatnonzero(fitted).tolist()
        }

    # -- prediction ------------------------------------------------------------

    def params_for(self, skill: int) -> BKTParams:
        """The fitted parameters of one skill."""
        return BKTParams(*(float(v) for v in self.params_[skill]))

    def predict_sequences(self, sequences: Sequences) -> FloatArray:
        """One-step-ahead P(correct) for every answer, in the original event order.

        The prediction for an answer uses only the answers before it.
        """
        return predict_sequences(self.params_, sequences)


def predict_sequences(params: ArrayLike, sequences: Sequences) -> FloatArray:
    """One-step-ahead P(correct) of each event given per-skill params (n_skills, 5).

    Returns a flat array aligned with the events given to
    :meth:`Sequences.from_events`.
    """
    p = np.asarray(params, dtype=np.float64).T[:, None, :]  # (5, 1, n_skills)
    out = np.full(sequences.flat_obs.size, math.nan)
    offsets = sequences.offsets
    for lo, hi in _scan.chunks(sequences.lengths):
        a, b = offsets[lo], offsets[hi]
        lengths, skill = sequences.lengths[lo:hi], sequences.skill[lo:hi]
        used, local = np.unique(skill, return_inverse=True)
        prm = p[:, :, used]
        k = _scan.predicted(sequences.flat_obs[a:b], lengths, local.ravel(), prm)
        guess, slip = np.repeat(prm[2, 0, local.ravel()], lengths), np.repeat(prm[3, 0, local.ravel()], lengths)
        out[sequences.flat_index[a:b]] = k * (1.0 - slip) + (1.0 - k) * guess
    return out
