r"""BKT's E-step without forgetting, by the moment each sequence's skill is learnt.

With ``forget = 0`` the known state is absorbing, so a sequence of ``T``
answers has only ``T + 1`` hidden paths: the skill is known from the start
(``tau = 0``), learnt just before answer ``tau`` (``1 <= tau <= T - 1``), or
never learnt within the sequence (``tau = T``). Answers before ``tau`` are
answered in U, the others in K, so::

    P(tau) = prior                                          tau = 0
           = (1 - prior) (1 - learn) ** (tau - 1) learn     1 <= tau <= T - 1
           = (1 - prior) (1 - learn) ** (T - 1)             tau = T
    log P(answers | tau) = B + tau log((1 - guess) / slip)
                             + c(tau) log(guess slip / ((1 - slip)(1 - guess)))

where ``c(tau)`` counts the right answers before ``tau`` and ``B = (T - C) log
slip + C log(1 - slip)`` (``C`` right answers in all). The log-weight of every
``tau`` is thus affine in ``(tau, c(tau))`` with per-skill coefficients, and the
posterior over ``tau`` is one segmented softmax. Every expected count of the
E-step is a moment of that posterior:

- P(K at the first answer) = P(tau = 0);
- sum over answers of P(K) = T - E[tau]; of P(K) x answer = C - E[c(tau)];
- over answers with a successor: T - 1 - E[tau] + P(tau = T);
- expected U -> K transitions = 1 - P(tau = 0) - P(tau = T);
- log-likelihood = log sum over tau of P(tau) P(answers | tau).

These are the quantities of the forward-backward smoother
(:mod:`learnloop.tracing._bkt_scan`), computed with a dozen vectorised passes
over the ``T + 1`` positions of every sequence and no recursion. Work is done in
chunks of whole sequences, so temporaries are bounded by the chunk.
"""

from __future__ import annotations

import numpy as np

from ._bkt_scan import chunks
from ._types import BoolArray, FloatArray, IntArray

#: positions (answers plus one per sequence) per chunk
CHUNK = 1 << 15


class _Chunk:
    """Whole sequences: each one's positions ``tau = 0 .. T`` with ``tau`` and ``c(tau)``."""

    def __init__(self, obs: FloatArray, lengths: IntArray, skill: IntArray) -> None:
        width = lengths + 1
        self.start = (np.cumsum(width) - width).astype(np.intp)  # tau = 0 of each sequence
        self.last = (self.start + lengths).astype(np.intp)  # tau = T
        self.width = width
        self.skill = skill
        self.pos_skill = np.repeat(skill, width)
        tau = np.arange(int(width.sum())) - np.repeat(self.start, width)
        self.tau = tau.astype(np.float64)
        shifted = np.zeros(tau.size, dtype=np.int64)  # the answer just before each position
        rows = np.flatnonzero(tau > 0)
        shifted[rows] = obs > 0.5
        csum = np.cumsum(shifted)
        self.right = (csum - np.repeat(csum[self.start], width)).astype(np.float64)  # c(tau)
        self.length = lengths.astype(np.float64)
        self.successors = self.length - 1.0
        self.total_right = self.right[self.last]
        self.single = np.flatnonzero(lengths == 1)  # no transition: counted as exactly 0

    def moments(self, coef: FloatArray, out: FloatArray) -> None:
        """Per sequence (6, R, n) into ``out``: the expected counts and the log-likelihood minus ``B``.

        ``coef`` (5, R, n_skills): slope in ``tau``, slope in ``c(tau)``, the
        log-weight of ``1 <= tau <= T - 1`` at ``tau = c = 0``, the log-weight
        of ``tau = 0``, and ``log learn``.
        """
        slope, right_slope, base, first, log_learn = coef
        w = np.take(slope, self.pos_skill, axis=1)
        w *= self.tau
        tmp = np.take(right_slope, self.pos_skill, axis=1)
        tmp *= self.right
        w += tmp
        w[:, self.start] = np.take(first - base, self.skill, axis=1)
        w[:, self.last] -= np.take(log_learn, self.skill, axis=1)
        top = np.maximum.reduceat(w, self.start, axis=1)
        w -= np.repeat(top, self.width, axis=1)
        np.exp(w, out=w)
        z = np.add.reduceat(w, self.start, axis=1)
        np.multiply(w, self.tau, out=tmp)
        e_tau = np.add.reduceat(tmp, self.start, axis=1)
        e_tau /= z
        np.multiply(w, self.right, out=tmp)
        e_right = np.add.reduceat(tmp, self.start, axis=1)
        e_right /= z
        p_first = w[:, self.start] / z
        p_last = w[:, self.last] / z
        g0, sg, sgo, sgt, x_uk, ll = out
        g0[:] = p_first
        np.subtract(self.length, e_tau, out=sg)
        np.subtract(self.total_right, e_right, out=sgo)
        np.subtract(self.successors, e_tau, out=sgt)  # exactly 0 for one answer: E[tau] = P(tau = T)
        sgt += p_last
        np.subtract(1.0 - p_first, p_last, out=x_uk)
        x_uk[:, self.single] = 0.0
        np.log(z, out=ll)
        ll += top
        ll += np.take(base, self.skill, axis=1)


class Layout:
    """Merged sequences sorted by skill (from :func:`~learnloop.tracing._bkt_scan.merge_identical`), in chunks."""

    def __init__(
        self, obs: FloatArray, lengths: IntArray, skill: IntArray, weight: FloatArray, size: int = CHUNK
    ) -> None:
        self.obs, self.lengths, self.skill, self.weight, self.size = obs, lengths, skill, weight, size
        offsets = np.r_[0, np.cumsum(lengths)]
        self.bounds = chunks(lengths + 1, size)
        self.chunks = [_Chunk(obs[offsets[lo] : offsets[hi]], lengths[lo:hi], skill[lo:hi]) for lo, hi in self.bounds]
        self.runs = np.flatnonzero(np.r_[True, skill[1:] != skill[:-1]]) if skill.size else np.zeros(0, np.intp)
        self.run_skill = skill[self.runs]
        self.right = np.add.reduceat(obs, offsets[:-1]) if lengths.size else np.zeros(0)
        self.length = lengths.astype(np.float64)

    def keep(self, running: BoolArray) -> Layout:
        """Only the given sequences."""
        rows = np.repeat(running, self.lengths)
        return Layout(self.obs[rows], self.lengths[running], self.skill[running], self.weight[running], self.size)

    def e_step(self, prm: FloatArray) -> FloatArray:
        """Weighted expected counts and log-likelihood per skill (7, R, n_skills) under ``prm`` (5, R, n_skills).

        Rows as :meth:`learnloop.tracing.bkt._Layout.e_step`: P(K) at a
        sequence's start; sum of P(K); of P(K) x answer; of P(K) at answers with
        a successor; expected U->K and K->U (0 here) transitions; log-likelihood.
        """
        prior, learn, guess, slip, _ = prm
        log_slip, log_hit = np.log(slip), np.log1p(-slip)
        log_guess, log_miss = np.log(guess), np.log1p(-guess)
        log_learn, log_stay = np.log(learn), np.log1p(-learn)
        base = np.log1p(-prior) + log_learn - log_stay
        coef = np.stack([log_stay + log_miss - log_slip, log_guess + log_slip - log_hit - log_miss, base,
                         np.log(prior), log_learn])  # fmt: skip
        r = prior.shape[0]
        per_seq = np.empty((6, r, self.lengths.size))
        for (lo, hi), chunk in zip(self.bounds, self.chunks):
            chunk.moments(coef, per_seq[:, :, lo:hi])
        # log P(answers | tau) shares B = (T - C) log slip + C log(1 - slip) over tau
        wrong = self.length - self.right
        per_seq[5] += np.take(log_slip, self.skill, axis=1) * wrong
        per_seq[5] += np.take(log_hit, self.skill, axis=1) * self.right
        per_seq *= self.weight
        acc = np.zeros((7, *prm.shape[1:]))
        if self.runs.size:
            sums = np.add.reduceat(per_seq, self.runs, axis=2)
            acc[:5, :, self.run_skill] = sums[:5]
            acc[6][:, self.run_skill] = sums[5]
        return acc
