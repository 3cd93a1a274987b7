"""Goodness of pronunciation (GOP) of aligned phones, with relaxed boundaries.

For each phone segment of the forced alignment, every context-independent
phone HMM of the scoring set (the 39 phones and silence) is tried in its
place: a Viterbi pass over a short window runs through the aligned
neighbour before it, the candidate phone, and the aligned neighbour after it
(their own context-dependent HMMs).  The boundaries between them are free, so
a substituted sound that the alignment pushed partly into a neighbour can
still be claimed by the phone that fits it.  The window reaches at most
``relax`` frames (10 ms each) into each neighbour.

For target phone ``t`` and candidate ``q`` the per-frame log-likelihood ratio

    llr[q] = (log p(window | ..., t, ...) - log p(window | ..., q, ...)) / n

(``n`` the aligned phone's frames) is positive where the target fits better.
The classic GOP (Witt & Young) is ``min(0, min_q llr[q])``; the calibrated score (``calibration``) compares each
``llr[q]`` with how that very pair behaves when ``t`` is said correctly.
:attr:`PhoneGop.sounds_like` is the phone that fits best (``#`` when silence
wins); the scorer reports the target itself for phones that score well.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learnloop.voice.acoustic import DensityCache, SphinxModel
from learnloop.voice.alignment import AlignedPhone, Alignment
from learnloop.voice.phonemes import PHONES

__all__ = [
    "PhoneGop",
    "RELAX_FRAMES",
    "SCORING_PHONES",
    "ci_loglik",
    "phone_gops",
    "speech_frames",
    "word_match",
]

_SIL = "SIL"
SCORING_PHONES: tuple[str, ...] = (*PHONES, _SIL)
"""The candidate phones of every segment, in the order of :attr:`PhoneGop.llr`."""
RELAX_FRAMES = 6
"""How far (in 10 ms frames) a candidate phone may reach into each aligned neighbour."""


@dataclass(frozen=True, slots=True)
class PhoneGop:
    """GOP of one aligned phone and the phone it sounds like (``#`` for none)."""

    phone: str
    word: int
    index: int
    start: int
    end: int
    gop: float  # min(0, min over other phones of llr): <= 0, 0 when the target fits best
    sounds_like: str  # the best-fitting candidate, possibly the target itself
    loglik: float  # CI Viterbi log-likelihood of the segment itself under the target phone
    llr: tuple[float, ...]  # per-frame log-likelihood ratio of the target vs each of SCORING_PHONES


class _CiBank:
    """Context-independent HMMs of the scoring phones, stacked for vectorised Viterbi."""

    def __init__(self, model: SphinxModel) -> None:
        names = list(SCORING_PHONES)
        self.names = names
        ids = np.asarray([model.phone_index[p] for p in names])
        self.senones = model.phone_senones[ids]  # (Q, 3)
        self.self_lp, self.next_lp = _hmm_arcs(model, ids)  # (Q, 3) each


def _hmm_arcs(model: SphinxModel, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Self-loop and forward log probabilities, ``(len(ids), 3)`` each, of HMMs by id."""
    trans = np.stack([model.transitions(int(i)) for i in ids])  # (k, 3, 4)
    n = model.n_emit
    return trans[:, np.arange(n), np.arange(n)], trans[:, np.arange(n), np.arange(1, n + 1)]


_BANKS: dict[int, _CiBank] = {}


def _bank(model: SphinxModel) -> _CiBank:
    bank = _BANKS.get(id(model))
    if bank is None or getattr(bank, "_model", None) is not model:
        bank = _CiBank(model)
        bank._model = model  # type: ignore[attr-defined]
        _BANKS[id(model)] = bank
    return bank


def _rescore(seg_ll: np.ndarray, self_lp: np.ndarray, next_lp: np.ndarray) -> np.ndarray:
    """Viterbi log-likelihood of HMMs on one segment: ``seg_ll`` is (frames, Q, 3), arcs (Q, 3)."""
    n = seg_ll.shape[0]
    q = seg_ll.shape[1]
    delta = np.full((q, 3), -np.inf)
    delta[:, 0] = seg_ll[0, :, 0]
    for t in range(1, n):
        stay = delta + self_lp
        move = np.full_like(delta, -np.inf)
        move[:, 1:] = delta[:, :-1] + next_lp[:, :-1]
        delta = np.maximum(stay, move) + seg_ll[t]
    return delta[:, 2] + next_lp[:, 2]  # type: ignore[no-any-return]


def _relaxed(
    slot_ll: np.ndarray,
    bank: _CiBank,
    prev: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    nxt: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """Best log-likelihood of ``prev -> q -> next`` over a window, for every candidate ``q``.

    ``slot_ll`` is ``(frames, Q, 3)``; ``prev`` and ``nxt`` are a neighbour's
    state log-likelihoods ``(frames, 3)``, self-loop and forward arcs ``(3,)``,
    or ``None`` at the edge of the audio.  A neighbour is entered (left) in any
    state, as the window may cut it; the candidate is entered in its first
    state and left from its last, and lasts at least three frames.
    """
    n, q, _ = slot_ll.shape
    parts_ll = [slot_ll]
    parts_self = [bank.self_lp]
    parts_next = [bank.next_lp]
    if prev is not None:
        parts_ll.insert(0, np.broadcast_to(prev[0][:, None, :], (n, q, 3)))
        parts_self.insert(0, np.broadcast_to(prev[1], (q, 3)))
        parts_next.insert(0, np.broadcast_to(prev[2], (q, 3)))
    if nxt is not None:
        parts_ll.append(np.broadcast_to(nxt[0][:, None, :], (n, q, 3)))
        parts_self.append(np.broadcast_to(nxt[1], (q, 3)))
        parts_next.append(np.broadcast_to(nxt[2], (q, 3)))
    ll = np.concatenate(parts_ll, axis=2)  # (n, Q, S)
    self_lp = np.concatenate(parts_self, axis=1)
    next_lp = np.concatenate(parts_next, axis=1)
    slot = 3 if prev is not None else 0
    delta = np.full(ll.shape[1:], -np.inf)
    if prev is not None:
        delta[:, :3] = ll[0, :, :3]
    else:
        delta[:, 0] = ll[0, :, 0]
    for t in range(1, n):
        move = np.full_like(delta, -np.inf)
        move[:, 1:] = delta[:, :-1] + next_lp[:, :-1]
        delta = np.maximum(delta + self_lp, move) + ll[t]
    if nxt is not None:
        return delta[:, slot + 3 :].max(axis=1)  # type: ignore[no-any-return]
    return delta[:, slot + 2] + next_lp[:, slot + 2]  # type: ignore[no-any-return]


def ci_loglik(model: SphinxModel, features: np.ndarray, *, cache: DensityCache | None = None) -> np.ndarray:
    """Log-likelihoods of the CI phone states (39 phones then silence): ``(T, 40, 3)``."""
    bank = _bank(model)
    flat = bank.senones.reshape(-1)
    unique, inverse = np.unique(flat, return_inverse=True)
    ll = model.senone_loglik(features, unique, cache=cache)
    return ll[:, inverse].reshape(len(features), *bank.senones.shape)


def speech_frames(ci_ll: np.ndarray, *, margin: float = 2.0) -> np.ndarray:
    """Frames where the best phone state beats the best silence state by ``margin`` nats."""
    best = ci_ll.max(axis=2)
    return best[:, :-1].max(axis=1) - best[:, -1] > margin  # type: ignore[no-any-return]


def phone_gops(
    model: SphinxModel,
    features: np.ndarray,
    alignment: Alignment,
    ci_ll: np.ndarray | None = None,
    *,
    relax: int = RELAX_FRAMES,
    cache: DensityCache | None = None,
) -> list[PhoneGop]:
    """GOP of every (non-silence) aligned phone, in time order (``cache``: see ``senone_loglik``)."""
    bank = _bank(model)
    ll = ci_loglik(model, features, cache=cache) if ci_ll is None else ci_ll
    names = bank.names
    index = {p: i for i, p in enumerate(names)}
    segs = alignment.phones
    # State log-likelihoods of every aligned HMM (the neighbours), over the whole utterance.
    model_ids = np.unique([s.model_id for s in segs])
    senones = model.phone_senones[model_ids]  # (k, 3)
    unique, inverse = np.unique(senones.reshape(-1), return_inverse=True)
    aligned_ll = model.senone_loglik(features, unique, cache=cache)
    aligned_ll = aligned_ll[:, inverse].reshape(len(features), *senones.shape)
    arcs = _hmm_arcs(model, model_ids)
    where = {int(m): i for i, m in enumerate(model_ids)}

    def neighbour(seg: AlignedPhone, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        i = where[seg.model_id]
        return aligned_ll[a:b, i], arcs[0][i], arcs[1][i]

    out = []
    for k, seg in enumerate(segs):
        if seg.word < 0:
            continue
        prev = segs[k - 1] if k > 0 else None
        nxt = segs[k + 1] if k + 1 < len(segs) else None
        a = seg.start if prev is None else max(prev.start, seg.start - relax)
        b = seg.end if nxt is None else min(nxt.end, seg.end + relax)
        scores = _relaxed(
            ll[a:b],
            bank,
            None if prev is None else neighbour(prev, a, b),
            None if nxt is None else neighbour(nxt, a, b),
        )
        n = seg.end - seg.start
        target = index[seg.phone]
        llr = (scores[target] - scores) / n
        best = int(np.argmax(scores))
        sounds = names[best]
        row = slice(target, target + 1)
        own = _rescore(ll[seg.start : seg.end, row], bank.self_lp[row], bank.next_lp[row])
        out.append(
            PhoneGop(
                phone=seg.phone,
                word=seg.word,
                index=seg.index,
                start=seg.start,
                end=seg.end,
                gop=float(min(0.0, np.min(np.delete(llr, target)))),
                sounds_like="#" if sounds == _SIL else sounds,
                loglik=float(own[0]),
                llr=tuple(float(v) for v in llr),
            )
        )
    return out


_PHONE_INSERTION = -2.0  # log penalty per phone in the free phone loop


def _phone_loop(seg_ll: np.ndarray, bank: _CiBank) -> float:
    """Best log-likelihood of any phone sequence (no silence) over the frames ``seg_ll`` (n, Q, 3)."""
    phones = seg_ll[:, :-1, :]
    self_lp, next_lp = bank.self_lp[:-1], bank.next_lp[:-1]
    delta = np.full(phones.shape[1:], -np.inf)
    delta[:, 0] = phones[0, :, 0]
    for t in range(1, len(phones)):
        enter = float(np.max(delta[:, 2] + next_lp[:, 2])) + _PHONE_INSERTION
        move = np.full_like(delta, -np.inf)
        move[:, 1:] = delta[:, :-1] + next_lp[:, :-1]
        move[:, 0] = enter
        delta = np.maximum(delta + self_lp, move) + phones[t]
    return float(np.max(delta[:, 2] + next_lp[:, 2]))


def word_match(model: SphinxModel, ci_ll: np.ndarray, word_gops: list[PhoneGop]) -> float:
    """Per-frame log-likelihood ratio of a word's phones against a free phone loop (<= about 0).

    Near zero when the audio over the word's span is best explained by the
    word's own phones; strongly negative when other sounds fit far better
    (the word was probably not attempted).
    """
    if not word_gops:
        return -np.inf
    start, end = word_gops[0].start, word_gops[-1].end
    forced = sum(g.loglik for g in word_gops) + _PHONE_INSERTION * (len(word_gops) - 1)
    free = _phone_loop(ci_ll[start:end], _bank(model))
    return (forced - free) / max(1, end - start)
