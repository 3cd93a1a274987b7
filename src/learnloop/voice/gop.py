"""Goodness of pronunciation (GOP) of aligned phones.

For each phone segment of the forced alignment, every context-independent
phone HMM (the 39 phones and silence) is rescored on the segment's frames by
Viterbi, entering in its first state and leaving from its last.  The GOP is
the classic log-likelihood ratio of Witt & Young, per frame:

    gop = (log p(segment | target) - max_q log p(segment | q)) / frames   (<= 0)

and the best competing phone ``q`` is what the segment *sounds like* (``#``
when silence wins: no phoneme was detected).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learnloop.voice.acoustic import SphinxModel
from learnloop.voice.alignment import Alignment
from learnloop.voice.phonemes import PHONES

__all__ = ["PhoneGop", "phone_gops"]

_SIL = "SIL"


@dataclass(frozen=True, slots=True)
class PhoneGop:
    """GOP of one aligned phone and the phone it sounds like (``#`` for none)."""

    phone: str
    word: int
    index: int
    start: int
    end: int
    gop: float
    sounds_like: str
    competitor_gop: float  # log-likelihood ratio per frame of the best other phone vs target (>= 0 means it wins)
    frame_gop: float  # mean over frames of the target's best state vs the best state of any phone (<= 0)


class _CiBank:
    """Context-independent HMMs of the scoring phones, stacked for vectorised Viterbi."""

    def __init__(self, model: SphinxModel) -> None:
        names = [*PHONES, _SIL]
        self.names = names
        ids = np.asarray([model.phone_index[p] for p in names])
        self.senones = model.phone_senones[ids]  # (Q, 3)
        trans = np.stack([model.transitions(int(i)) for i in ids])  # (Q, 3, 4)
        n = model.n_emit
        self.self_lp = trans[:, np.arange(n), np.arange(n)]  # (Q, 3)
        self.next_lp = trans[:, np.arange(n), np.arange(1, n + 1)]  # (Q, 3)


_BANKS: dict[int, _CiBank] = {}


def _bank(model: SphinxModel) -> _CiBank:
    bank = _BANKS.get(id(model))
    if bank is None or getattr(bank, "_model", None) is not model:
        bank = _CiBank(model)
        bank._model = model  # type: ignore[attr-defined]
        _BANKS[id(model)] = bank
    return bank


def _rescore(seg_ll: np.ndarray, bank: _CiBank) -> np.ndarray:
    """Viterbi log-likelihood of every CI HMM on one segment: ``seg_ll`` is (frames, Q, 3)."""
    n = seg_ll.shape[0]
    q = seg_ll.shape[1]
    delta = np.full((q, 3), -np.inf)
    delta[:, 0] = seg_ll[0, :, 0]
    for t in range(1, n):
        stay = delta + bank.self_lp
        move = np.full_like(delta, -np.inf)
        move[:, 1:] = delta[:, :-1] + bank.next_lp[:, :-1]
        delta = np.maximum(stay, move) + seg_ll[t]
    return delta[:, 2] + bank.next_lp[:, 2]


def phone_gops(model: SphinxModel, features: np.ndarray, alignment: Alignment) -> list[PhoneGop]:
    """GOP of every (non-silence) aligned phone, in time order."""
    bank = _bank(model)
    flat = bank.senones.reshape(-1)
    unique, inverse = np.unique(flat, return_inverse=True)
    ll = model.senone_loglik(features, unique)[:, inverse].reshape(len(features), *bank.senones.shape)
    names = bank.names
    index = {p: i for i, p in enumerate(names)}
    out = []
    segs = alignment.phones
    for seg in segs:
        if seg.word < 0:
            continue
        n = seg.end - seg.start
        scores = _rescore(ll[seg.start : seg.end], bank)
        target = index[seg.phone]
        others = scores.copy()
        others[target] = -np.inf
        best_other = int(np.argmax(others))
        best = int(np.argmax(scores))
        gop = float(scores[target] - scores[best]) / n
        competitor = float(scores[best_other] - scores[target]) / n
        sounds = names[best]
        state_best = ll[seg.start : seg.end].max(axis=2)  # (n, Q)
        frame_gop = float(np.mean(state_best[:, target] - state_best.max(axis=1)))
        out.append(
            PhoneGop(
                phone=seg.phone,
                word=seg.word,
                index=seg.index,
                start=seg.start,
                end=seg.end,
                gop=gop,
                sounds_like="#" if sounds == _SIL else sounds,
                competitor_gop=competitor,
                frame_gop=frame_gop,
            )
        )
    return out

