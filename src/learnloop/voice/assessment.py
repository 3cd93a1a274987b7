"""The scoring model: acoustic evidence in, expert-scale judgements out.

Learned from speechocean762's expert labels (Zhang et al., 2021, CC BY 4.0; train
split only) by ``tools/fit/fit_voice_real.py`` and shipped as ``assessment.json``.
Three stages, each fed by the one before:

- **phone**: a one-hidden-layer network (tanh) over the evidence of a phone and its
  surroundings (:func:`phone_features`) predicts the experts' phone accuracy on
  their 0-2 scale (2 correct, 1 heavy accent, 0 wrong or missed); it also learns
  from labelled espeak-ng words said right and with one phone substituted;
- **word**: a linear model over the word's phone predictions and its own evidence
  (:func:`word_features`) predicts the word accuracy (0-10);
- **utterance**: a linear model over the phrase's phone and word predictions and
  its timing (:func:`utterance_features`) predicts the total score (0-10);
- **said**: a logistic model over the word features gives the probability that the
  word was said at all. The experts score a missed word 0, so a word's accuracy is
  that probability times the prediction for a said word, and the total is scaled
  by the expected share of words said. Phones keep the network's judgement of the
  sound (scaling them as well cost 0.04 of phone PCC on the train folds).
  ``is_matched`` is this probability at ``matched_above`` or more (chosen so that
  3 % of the words the experts rate 8-10 fall below it on the train folds).

With a **sequence model** (:mod:`learnloop.voice.sequence`: a small transformer over
every phone of the utterance, :func:`sequence_features`, after GOPT), its phone
predictions are blended with the network's (``blend``: the sequence model's share),
and its word and total predictions are one more input of the word, *said* and
utterance stages. Its weights ship beside ``assessment.json`` in ``assessment.npz``,
whose SHA-256 the JSON records; a file that does not match is refused.

Audio that holds no speech (a tone, hum, noise: :mod:`learnloop.voice.speech`) is
judged before any stage: nothing was said, and every prediction and score is 0.

Predictions become 0-100 scores by a monotone piecewise-linear map whose knots
place the spec's bands on the experts' scale (see :class:`Bands`).
Everything here is numpy; :func:`fit_network` alone needs scipy (imported when called).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

import numpy as np

from learnloop.voice.calibration import CALIBRATION, Calibration
from learnloop.voice.evidence import Evidence
from learnloop.voice.gop import SCORING_PHONES
from learnloop.voice.learned import Linear, Network, fit_linear, fit_logistic, fit_network, sigmoid
from learnloop.voice.phonemes import PHONES, VOWELS
from learnloop.voice.saidas import SaidAs
from learnloop.voice.sequence import SequenceModel
from learnloop.voice.speech import heard

__all__ = [
    "Assessor",
    "Bands",
    "Judgement",
    "Linear",
    "Network",
    "RETRY_BELOW",
    "default_assessor",
    "fit_linear",
    "fit_logistic",
    "fit_network",
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
RETRY_BELOW: Final = 60
"""The spec's "retry" band: a phone scored below this is named by what it sounds like."""


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


@dataclass(frozen=True)
class Bands:
    """Where the spec's band edges (60, 80, 90) fall on the experts' scale, per level.

    ``phone``: the predicted phone accuracies (0-2) that map to 60, 80 and 90; a
    word's and the phrase's predictions (0-10) map linearly (``10 x``). Between
    knots the map is linear, with 0 -> 0 and 2 -> 100 at the ends.
    """

    phone: tuple[float, float, float]

    def phone_score(self, accuracy: np.ndarray) -> np.ndarray:
        knots_x = [0.0, *self.phone, 2.0]
        knots_y = [0.0, 60.0, 80.0, 90.0, 100.0]
        return np.rint(np.interp(accuracy, knots_x, knots_y)).astype(int)  # type: ignore[no-any-return]

    @staticmethod
    def ten_point_score(value: np.ndarray) -> np.ndarray:
        return np.rint(np.clip(10.0 * np.asarray(value, dtype=np.float64), 0.0, 100.0)).astype(int)


@dataclass(frozen=True)
class Judgement:
    """The model's judgements of one utterance: expert-scale predictions and 0-100 scores."""

    phone_accuracy: np.ndarray  # per aligned phone (0-2)
    word_accuracy: np.ndarray  # per word of the phrase (0-10)
    total: float  # the phrase (0-10)
    said: np.ndarray  # per word: the probability that it was said at all
    phone_scores: np.ndarray
    word_scores: np.ndarray
    overall_score: int
    heard: bool = True  # False: the audio holds no speech to score (:mod:`learnloop.voice.speech`)


@dataclass(frozen=True, eq=False)
class Assessor:
    """The three stages and the bands (see the module's docstring)."""

    phone: Network
    word: Linear
    utterance: Linear
    bands: Bands
    said: Linear
    matched_above: float = 0.5  # is_matched: the probability that the word was said is at least this
    calibration: Calibration = CALIBRATION
    speech_gate: bool = True  # judge audio that holds no speech as nothing said (False: score it anyway)
    sequence: SequenceModel | None = None
    blend: float = 0.0  # the sequence model's share of the phone predictions
    said_as_model: SaidAs | None = None  # the learned choice behind sounds_like (None: the best competitor)

    def sequence_predictions(self, ev: Evidence) -> tuple[np.ndarray, np.ndarray, float]:
        """The sequence model's phone (0-2), word and total (0-10) predictions, unclipped."""
        if self.sequence is None:
            raise ValueError("this assessor has no sequence model")
        word = np.array([g.word for g in ev.gops], dtype=np.intp)
        x = sequence_features(ev, self.calibration)
        return self.sequence(x, word, utterance_timing(ev), len(ev.pronunciations))

    def judge(self, ev: Evidence) -> Judgement:
        """The judgements of one utterance (see the module's docstring)."""
        if self.speech_gate and not heard(ev):
            return _unheard(ev)
        phone_acc = self.phone(phone_features(ev, self.calibration)) if ev.gops else np.zeros(0)
        seq_words: np.ndarray | None = None
        seq_total: float | None = None
        if self.sequence is not None:
            seq_phone, words, total = self.sequence_predictions(ev)
            phone_acc = (1.0 - self.blend) * phone_acc + self.blend * seq_phone
            seq_words, seq_total = np.clip(words, 0.0, 10.0), float(np.clip(total, 0.0, 10.0))
        phone_acc = np.clip(phone_acc, 0.0, 2.0)
        features = word_features(ev, phone_acc, seq_words)
        word_acc = np.clip(self.word(features), 0.0, 10.0)
        said = sigmoid(self.said(features))
        aligned = np.zeros(len(ev.pronunciations), dtype=bool)
        aligned[[g.word for g in ev.gops]] = True
        said = np.where(aligned, said, 0.0)  # a word with no aligned phone was not heard
        total = float(np.clip(self.utterance(utterance_features(ev, phone_acc, word_acc, seq_total))[0], 0, 10))
        total = total * float(said.mean()) if ev.gops else 0.0
        word_acc = said * word_acc
        return Judgement(
            phone_acc,
            word_acc,
            total,
            said,
            self.bands.phone_score(phone_acc),
            Bands.ten_point_score(word_acc),
            int(Bands.ten_point_score(np.array([total]))[0]),
        )

    def said_as(self, ev: Evidence, *, first_language: str | None = None) -> tuple[str, ...]:
        """Per aligned phone (``ev.gops`` order), the phone other than the target that it was most
        likely said as (``#``: nothing was said), whatever its score: the learned choice
        (:mod:`learnloop.voice.saidas`; ``first_language``, one of
        :data:`~learnloop.voice.confusions.FIRST_LANGUAGES`, brings in that language's patterns)
        or, in a model without one, the plausible competitor that fits the audio best."""
        return tuple(name for name, _ in self._said_as(ev, first_language))

    def _said_as(self, ev: Evidence, first_language: str | None) -> list[tuple[str, float]]:
        if self.said_as_model is None:
            return [(self.calibration.best_substitute(g.phone, g.llr), 0.0) for g in ev.gops]
        m, cal = self.said_as_model, self.calibration
        return [m.other_and_probability(g.phone, g.llr, g.end - g.start, first_language, cal) for g in ev.gops]

    def sounds_like(self, ev: Evidence, judgement: Judgement, *, first_language: str | None = None) -> tuple[str, ...]:
        """Per aligned phone (``ev.gops`` order), the phone it sounds like: ``#`` when nothing was
        heard; :meth:`said_as` when the phone scores below :data:`RETRY_BELOW`, or when the learned
        choice gives that phone a probability of at least its ``report_above``; else itself."""
        if not judgement.heard:
            return tuple("#" for _ in ev.gops)  # the audio holds no speech: no phoneme was detected
        model = self.said_as_model
        above = 2.0 if model is None or model.report_above is None else model.report_above
        return tuple(
            g.phone if value >= RETRY_BELOW and p < above else other
            for g, value, (other, p) in zip(
                ev.gops, judgement.phone_scores, self._said_as(ev, first_language), strict=True
            )
        )

    def to_dict(self, sequence_file: str = "assessment.npz") -> dict[str, Any]:
        """The model as JSON values; a sequence model is named by the file of its weights."""
        out = {
            "source": "fitted on the speechocean762 train split (Zhang et al., 2021; CC BY 4.0)",
            "phone_features": 15 + len(SCORING_PHONES) + len(PHONES),
            "phones": list(PHONES),
            "candidates": list(SCORING_PHONES),
            "phone": self.phone.to_dict(),
            "word": self.word.to_dict(),
            "utterance": self.utterance.to_dict(),
            "bands": {"phone": list(self.bands.phone)},
            "said": self.said.to_dict(),
            "matched_above": round(self.matched_above, 4),
        }
        if self.said_as_model is not None:
            out["said_as"] = self.said_as_model.to_dict()
        if self.sequence is not None:
            out["sequence"] = {"file": sequence_file, "sha256": self.sequence.sha256(), "blend": self.blend}
        return out

    @classmethod
    def from_dict(
        cls, d: dict[str, Any], calibration: Calibration = CALIBRATION, where: Path | Traversable | None = None
    ) -> Assessor:
        """The model of :meth:`to_dict`; a sequence model's weights are read from ``where`` (the
        folder of the JSON file) and refused unless their SHA-256 is the one recorded."""
        if d.get("phones") != list(PHONES) or d.get("candidates") != list(SCORING_PHONES):
            raise ValueError("assessment model does not match the phone set")
        phone = Network.from_dict(d["phone"])
        if phone.w1.shape[0] != d.get("phone_features"):
            raise ValueError("assessment model does not match the phone features")
        knots = tuple(float(v) for v in d["bands"]["phone"])
        if len(knots) != 3 or not 0.0 < knots[0] < knots[1] < knots[2] < 2.0:
            raise ValueError(f"phone band knots must rise within (0, 2), not {knots}")
        word, utterance = Linear.from_dict(d["word"]), Linear.from_dict(d["utterance"])
        said = Linear.from_dict(d["said"])
        matched_above = float(d["matched_above"])
        if not 0.0 < matched_above < 1.0:
            raise ValueError(f"matched_above must lie in (0, 1), not {matched_above}")
        sequence, blend = None, 0.0
        if "sequence" in d:
            if where is None:
                raise ValueError("a model with a sequence model is loaded from its folder (Assessor.load)")
            data = where.joinpath(d["sequence"]["file"]).read_bytes()
            sequence, blend = SequenceModel.load(data, d["sequence"]["sha256"]), float(d["sequence"]["blend"])
            if not 0.0 <= blend <= 1.0:
                raise ValueError(f"blend must lie in [0, 1], not {blend}")
        said_as = SaidAs.from_dict(d["said_as"]) if "said_as" in d else None
        return cls(
            phone, word, utterance, Bands(knots), said, matched_above, calibration, True, sequence, blend, said_as
        )

    @classmethod
    def load(cls, path: str | Path, calibration: Calibration = CALIBRATION) -> Assessor:
        """A model written by :meth:`save` (a sequence model's weights read from beside it)."""
        path = Path(path)
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")), calibration, path.parent)

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (JSON) and a sequence model's weights beside it (same
        name, ``.npz``)."""
        path = Path(path)
        if self.sequence is not None:
            path.with_suffix(".npz").write_bytes(self.sequence.to_bytes())
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(path.with_suffix(".npz").name), f, separators=(",", ":"))


@cache
def default_assessor() -> Assessor:
    """The shipped model (``assessment.json``), loaded once."""
    here = resources.files("learnloop.voice")
    text = here.joinpath("assessment.json").read_text(encoding="utf-8")
    return Assessor.from_dict(json.loads(text), where=here)


def _unheard(ev: Evidence) -> Judgement:
    """The judgement of audio that holds no speech: nothing said, every score 0 (as for silence)."""
    n_phones, n_words = len(ev.gops), len(ev.pronunciations)
    return Judgement(
        np.zeros(n_phones),
        np.zeros(n_words),
        0.0,
        np.zeros(n_words),
        np.zeros(n_phones, dtype=int),
        np.zeros(n_words, dtype=int),
        0,
        heard=False,
    )


def stack(rows: Sequence[np.ndarray]) -> np.ndarray:
    """Row blocks of several utterances as one matrix."""
    return np.concatenate([r for r in rows if len(r)], axis=0)
