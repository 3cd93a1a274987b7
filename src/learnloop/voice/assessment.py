"""The scoring model: acoustic evidence in, expert-scale judgements out.

Learned from speechocean762's expert labels (Zhang et al., 2021, CC BY 4.0; train
split only) by ``tools/fit/fit_voice_real.py`` and shipped as ``assessment.json`` with
its weights file ``assessment.npz``:

- **sequence model** (:mod:`learnloop.voice.sequence`): a small transformer over every
  phone of the utterance predicts the experts' phone accuracy (0-2: 2 correct, 1 heavy
  accent, 0 wrong or missed), each word's accuracy (0-10) if it was said and the total
  (0-10), from one model; it also learns from labelled espeak-ng words said right and
  with one phone substituted or deleted;
- **said**: a logistic model over the word's features (:func:`said_features`) gives the
  probability that the word was said at all. The experts score a missed word 0, so a
  word's accuracy is that probability times the prediction for a said word, and the
  total is scaled by the expected share of words said. Phones keep the model's
  judgement of the sound. ``is_matched`` is this probability at ``matched_above`` or
  more (chosen so that 4 % of the words the experts rate 8-10 fall below it on the
  train folds);
- **said as** (:mod:`learnloop.voice.saidas`): what a phone in the retry band was said
  as, the ``sounds_like`` of the API.

A model file may instead hold the model shipped before: a per-phone network over
:func:`phone_features`, linear word and utterance stages (:func:`word_features`, :func:`utterance_features`).

Audio without speech (a tone, hum, noise: :mod:`learnloop.voice.speech`) is judged first: nothing said, every score 0.

Predictions become 0-100 scores by a monotone piecewise-linear map whose knots
place the spec's bands on the experts' scale (see :class:`Bands`). Everything here is
numpy; the small models and their fits are in :mod:`learnloop.voice.learned`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

import numpy as np

from learnloop.voice.calibration import CALIBRATION, Calibration
from learnloop.voice.evidence import Evidence
from learnloop.voice.gop import SCORING_PHONES, PhoneGop
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
    "said_features",
    "sequence_features",
    "utterance_timing",
    "utterance_features",
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
    """One row per aligned phone: :func:`phone_features` and its place
    in the utterance (relative position, word number), the pauses before and after its word
    (log frames, on the word's first and last phone), and the utterance's length."""
    base = phone_features(ev, calibration)
    n = len(ev.gops)
    if n == 0:
        return np.zeros((0, base.shape[1] + SEQUENCE_EXTRA))
    word = np.array([g.word for g in ev.gops])
    start = np.array([g.start for g in ev.gops])
    end = np.array([g.end for g in ev.gops])
    gap_before = np.zeros(n)
    gap_after = np.zeros(n)
    new_word = np.r_[True, word[1:] != word[:-1]]
    last_of_word = np.r_[word[:-1] != word[1:], True]
    gap_before[1:] = np.where(new_word[1:], np.log1p(np.maximum(start[1:] - end[:-1], 0)), 0.0)
    gap_after[:-1] = np.where(last_of_word[:-1], np.log1p(np.maximum(start[1:] - end[:-1], 0)), 0.0)
    n_words = max(len(ev.pronunciations), 1)
    extra = np.column_stack(
        [
            np.arange(n) / max(n - 1, 1),
            word / max(n_words - 1, 1),
            gap_before,
            gap_after,
            np.full(n, np.log(n)),
            np.full(n, np.log(n_words)),
        ]
    )
    return np.column_stack([base, extra])


def utterance_timing(ev: Evidence) -> np.ndarray:
    """The utterance's timing and word fit: speech rate, long pauses per word, pause share,
    speech share, log words, mean word match and the share of words that match badly."""
    spans: dict[int, tuple[int, int]] = {}
    for g in ev.gops:
        s = spans.get(g.word)
        spans[g.word] = (g.start, g.end) if s is None else (s[0], g.end)
    ordered = [spans[w] for w in sorted(spans)]
    gaps = [b[0] - a[1] for a, b in zip(ordered, ordered[1:])]
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


def word_features(ev: Evidence, phone_pred: np.ndarray) -> np.ndarray:
    """One row per word of the phrase: its phones' predicted accuracy (mean, min), how
    well its phones explain its audio, its length and duration, the utterance's mean."""
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
    return np.array(rows, dtype=np.float64).reshape(n_words, 6)


SAID_EXTRA: Final = 8


def said_features(
    ev: Evidence,
    phone_pred: np.ndarray,
    word_pred: np.ndarray,
    total_pred: float,
    calibration: Calibration = CALIBRATION,
) -> np.ndarray:
    """:func:`word_features` and eight more numbers, for the *said* stage of a sequence model
    (whose phone predictions read the whole utterance): the mean and lowest calibrated GOP of
    the word's phones, their mean raw GOP, the share of them at the 3-frame minimum, their
    lowest ratio against silence (clipped), their mean own fit per frame, and the sequence
    model's predictions of the word's accuracy and of the total, as if said."""
    base = word_features(ev, phone_pred)
    extra = np.zeros((len(ev.pronunciations), SAID_EXTRA))
    if ev.gops:
        word = np.array([g.word for g in ev.gops])
        z = np.clip(_zs(ev, calibration), -_LLR_CLIP, _LLR_CLIP)
        gop = np.array([g.gop for g in ev.gops])
        frames = np.array([max(1, g.end - g.start) for g in ev.gops], dtype=np.float64)
        silence = np.clip([g.llr[-1] for g in ev.gops], -_LLR_CLIP, _LLR_CLIP)
        own = np.array([g.loglik for g in ev.gops]) / frames
        for w in np.unique(word):
            mine = word == w
            extra[w] = [
                z[mine].mean(),
                z[mine].min(),
                gop[mine].mean(),
                np.mean(frames[mine] <= 3),
                silence[mine].min(),
                own[mine].mean(),
                0.0,
                0.0,
            ]
    extra[:, -2] = word_pred
    extra[:, -1] = total_pred
    return np.column_stack([base, extra])


def utterance_features(ev: Evidence, phone_pred: np.ndarray, word_pred: np.ndarray) -> np.ndarray:
    """One row: the phrase's phone and word predictions, how many words its phones explain,
    and its timing (speech rate, long pauses between words, speech share)."""
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
    """The stages and the bands (see the module's docstring). ``said_as_model`` is the learned
    choice of what a phone was said as (:mod:`learnloop.voice.saidas`); without it, the
    plausible competitor that fits best. With ``sequence`` (the shipped model) the predictions
    come from the sequence model and ``phone``, ``word``, ``utterance`` may be None.
    """

    phone: Network | None
    word: Linear | None
    utterance: Linear | None
    bands: Bands
    said: Linear
    matched_above: float = 0.5  # is_matched: the probability that the word was said is at least this
    calibration: Calibration = CALIBRATION
    speech_gate: bool = True  # judge audio that holds no speech as nothing said (False: score it anyway)
    said_as_model: SaidAs | None = None
    sequence: SequenceModel | None = None

    def predictions(self, ev: Evidence) -> tuple[np.ndarray, np.ndarray, float]:
        """Phone accuracies (0-2), word accuracies if said (0-10) and the total (0-10) before the
        *said* stage: from the sequence model, or from the phone, word and utterance stages."""
        if self.sequence is not None:
            word = np.array([g.word for g in ev.gops], dtype=np.intp)
            phone, words, total = self.sequence(
                sequence_features(ev, self.calibration), word, utterance_timing(ev), len(ev.pronunciations)
            )
            return np.clip(phone, 0.0, 2.0), np.clip(words, 0.0, 10.0), float(np.clip(total, 0.0, 10.0))
        if self.phone is None or self.word is None or self.utterance is None:
            raise ValueError("an assessor needs a sequence model or its phone, word and utterance stages")
        if ev.gops:
            phone_acc = np.clip(self.phone(phone_features(ev, self.calibration)), 0.0, 2.0)
        else:
            phone_acc = np.zeros(0)
        word_acc = np.clip(self.word(word_features(ev, phone_acc)), 0.0, 10.0)
        total = float(np.clip(self.utterance(utterance_features(ev, phone_acc, word_acc))[0], 0.0, 10.0))
        return phone_acc, word_acc, total

    def said_inputs(self, ev: Evidence, phone_acc: np.ndarray, word_acc: np.ndarray, total: float) -> np.ndarray:
        """The *said* stage's inputs: :func:`said_features` when the stage was fitted on them (the
        sequence model's), else :func:`word_features`."""
        if len(self.said.mean) == 6 + SAID_EXTRA:
            return said_features(ev, phone_acc, word_acc, total, self.calibration)
        return word_features(ev, phone_acc)

    def judge(self, ev: Evidence) -> Judgement:
        """The judgements of one utterance (see the module's docstring)."""
        if self.speech_gate and not heard(ev):
            return _unheard(ev)
        phone_acc, word_acc, total = self.predictions(ev)
        said = sigmoid(self.said(self.said_inputs(ev, phone_acc, word_acc, total)))
        aligned = np.zeros(len(ev.pronunciations), dtype=bool)
        aligned[[g.word for g in ev.gops]] = True
        said = np.where(aligned, said, 0.0)  # a word with no aligned phone was not heard
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
        (``first_language``, one of :data:`~learnloop.voice.confusions.FIRST_LANGUAGES`, brings in
        that language's patterns) or, without one, the plausible competitor that fits best."""
        return tuple(self._other(g, first_language) for g in ev.gops)

    def _other(self, g: PhoneGop, first_language: str | None) -> str:
        if self.said_as_model is None:
            return self.calibration.best_substitute(g.phone, g.llr)
        return self.said_as_model.other(g.phone, g.llr, g.end - g.start, first_language, self.calibration)

    def sounds_like(self, ev: Evidence, judgement: Judgement, *, first_language: str | None = None) -> tuple[str, ...]:
        """Per aligned phone (``ev.gops`` order), the phone it sounds like: itself when it scores
        :data:`RETRY_BELOW` or more, ``#`` when nothing was heard, else :meth:`said_as`."""
        if not judgement.heard:
            return tuple("#" for _ in ev.gops)  # the audio holds no speech: no phoneme was detected
        return tuple(
            g.phone if value >= RETRY_BELOW else self._other(g, first_language)
            for g, value in zip(ev.gops, judgement.phone_scores, strict=True)
        )

    def to_dict(self, sequence_file: str | None = None) -> dict[str, Any]:
        """The model as JSON values; a sequence model is named by ``sequence_file``, the file
        holding its weights, and their SHA-256 (:meth:`save` writes both)."""
        out: dict[str, Any] = {
            "source": "fitted on the speechocean762 train split (Zhang et al., 2021; CC BY 4.0)",
            "phone_features": 15 + len(SCORING_PHONES) + len(PHONES),
            "phones": list(PHONES),
            "candidates": list(SCORING_PHONES),
            "bands": {"phone": list(self.bands.phone)},
            "said": self.said.to_dict(),
            "matched_above": round(self.matched_above, 4),
        }
        for name, stage in (("phone", self.phone), ("word", self.word), ("utterance", self.utterance)):
            if stage is not None:
                out[name] = stage.to_dict()
        if self.sequence is not None:
            if sequence_file is None:
                raise ValueError("a sequence model is saved with its weights file: use save()")
            out["sequence"] = {"file": sequence_file, "sha256": self.sequence.sha256()}
        if self.said_as_model is not None:
            out["said_as"] = self.said_as_model.to_dict()
        return out

    @classmethod
    def from_dict(
        cls, d: dict[str, Any], calibration: Calibration = CALIBRATION, files: Traversable | Path | None = None
    ) -> Assessor:
        """The model of :meth:`to_dict`. A sequence model's weights are read from the file it names
        in ``files`` (a directory; by default the package's own) and refused unless their SHA-256
        is the one recorded."""
        if d.get("phones") != list(PHONES) or d.get("candidates") != list(SCORING_PHONES):
            raise ValueError("assessment model does not match the phone set")
        phone = Network.from_dict(d["phone"]) if "phone" in d else None
        if phone is not None and phone.w1.shape[0] != d.get("phone_features"):
            raise ValueError("assessment model does not match the phone features")
        knots = tuple(float(v) for v in d["bands"]["phone"])
        if len(knots) != 3 or not 0.0 < knots[0] < knots[1] < knots[2] < 2.0:
            raise ValueError(f"phone band knots must rise within (0, 2), not {knots}")
        word = Linear.from_dict(d["word"]) if "word" in d else None
        utterance = Linear.from_dict(d["utterance"]) if "utterance" in d else None
        said = Linear.from_dict(d["said"])
        matched_above = float(d["matched_above"])
        if not 0.0 < matched_above < 1.0:
            raise ValueError(f"matched_above must lie in (0, 1), not {matched_above}")
        sequence = None
        if "sequence" in d:
            where = resources.files("learnloop.voice") if files is None else files
            data = where.joinpath(d["sequence"]["file"]).read_bytes()
            sequence = SequenceModel.load(data, d["sequence"]["sha256"])
        elif phone is None or word is None or utterance is None:
            raise ValueError("assessment model needs a sequence model or its phone, word and utterance stages")
        said_as = SaidAs.from_dict(d["said_as"]) if "said_as" in d else None
        return cls(phone, word, utterance, Bands(knots), said, matched_above, calibration, True, said_as, sequence)

    @classmethod
    def load(cls, path: str | Path, calibration: Calibration = CALIBRATION) -> Assessor:
        """A model written by :meth:`save` (its sequence weights read from beside it)."""
        path = Path(path)
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")), calibration, path.parent)

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (JSON) and a sequence model's weights beside it (the same
        name, ``.npz``)."""
        path = Path(path)
        name = None
        if self.sequence is not None:
            name = path.with_suffix(".npz").name
            path.with_suffix(".npz").write_bytes(self.sequence.to_bytes())
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(name), f, separators=(",", ":"))


@cache
def default_assessor() -> Assessor:
    """The shipped model (``assessment.json``), loaded once."""
    text = resources.files("learnloop.voice").joinpath("assessment.json").read_text(encoding="utf-8")
    return Assessor.from_dict(json.loads(text))


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
