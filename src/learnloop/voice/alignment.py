"""Forced alignment: Viterbi over a graph of triphone HMM states, in numpy.

The graph for a phrase of words ``w1 … wn`` is

    [sil] w1 [sil] w2 … [sil] wn [sil]

where every ``[sil]`` is optional and every word offers each of its
pronunciation variants in parallel.  Each phone is a 3-state left-to-right
HMM of the context-dependent triphone (cross-word contexts come from the
neighbouring words' first pronunciations) with the model's transition
probabilities; skip transitions are removed, so every phone lasts at least
three 10 ms frames, which keeps the per-phone scores stable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from learnloop.voice.acoustic import DensityCache, SphinxModel

__all__ = ["AlignedPhone", "Alignment", "align"]

_SIL = "SIL"
_NEG = -1e30


@dataclass(frozen=True, slots=True)
class AlignedPhone:
    """One phone of the best path: frames ``[start, end)``; ``word`` is -1 for silence."""

    phone: str
    word: int
    index: int  # position of the phone in the chosen pronunciation of its word
    start: int
    end: int
    loglik: float  # acoustic log-likelihood of the segment on the aligned triphone states
    model_id: int  # the (triphone or silence) HMM of the model that was aligned

    @property
    def frames(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class Alignment:
    """The best path: phones (with silences) in time order and the chosen variant per word."""

    phones: tuple[AlignedPhone, ...]
    variants: tuple[int, ...]
    loglik: float
    n_frames: int

    def word_phones(self, word: int) -> list[AlignedPhone]:
        return [p for p in self.phones if p.word == word]


@dataclass(slots=True)
class _Unit:
    phone: str
    pid: int
    word: int
    variant: int
    index: int
    first_state: int


def _position(i: int, n: int) -> str:
    if n == 1:
        return "s"
    return "b" if i == 0 else ("e" if i == n - 1 else "i")


def align(
    model: SphinxModel,
    features: np.ndarray,
    words: Sequence[Sequence[tuple[str, ...]]],
    *,
    cache: DensityCache | None = None,
) -> Alignment | None:
    """Align ``features`` to the words (each a list of pronunciation variants).

    Returns ``None`` when no path fits (audio too short for the phrase).
    ``cache`` is passed on to :meth:`SphinxModel.senone_loglik`.
    """
    n_frames = len(features)
    if not words or n_frames == 0:
        return None
    units: list[_Unit] = []
    states_sen: list[int] = []
    self_lp: list[float] = []
    next_lp: list[float] = []  # transition to the following state (or out of the phone)
    preds: list[list[tuple[int, float]]] = []

    def add_phone(phone: str, pid: int, word: int, variant: int, index: int) -> _Unit:
        unit = _Unit(phone, pid, word, variant, index, len(states_sen))
        trans = model.transitions(pid)
        for s in range(model.n_emit):
            states_sen.append(int(model.phone_senones[pid][s]))
            self_lp.append(float(trans[s, s]))
            next_lp.append(float(trans[s, s + 1]))
            preds.append([])
            if s > 0:
                here = len(states_sen) - 1
                preds[here].append((here - 1, next_lp[here - 1]))
        units.append(unit)
        return unit

    def last_state(unit: _Unit) -> int:
        return unit.first_state + model.n_emit - 1

    def link(exits: list[int], entries: list[int]) -> None:
        for e in exits:
            for s in entries:
                preds[s].append((e, next_lp[e]))

    sil_pid = model.phone_index[_SIL]
    starts: list[int] = []
    exits: list[int] = []
    # Leading optional silence.
    sil0 = add_phone(_SIL, sil_pid, -1, 0, 0)
    starts.append(sil0.first_state)
    pending_sil_exit = [last_state(sil0)]
    n_words = len(words)
    for w, variants in enumerate(words):
        left = words[w - 1][0][-1] if w > 0 else _SIL
        right = words[w + 1][0][0] if w + 1 < n_words else _SIL
        entries: list[int] = []
        word_exits: list[int] = []
        for v, phones in enumerate(variants):
            prev: _Unit | None = None
            for i, phone in enumerate(phones):
                lc = phones[i - 1] if i > 0 else left
                rc = phones[i + 1] if i + 1 < len(phones) else right
                pid = model.phone_id(phone, lc, rc, _position(i, len(phones)))
                unit = add_phone(phone, pid, w, v, i)
                if prev is None:
                    entries.append(unit.first_state)
                else:
                    link([last_state(prev)], [unit.first_state])
                prev = unit
            if prev is not None:
                word_exits.append(last_state(prev))
        if w == 0:
            starts.extend(entries)
        link(exits + pending_sil_exit, entries)
        sil = add_phone(_SIL, sil_pid, -1, 0, 0)
        link(word_exits, [sil.first_state])
        exits = word_exits
        pending_sil_exit = [last_state(sil)]
    finals = exits + pending_sil_exit

    n_states = len(states_sen)
    unique_sen, sen_col = np.unique(np.asarray(states_sen), return_inverse=True)
    # (T, unique senones); a state's column is sen_col[state], looked up a frame at a time
    ll = model.senone_loglik(features, unique_sen, cache=cache)
    width = 1 + max(len(p) for p in preds)
    pred_idx = np.zeros((n_states, width), dtype=np.int64)
    pred_lp = np.full((n_states, width), _NEG)
    for s in range(n_states):
        pred_idx[s, 0] = s
        pred_lp[s, 0] = self_lp[s]
        for k, (p, lp) in enumerate(preds[s], start=1):
            pred_idx[s, k] = p
            pred_lp[s, k] = lp
    delta = np.full(n_states, _NEG)
    delta[starts] = ll[0, sen_col[starts]]
    back = np.zeros((n_frames, n_states), dtype=np.int8 if width < 128 else np.int32)
    rows = np.arange(n_states)
    for t in range(1, n_frames):
        cand = delta[pred_idx] + pred_lp
        best = np.argmax(cand, axis=1)
        back[t] = best
        delta = cand[rows, best] + ll[t, sen_col]
    final_scores = delta[finals] + np.asarray([next_lp[f] for f in finals])
    k = int(np.argmax(final_scores))
    if final_scores[k] <= _NEG / 2:
        return None
    state = finals[k]
    path = np.empty(n_frames, dtype=np.int64)
    for t in range(n_frames - 1, -1, -1):
        path[t] = state
        state = pred_idx[state, back[t, state]]
    # Group frames into phone segments.
    unit_of_state = np.empty(n_states, dtype=np.int64)
    for u, unit in enumerate(units):
        unit_of_state[unit.first_state : unit.first_state + model.n_emit] = u
    frame_ll = ll[np.arange(n_frames), sen_col[path]]
    seg_units = unit_of_state[path]
    change = np.flatnonzero(np.diff(seg_units)) + 1
    bounds = np.concatenate([[0], change, [n_frames]])
    aligned = []
    chosen: list[int] = [0] * n_words
    for a, b in zip(bounds[:-1], bounds[1:]):
        unit = units[seg_units[a]]
        if unit.word >= 0:
            chosen[unit.word] = unit.variant
        aligned.append(
            AlignedPhone(unit.phone, unit.word, unit.index, int(a), int(b), float(frame_ll[a:b].sum()), unit.pid)
        )
    return Alignment(tuple(aligned), tuple(chosen), float(final_scores[k]), n_frames)
