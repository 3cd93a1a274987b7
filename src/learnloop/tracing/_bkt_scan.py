r"""BKT's forward filter and smoother on flat (ragged) sequences, by segmented parallel scans.

Layout: every answer of every sequence in one flat array, sequence after
sequence (``pos`` is an answer's index in its sequence).

Forward. With states (K, U), observation likelihoods ``e = (e_K, e_U)`` and the
transition matrix ``A = [[1 - forget, forget], [learn, 1 - learn]]``, the
unnormalised forward row vector obeys ``alpha_{t+1} = alpha_t diag(e_t) A``: a
product of 2x2 matrices ``M_t = diag(e_t) A``, of which each skill has only two
(a right and a wrong answer). Each sequence is cut into blocks of ``width``
answers; an answer's product from its block's start depends only on the
pattern of answers so far in the block, so it is read from a table of all
``2 ** (width + 1)`` patterns per skill (:func:`tables`). The blocks' products
are chained by a segmented Hillis-Steele scan (:func:`scan_matrices`): in pass
``d = 1, 2, 4, ...`` every block ``d`` or more into its sequence takes the
product of the block ``d`` before and its own, so after ``ceil(log2(T / width))``
vectorised passes every block holds the product from its sequence's start.
Every product is divided by the sum of its entries (the direction is all that
is needed) and floored at a tiny value, so nothing underflows to 0/0.

Backward. ``beta_t = M_t ... M_{T-1} 1`` is the same kind of product read from
the end: the forward walk over every sequence reversed, with the transposed
matrices and the uniform start (1/2, 1/2). With the filtered ``P(K_t)`` and
``beta_{t+1}`` the expected state ``P(K_t | all answers)`` and transitions
follow answer by answer, with no recursion left.

Work is done in chunks of whole sequences, so temporaries are bounded by the
chunk, not by the data; there is no loop over time steps.
"""

from __future__ import annotations

import numpy as np

from ._types import FloatArray, IntArray

#: answers per chunk (temporaries are a few dozen arrays of this size times the restarts)
CHUNK = 1 << 14
#: least entry of a normalised product: keeps every product of two non-zero (a state's
#: belief never rounds to a certainty the other factor's rounding denies)
_FLOOR = 1e-150


def positions(lengths: IntArray) -> tuple[IntArray, IntArray]:
    """``pos`` (index in its sequence) and ``rem`` (answers after it) of every flat answer."""
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    pos = np.arange(total) - starts
    rem = np.repeat(lengths, lengths) - 1 - pos
    return pos.astype(np.intp), rem.astype(np.intp)


def chunks(lengths: IntArray, size: int = CHUNK) -> list[tuple[int, int]]:
    """Sequence ranges ``[lo, hi)`` of about ``size`` answers each (a longer sequence makes its own)."""
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if ends.size else 0
    cuts = np.unique(np.searchsorted(ends, np.arange(size, total, size), side="left") + 1)
    bounds = [0, *cuts[cuts < lengths.size].tolist(), lengths.size]
    return [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]


def scan_matrices(m: FloatArray, pos: IntArray) -> None:
    """In place: segmented inclusive prefix products of 2x2 matrices ``m`` (4, R, n), each normalised to sum 1.

    ``pos`` is each matrix's index in its segment. Pass ``d`` multiplies every
    matrix with ``pos >= d`` by the one ``d`` before it (contiguous slices, masked).
    """
    top = int(pos.max()) if pos.size else 0
    d = 1
    while d <= top:
        a, b = m[:, :, :-d], m[:, :, d:]
        c = np.empty_like(b)
        np.multiply(a[0], b[0], out=c[0])
        c[0] += a[1] * b[2]
        np.multiply(a[0], b[1], out=c[1])
        c[1] += a[1] * b[3]
        np.multiply(a[2], b[0], out=c[2])
        c[2] += a[3] * b[2]
        np.multiply(a[2], b[1], out=c[3])
        c[3] += a[3] * b[3]
        c /= c.sum(axis=0)
        np.maximum(c, _FLOOR, out=c)
        np.copyto(b, c, where=pos[d:] >= d)
        d *= 2


def emissions(obs: FloatArray, guess: FloatArray, slip: FloatArray) -> tuple[FloatArray, FloatArray]:
    """P(answer | K) and P(answer | U) of each answer."""
    e_k = slip + obs * (1.0 - 2.0 * slip)
    e_u = (1.0 - guess) + obs * (2.0 * guess - 1.0)
    return e_k, e_u


def tables(prm: FloatArray, width: int) -> tuple[FloatArray, FloatArray]:
    """Products of ``M(o_0) ... M(o_{n-1})`` (and of the transposed ``M``) for every answer pattern of
    1 to ``width`` answers, per restart and skill: (4, R, K * 2**(width + 1)), normalised to sum 1.

    Pattern ``(o_0, ..., o_{n-1})`` sits at ``skill * 2**(width + 1) + (1 << n | sum o_i << i)``.
    """
    _, learn, guess, slip, forget = prm
    r, k = learn.shape
    t = np.zeros((4, 2, r, k, 2 << width))  # axis 1: M, then its transpose
    for o in (0, 1):
        e_k, e_u = emissions(np.full(guess.shape, float(o)), guess, slip)
        t[0, :, :, :, 2 + o] = e_k * (1.0 - forget)
        t[3, :, :, :, 2 + o] = e_u * (1.0 - learn)
        t[1, 0, :, :, 2 + o] = t[2, 1, :, :, 2 + o] = e_k * forget
        t[2, 0, :, :, 2 + o] = t[1, 1, :, :, 2 + o] = e_u * learn
    for n in range(1, width):  # patterns of n + 1 answers from those of n
        a = t[..., 1 << n : 2 << n]
        b = t[..., 2:4][..., None, :]  # (4, 2, R, K, 1, 2): the last answer's matrix
        c = t[..., 2 << n : 4 << n].reshape(4, 2, r, k, 2, 1 << n)  # [..., o, pattern]
        an = a[..., None, :]
        bo = np.moveaxis(b, -1, -2)  # (4, 2, R, K, 2, 1)
        c[0] = an[0] * bo[0] + an[1] * bo[2]
        c[1] = an[0] * bo[1] + an[1] * bo[3]
        c[2] = an[2] * bo[0] + an[3] * bo[2]
        c[3] = an[2] * bo[1] + an[3] * bo[3]
        c /= c.sum(axis=0)
    np.maximum(t, _FLOOR, out=t)
    return t[:, 0].reshape(4, r, -1), t[:, 1].reshape(4, r, -1)


class Walk:
    """Per-answer helpers for filtering a flat layout in blocks of ``width`` answers.

    Every sequence is cut into blocks of ``width`` answers from its start; an
    answer's product from its block's start is read from :func:`tables` (by the
    pattern of answers so far in its block), the blocks' products are chained by
    :func:`scan_matrices`, which thus runs over ``1 / width`` of the answers.
    """

    def __init__(self, obs: FloatArray, lengths: IntArray, answer_skill: IntArray, width: int) -> None:
        pos, _ = positions(lengths)
        j = pos % width
        bits = (obs > 0.5).astype(np.int64) << j
        csum = np.cumsum(bits)
        start = np.flatnonzero(j == 0)
        block = np.cumsum(j == 0) - 1
        before = (csum - bits)[start][block]
        self.index = (answer_skill * (2 << width) + (1 << (j + 1)) + (csum - before)).astype(np.intp)
        self.block = block.astype(np.int32)
        self.inner = j > 0
        last = j == width - 1
        last[np.cumsum(lengths) - 1] = True
        self.last = np.flatnonzero(last)
        self.block_pos = (pos[start] // width).astype(np.intp)
        self.later = np.flatnonzero(self.block_pos > 0)
        self.block_seq = np.repeat(np.arange(lengths.size), (lengths + width - 1) // width).astype(np.int32)

    def predicted(self, table: FloatArray, k0: FloatArray) -> FloatArray:
        """P(first state) before each answer (R, n) from ``k0`` (R, n_sequences) at the sequences' starts."""
        p = np.take(table, self.index, axis=2)  # each answer's product from its block's start
        s = np.take(p, self.last, axis=2)
        scan_matrices(s, self.block_pos)  # each block's product from its sequence's start
        kb = np.take(k0, self.block_seq, axis=1)
        later = self.later
        if later.size:
            k, prev = kb[:, later], s[:, :, later - 1]
            top = k * prev[0] + (1.0 - k) * prev[2]
            kb[:, later] = top / (top + k * prev[1] + (1.0 - k) * prev[3])
        k = np.take(kb, self.block, axis=1)
        u = 1.0 - k
        top = k * p[0]
        top += u * p[2]
        bottom = k * p[1]
        bottom += u * p[3]
        bottom += top
        top /= bottom  # the belief after each answer
        np.copyto(k[:, 1:], top[:, :-1], where=self.inner[1:])
        return k


class Chunk:
    """Whole sequences of a skill-sorted layout, with what an E-step over them needs."""

    def __init__(self, obs: FloatArray, lengths: IntArray, skill: IntArray, weight: FloatArray, width: int) -> None:
        self.obs = obs
        self.seq_skill = skill
        answer_skill = np.repeat(skill, lengths)
        self.runs = np.flatnonzero(np.r_[True, answer_skill[1:] != answer_skill[:-1]])
        self.seq_runs = np.flatnonzero(np.r_[True, skill[1:] != skill[:-1]])
        self.run_skill = answer_skill[self.runs]
        self.run_length = np.diff(np.r_[self.runs, obs.size])
        self.emission = (answer_skill * 2 + (obs > 0.5)).astype(np.intp)
        self.weight = np.repeat(weight, lengths)
        self.seq_weight = weight
        ends = np.cumsum(lengths)
        self.first = ends - lengths
        self.end = ends - 1
        # every sequence reversed: reversed[i] = obs[rev[i]] (and obs[i] = reversed[rev[i]])
        self.rev = np.repeat(ends - 1 + self.first, lengths) - np.arange(obs.size)
        self.fwd = Walk(obs, lengths, answer_skill, width)
        self.bwd = Walk(obs[self.rev], lengths, answer_skill, width)

    def e_step(self, prm: FloatArray, tabs: tuple[FloatArray, FloatArray]) -> FloatArray:
        """Weighted sums (6, R, n_runs) over runs of one skill under ``prm`` (5, R, n_skills).

        Rows: P(K) at a sequence's start; sum of P(K); of P(K) x answer; of P(K)
        at answers with a successor; expected U->K and K->U transitions;
        log-likelihood.
        """
        prior, learn, guess, slip, forget = prm
        r = prior.shape[0]
        forgets = bool(forget.any())
        pk = self.fwd.predicted(tabs[0], prior[:, self.seq_skill])
        # P(answers after t | K_{t+1}) normalised over the two states; 1/2 at a sequence's end
        bk = np.take(self.bwd.predicted(tabs[1], np.full((r, self.seq_skill.size), 0.5)), self.rev, axis=1)
        np.maximum(bk, 1e-300, out=bk)  # where the filter rounded P(K) to 1, the smoother must not deny K
        e_k = np.take(np.stack([slip, 1.0 - slip], axis=2).reshape(r, -1), self.emission, axis=1)
        e_u = np.take(np.stack([1.0 - guess, guess], axis=2).reshape(r, -1), self.emission, axis=1)
        lrn = np.repeat(learn[:, self.run_skill], self.run_length, axis=1)
        out = np.empty((5, *pk.shape))  # P(K), P(K) x answer, U -> K, K -> U, log-likelihood
        g, g_obs, x_uk, x_ku, loglik = out
        post = pk * e_k  # then divided by P(answer | earlier answers)
        den = (1.0 - pk) * e_u
        den += post
        np.log(den, out=loglik)
        post /= den
        np.multiply(post, bk, out=g)  # K -> K (times 1 - forget)
        unknown = 1.0 - post
        np.multiply(unknown, lrn, out=x_uk)
        x_uk *= bk
        z = 1.0 - bk
        z *= 1.0 - lrn
        z *= unknown  # U -> U
        z += x_uk
        if forgets:
            fgt = np.repeat(forget[:, self.run_skill], self.run_length, axis=1)
            np.multiply(post, 1.0 - bk, out=x_ku)
            x_ku *= fgt
            g *= 1.0 - fgt
            g += x_ku
            z += g
            x_ku /= z
        else:
            z += g
            x_ku[:] = 0.0
        g /= z  # P(K_t | all answers)
        x_uk /= z
        np.multiply(g, self.obs, out=g_obs)
        out[2:4, :, self.end] = 0.0  # no transition after a sequence's end
        out *= self.weight
        sums = np.add.reduceat(out, self.runs, axis=2)
        at_start = np.add.reduceat(np.take(g, self.first, axis=1), self.seq_runs, axis=1)
        with_successor = sums[0] - np.add.reduceat(np.take(g, self.end, axis=1), self.seq_runs, axis=1)
        return np.stack([at_start, sums[0], sums[1], with_successor, sums[2], sums[3], sums[4]])


def predicted(obs: FloatArray, lengths: IntArray, skill: IntArray, params: FloatArray) -> FloatArray:
    """P(K) before each answer of a flat layout, given per-skill ``params`` (5, 1, n_skills)."""
    width = 6
    walk = Walk(obs, lengths, np.repeat(skill, lengths), width)
    return walk.predicted(tables(params, width)[0], params[0][:, skill])[0]  # type: ignore[no-any-return]


def merge_identical(
    obs: FloatArray, lengths: IntArray, skill: IntArray
) -> tuple[FloatArray, IntArray, IntArray, FloatArray]:
    """Identical (skill, answers) sequences merged into one weighted sequence, sorted by skill.

    Sequences of up to 62 answers are compared by a bit pattern; longer ones
    are kept as they are. Returns the flat answers, lengths, skills and weights.
    """
    n = lengths.size
    if n == 0:
        return obs, lengths, skill, np.ones(0)
    offsets = np.r_[0, np.cumsum(lengths)[:-1]]
    pos, _ = positions(lengths)
    short = pos < 62
    full = np.zeros(obs.size, dtype=np.uint64)
    full[short] = (obs[short] > 0.5).astype(np.uint64) << pos[short].astype(np.uint64)
    key = np.add.reduceat(full, offsets)
    long_ = lengths > 62
    key[long_] = np.flatnonzero(long_).astype(np.uint64)  # unique among long sequences of one length
    order = np.lexsort((key, lengths, skill))
    sk, ln, ky = skill[order], lengths[order], key[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (sk[1:] != sk[:-1]) | (ln[1:] != ln[:-1]) | (ky[1:] != ky[:-1])
    head = np.flatnonzero(new)
    weight = np.diff(np.r_[head, n]).astype(np.float64)
    pick = order[head]
    kept = lengths[pick]
    rows = np.repeat(offsets[pick] - np.cumsum(kept) + kept, kept) + np.arange(int(kept.sum()))
    return obs[rows], kept, skill[pick], weight
