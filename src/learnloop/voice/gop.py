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

__all__ = ["PhoneGop", "ci_loglik", "phone_gops", "speech_frames", "word_match"]

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
    loglik: float  # CI Viterbi log-likelihood of the segment under the target phone
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


def ci_loglik(model: SphinxModel, features: np.ndarray) -> np.ndarray:
    """Log-likelihoods of the CI phone states (39 phones then silence): ``(T, 40, 3)``."""
    bank = _bank(model)
    flat = bank.senones.reshape(-1)
    unique, inverse = np.unique(flat, return_inverse=True)
    return model.senone_loglik(features, unique)[:, inverse].reshape(len(features), *bank.senones.shape)


def speech_frames(ci_ll: np.ndarray, *, margin: float = 2.0) -> np.ndarray:
    """Frames where the best phone state beats the best silence state by ``margin`` nats."""
    best = ci_ll.max(axis=2)
    return best[:, :-1].max(axis=1) - best[:, -1] > margin


def phone_gops(
    model: SphinxModel, features: np.ndarray, alignment: Alignment, ci_ll: np.ndarray | None = None
) -> list[PhoneGop]:
    """GOP of every (non-silence) aligned phone, in time order."""
    bank = _bank(model)
    ll = ci_loglik(model, features) if ci_ll is None else ci_ll
    names = bank.names
    index = {p: i for i, p in enumerate(names)}
    out = []
    for seg in alignment.phones:
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
                loglik=float(scores[target]),
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
