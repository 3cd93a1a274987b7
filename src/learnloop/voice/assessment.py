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
whose SHA-256 the JSON records; a file that does not match is refused. A model may
carry a second sequence model for the phones (``phone_sequence``: the same network
trained with clean espeak-ng substitutions as well, ``assessment-phones.npz``, checked
the same way): its phone predictions then take the first one's place in the blend,
while the first one's word and total predictions still feed the later stages.

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
from learnloop.voice.inputs import (
    phone_features,
    sequence_features,
    utterance_features,
    utterance_timing,
    word_features,
)
from learnloop.voice.learned import Linear, Network, fit_linear, fit_logistic, fit_network, sigmoid
from learnloop.voice.phonemes import PHONES
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

RETRY_BELOW: Final = 60
"""The spec's "retry" band: a phone scored below this is named by what it sounds like."""


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
    phone_sequence: SequenceModel | None = None  # the phones' own sequence model (None: ``sequence``'s phones)

    def __post_init__(self) -> None:
        if self.phone_sequence is not None and self.sequence is None:
            raise ValueError("a phone sequence model needs the sequence model beside it")

    def sequence_predictions(self, ev: Evidence) -> tuple[np.ndarray, np.ndarray, float]:
        """The sequence models' phone (0-2), word and total (0-10) predictions, unclipped: the phones
        from ``phone_sequence`` when there is one, the words and the total from ``sequence``."""
        if self.sequence is None:
            raise ValueError("this assessor has no sequence model")
        word = np.array([g.word for g in ev.gops], dtype=np.intp)
        x, timing, n_words = sequence_features(ev, self.calibration), utterance_timing(ev), len(ev.pronunciations)
        phone, words, total = self.sequence(x, word, timing, n_words)
        if self.phone_sequence is not None:
            phone = self.phone_sequence(x, word, timing, n_words)[0]
        return phone, words, total

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

    def to_dict(
        self, sequence_file: str = "assessment.npz", phone_sequence_file: str = "assessment-phones.npz"
    ) -> dict[str, Any]:
        """The model as JSON values; a sequence model is named by the file of its weights."""
        out: dict[str, Any] = {
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
        if self.phone_sequence is not None:
            out["sequence"]["phones"] = {"file": phone_sequence_file, "sha256": self.phone_sequence.sha256()}
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
        sequence, blend, phone_sequence = None, 0.0, None
        if "sequence" in d:
            if where is None:
                raise ValueError("a model with a sequence model is loaded from its folder (Assessor.load)")
            data = where.joinpath(d["sequence"]["file"]).read_bytes()
            sequence, blend = SequenceModel.load(data, d["sequence"]["sha256"]), float(d["sequence"]["blend"])
            if "phones" in d["sequence"]:  # older models have none
                phones = d["sequence"]["phones"]
                phone_sequence = SequenceModel.load(where.joinpath(phones["file"]).read_bytes(), phones["sha256"])
            if not 0.0 <= blend <= 1.0:
                raise ValueError(f"blend must lie in [0, 1], not {blend}")
        said_as = SaidAs.from_dict(d["said_as"]) if "said_as" in d else None
        return cls(
            phone, word, utterance, Bands(knots), said, matched_above, calibration, True, sequence, blend, said_as,
            phone_sequence,
        )  # fmt: skip

    @classmethod
    def load(cls, path: str | Path, calibration: Calibration = CALIBRATION) -> Assessor:
        """A model written by :meth:`save` (a sequence model's weights read from beside it)."""
        path = Path(path)
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")), calibration, path.parent)

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (JSON) and a sequence model's weights beside it (same
        name, ``.npz``; the phones' own sequence model's in ``<name>-phones.npz``)."""
        path = Path(path)
        phones = path.with_name(f"{path.stem}-phones.npz")
        if self.sequence is not None:
            path.with_suffix(".npz").write_bytes(self.sequence.to_bytes())
        if self.phone_sequence is not None:
            phones.write_bytes(self.phone_sequence.to_bytes())
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(path.with_suffix(".npz").name, phones.name), f, separators=(",", ":"))


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
