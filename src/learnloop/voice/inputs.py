"""What the scoring model's stages read from an utterance's evidence.

:func:`phone_features` (one row per aligned phone, for the phone network),
:func:`sequence_features` and :func:`utterance_timing` (for the sequence model,
:mod:`learnloop.voice.sequence`), :func:`word_features` and :func:`utterance_features`
(for the word, *said* and utterance stages). :mod:`learnloop.voice.assessment`
(which re-exports them) describes the stages.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from learnloop.voice.calibration import CALIBRATION, Calibration
from learnloop.voice.evidence import Evidence
from learnloop.voice.gop import SCORING_PHONES
from learnloop.voice.phonemes import PHONES, VOWELS

__all__ = [
    "SEQUENCE_EXTRA",
    "phone_features",
    "sequence_features",
    "utterance_features",
    "utterance_timing",
    "word_features",
]

_ROW: Final = {p: i for i, p in enumerate(PHONES)}
_LLR_CLIP: Final = 10.0
_MATCH_CLIP: Final = -10.0
_PAUSE_FRAMES: Final = 30  # 300 ms: a long pause between words


def _zs(ev: Evidence, calibration: Calibration) -> np.ndarray:
    return np.array([calibration.normalised_gop(g.phone, g.llr) for g in ev.gops], dtype=np.float64)


def phone_features(ev: Evidence, calibration: Calibration = CALIBRATION) -> np.ndarray:
    """One row per aligned phone (``ev.gops`` order): its calibrated and raw GOP, duration,
    own fit, place in the word, neighbours' GOP, the word's and the utterance's GOP, the
    speech rate, its ratios against every candidate (clipped) and its identity (one-hot)."""
    n = len(ev.gops)
    if n == 0:
        return np.zeros((0, 15 + len(SCORING_PHONES) + len(PHONES)))
    z = _zs(ev, calibration)
    gop = np.array([g.gop for g in ev.gops])
    frames = np.array([max(1, g.end - g.start) for g in ev.gops], dtype=np.float64)
    own = np.array([g.loglik for g in ev.gops]) / frames
    word = np.array([g.word for g in ev.gops])
    index = np.array([g.index for g in ev.gops])
    length = np.array([len(ev.pronunciations[w]) for w in word], dtype=np.float64)
    same_prev = np.r_[False, word[1:] == word[:-1]]
    same_next = np.r_[word[:-1] == word[1:], False]
    prev_z = np.where(same_prev, np.r_[0.0, z[:-1]], 0.0)
    next_z = np.where(same_next, np.r_[z[1:], 0.0], 0.0)
    words, inverse = np.unique(word, return_inverse=True)
    word_z = np.bincount(inverse, z) / np.bincount(inverse)
    match = np.maximum(np.array([ev.word_match[w] for w in words]), _MATCH_CLIP)
    rate = 100.0 * n / max(ev.speech_frames, 1)
    llr = np.clip(np.array([g.llr for g in ev.gops], dtype=np.float64), -_LLR_CLIP, _LLR_CLIP)
    identity = np.zeros((n, len(PHONES)))
    identity[np.arange(n), [_ROW[g.phone] for g in ev.gops]] = 1.0
    vowel = np.array([g.phone in VOWELS for g in ev.gops], dtype=np.float64)
    columns = [
        z,
        gop,
        np.log(frames),
        own,
        (index == 0).astype(np.float64),
        (index == length - 1).astype(np.float64),
        length,
        prev_z,
        next_z,
        word_z[inverse],
        match[inverse],
        np.full(n, z.mean()),
        np.full(n, gop.mean()),
        np.full(n, rate),
        vowel,
    ]
    return np.column_stack([*columns, llr, identity])


#: phone-level columns :func:`sequence_features` adds to :func:`phone_features`
SEQUENCE_EXTRA: Final = 6


def sequence_features(ev: Evidence, calibration: Calibration = CALIBRATION) -> np.ndarray:
    """One row per aligned phone: :func:`phone_features` and its place in the utterance
    (relative position, word number), the pauses before and after its word (log frames,
    on the word's first and last phone), and the utterance's length in phones and words."""
    base = phone_features(ev, calibration)
    n = len(ev.gops)
    if n == 0:
        return np.zeros((0, base.shape[1] + SEQUENCE_EXTRA))
    word = np.array([g.word for g in ev.gops])
    start = np.array([g.start for g in ev.gops])
    end = np.array([g.end for g in ev.gops])
    gap = np.log1p(np.maximum(start[1:] - end[:-1], 0))
    gap_before, gap_after = np.zeros(n), np.zeros(n)
    gap_before[1:] = np.where(word[1:] != word[:-1], gap, 0.0)
    gap_after[:-1] = np.where(word[:-1] != word[1:], gap, 0.0)
    n_words = max(len(ev.pronunciations), 1)
    extra = [
        np.arange(n) / max(n - 1, 1),
        word / max(n_words - 1, 1),
        gap_before,
        gap_after,
        np.full(n, np.log(n)),
        np.full(n, np.log(n_words)),
    ]
    return np.column_stack([base, *extra])


def utterance_timing(ev: Evidence) -> np.ndarray:
    """The utterance's timing and word fit, for the sequence model's utterance head: speech
    rate, long pauses per word, pause share, speech share, log words, mean word match and
    the share of words that match badly."""
    spans = [s for s in _word_spans(ev) if s is not None]
    gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:])]
    n_words = max(len(ev.pronunciations), 1)
    match = np.maximum(np.array(ev.word_match, dtype=np.float64), _MATCH_CLIP)
    return np.array(
        [
            100.0 * len(ev.gops) / max(ev.speech_frames, 1),
            sum(1 for g in gaps if g >= _PAUSE_FRAMES) / n_words,
            float(sum(gaps)) / max(ev.speech_frames, 1),
            ev.speech_frames / max(ev.n_frames, 1),
            float(np.log(n_words)),
            float(match.mean()) if len(match) else 0.0,
            float(np.mean(match < -2.0)) if len(match) else 0.0,
        ]
    )


def _word_spans(ev: Evidence) -> list[tuple[int, int] | None]:
    spans: list[tuple[int, int] | None] = [None] * len(ev.pronunciations)
    for g in ev.gops:
        found = spans[g.word]
        spans[g.word] = (g.start, g.end) if found is None else (found[0], g.end)
    return spans


def word_features(ev: Evidence, phone_pred: np.ndarray, sequence_words: np.ndarray | None = None) -> np.ndarray:
    """One row per word of the phrase: its phones' predicted accuracy (mean, min), how
    well its phones explain its audio, its length and duration, the utterance's mean
    (and the sequence model's word prediction, when given)."""
    n_words = len(ev.pronunciations)
    word = np.array([g.word for g in ev.gops], dtype=np.intp)
    utt_mean = float(phone_pred.mean()) if len(phone_pred) else 0.0
    rows = []
    for w, span in enumerate(_word_spans(ev)):
        mine = phone_pred[word == w]
        frames = 0 if span is None else span[1] - span[0]
        length = len(ev.pronunciations[w])
        rows.append(
            [
                float(mine.mean()) if len(mine) else 0.0,
                float(mine.min()) if len(mine) else 0.0,
                max(float(ev.word_match[w]), _MATCH_CLIP),
                float(length),
                float(np.log1p(frames / max(length, 1))),
                utt_mean,
            ]
        )
    out = np.array(rows, dtype=np.float64).reshape(n_words, 6)
    return out if sequence_words is None else np.column_stack([out, sequence_words])


def utterance_features(
    ev: Evidence, phone_pred: np.ndarray, word_pred: np.ndarray, sequence_total: float | None = None
) -> np.ndarray:
    """One row: the phrase's phone and word predictions, how many words its phones explain,
    its timing (speech rate, long pauses between words, speech share) and the sequence
    model's total, when given."""
    spans = [s for s in _word_spans(ev) if s is not None]
    gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:])]
    long_pauses = sum(1 for g in gaps if g >= _PAUSE_FRAMES)
    n_words = max(len(ev.pronunciations), 1)
    match = np.maximum(np.array(ev.word_match, dtype=np.float64), _MATCH_CLIP)
    row = [
        float(phone_pred.mean()) if len(phone_pred) else 0.0,
        float(phone_pred.min()) if len(phone_pred) else 0.0,
        float(word_pred.mean()) if len(word_pred) else 0.0,
        float(word_pred.min()) if len(word_pred) else 0.0,
        float(match.mean()),
        float(np.mean(match < -2.0)),
        100.0 * len(ev.gops) / max(ev.speech_frames, 1),
        long_pauses / n_words,
        float(sum(gaps)) / max(ev.speech_frames, 1),
        ev.speech_frames / max(ev.n_frames, 1),
        float(np.log(n_words)),
    ]
    if sequence_total is not None:
        row.append(sequence_total)
    return np.array([row], dtype=np.float64)
