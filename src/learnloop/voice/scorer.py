"""The pronunciation scorer: audio and a target phrase in, word/syllable/phone scores out.

Pipeline: decode (``audio``) -> pad with 250 ms of quiet and add a fixed,
seeded noise floor (synthetic or gated audio has digital silence the model
never saw) -> MFCC features (``features``) -> forced alignment over the
phrase's pronunciations (``alignment``) -> GOP per phone (``gop``) ->
calibrated 0..100 scores (``calibration``).

The acoustic model and the dictionary are loaded once, lazily, on first use,
and shared by every scorer in the process; scoring only reads them, so a
scorer may be used from several threads at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from learnloop.errors import ValidationError
from learnloop.voice.acoustic import DensityCache, SphinxModel
from learnloop.voice.alignment import Alignment, align
from learnloop.voice.audio import MAX_AUDIO_SECONDS, decode_audio
from learnloop.voice.calibration import CALIBRATION, Calibration
from learnloop.voice.features import FRAME_SHIFT, SAMPLE_RATE, mfcc_features
from learnloop.voice.fluency import assess
from learnloop.voice.gop import PhoneGop, ci_loglik, phone_gops, speech_frames, word_match
from learnloop.voice.lexicon import Lexicon, Token, tokenize
from learnloop.voice.phonemes import IPA, respell, to_ipa
from learnloop.voice.results import PhonemeScore, PhraseScore, SyllableScore, WordScore
from learnloop.voice.syllables import syllabify

__all__ = ["MAX_PHRASE_CHARS", "MAX_PHRASE_WORDS", "PronunciationScorer"]

MAX_PHRASE_CHARS = 500
MAX_PHRASE_WORDS = 60
# A word is "matched" when its phones explain its span nearly as well as the best
# free phone sequence: at most this many nats per frame worse (see docs/voice.md).
MATCH_THRESHOLD = -2.0
_PAD_SAMPLES = SAMPLE_RATE // 4
_NOISE_STD = 100.0  # about -50 dB below full scale
_NOISE_SEED = 20240607

_SHARED: dict[tuple[str, ...], object] = {}
_SHARED_LOCK = threading.Lock()


def _shared(key: tuple[str, ...], make: Callable[[], Any]) -> Any:
    found = _SHARED.get(key)
    if found is not None:
        return found
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = make()
            _SHARED[key] = found
        return found


@dataclass(frozen=True, slots=True)
class _Utterance:
    features: np.ndarray
    densities: DensityCache  # Gaussian densities on these features, filled as codebooks are used


class PronunciationScorer:
    """Scores spoken English (en-us) against target phrases.

    ``model_dir`` and ``dictionary`` default to the en-us model and CMU
    dictionary of the pocketsphinx wheel (the ``voice`` extra).

    >>> scorer = PronunciationScorer()
    >>> [w["word"] for w in scorer.syllables("Hello world")["word_scores"]]
    ['Hello', 'world']
    """

    def __init__(
        self,
        *,
        model_dir: str | Path | None = None,
        dictionary: str | Path | None = None,
        calibration: Calibration = CALIBRATION,
        max_seconds: float = MAX_AUDIO_SECONDS,
    ) -> None:
        self.model_dir = None if model_dir is None else Path(model_dir)
        self.dictionary = None if dictionary is None else Path(dictionary)
        self.calibration = calibration
        self.max_seconds = max_seconds

    # -- shared resources ----------------------------------------------------------
    @property
    def model(self) -> SphinxModel:
        """The acoustic model (loaded on first use, shared across scorers)."""
        key = ("model", str(self.model_dir))
        model: SphinxModel = _shared(key, lambda: SphinxModel(self.model_dir))
        return model

    @property
    def lexicon(self) -> Lexicon:
        key = ("lexicon", str(self.dictionary))
        lexicon: Lexicon = _shared(key, lambda: Lexicon(self.dictionary))
        return lexicon

    # -- public operations ----------------------------------------------------------
    def score(self, audio: bytes | np.ndarray, target_phrase: str, *, fluency: bool = False) -> PhraseScore:
        """Score ``audio`` (wav/mp3/webm bytes, or 16 kHz samples) against one phrase."""
        tokens = self._tokens(target_phrase)
        utterance = self._prepare(audio)
        return self._score(utterance, target_phrase, tokens, fluency=fluency)

    def multichoice(self, audio: bytes | np.ndarray, phrases: Sequence[str]) -> PhraseScore:
        """Score ``audio`` against each candidate phrase and return the best match.

        Ties go to the earlier candidate.
        """
        if not phrases:
            raise ValidationError("at least one candidate phrase is needed")
        token_lists = [self._tokens(p) for p in phrases]
        utterance = self._prepare(audio)
        best: PhraseScore | None = None
        for phrase, tokens in zip(phrases, token_lists):
            result = self._score(utterance, phrase, tokens, fluency=False)
            if best is None or result.overall_score > best.overall_score:
                best = result
        assert best is not None
        return best

    def syllables(self, target_phrase: str) -> dict[str, object]:
        """Syllable structure of a phrase (the ``/api/v1/syllables`` body), without audio."""
        tokens = self._tokens(target_phrase)
        words = []
        for token in tokens:
            phones = list(self.lexicon.pronunciations(token.key)[0])
            ipa = to_ipa(phones)
            sylls = []
            at = 0
            for syl in syllabify(phones):
                sylls.append(
                    {
                        "syllable": respell(syl),
                        "syllable_ipa": "".join(ipa[at : at + len(syl)]),
                        "phoneme_scores": [{"phoneme": p, "phoneme_ipa": ipa[at + i]} for i, p in enumerate(syl)],
                    }
                )
                at += len(syl)
            words.append(
                {
                    "word": token.text,
                    "indices": {"start": token.start, "end": token.end},
                    "phoneme_scores": [{"phoneme": p, "phoneme_ipa": q} for p, q in zip(phones, ipa)],
                    "syllable_scores": sylls,
                }
            )
        return {"target_phrase": target_phrase, "word_scores": words}

    # -- internals ------------------------------------------------------------------
    def _tokens(self, phrase: str) -> list[Token]:
        if not isinstance(phrase, str):
            raise ValidationError(f"target_phrase must be a string, not {type(phrase).__name__}")
        if len(phrase) > MAX_PHRASE_CHARS:
            raise ValidationError(f"target_phrase is too long: {len(phrase)} characters > {MAX_PHRASE_CHARS}")
        tokens = tokenize(phrase)
        if not tokens:
            raise ValidationError(f"target_phrase {phrase!r} holds no words")
        if len(tokens) > MAX_PHRASE_WORDS:
            raise ValidationError(f"target_phrase is too long: {len(tokens)} words > {MAX_PHRASE_WORDS}")
        return tokens

    def _prepare(self, audio: bytes | np.ndarray) -> _Utterance:
        if isinstance(audio, np.ndarray):
            samples = audio.astype(np.float64).reshape(-1)
            if audio.dtype.kind == "f":
                samples = samples * 32768.0
            from learnloop.voice.audio import require_wideband

            require_wideband(samples)
        else:
            samples, _ = decode_audio(audio, max_seconds=self.max_seconds, wideband=True)
        pad = np.zeros(_PAD_SAMPLES)
        padded = np.concatenate([pad, samples, pad])
        padded = padded + np.random.default_rng(_NOISE_SEED).normal(0.0, _NOISE_STD, len(padded))
        return _Utterance(mfcc_features(padded), DensityCache())

    def _score(self, utt: _Utterance, phrase: str, tokens: list[Token], *, fluency: bool) -> PhraseScore:
        model = self.model
        variants = [self.lexicon.pronunciations(t.key) for t in tokens]
        cache = utt.densities
        ci_ll = ci_loglik(model, utt.features, cache=cache)
        alignment = align(model, utt.features, variants, cache=cache)
        gops = phone_gops(model, utt.features, alignment, ci_ll, cache=cache) if alignment is not None else []
        word_scores = self._word_scores(tokens, variants, alignment, gops, ci_ll)
        all_phones = [p.score for w in word_scores for p in w.phoneme_scores]
        overall = int(round(float(np.mean(all_phones)))) if all_phones else 0
        assessment = None
        if fluency:
            assessment = assess(
                alignment,
                words=[t.text for t in tokens],
                matched=[w.is_matched for w in word_scores],
                syllables_per_word=[max(1, len(w.syllable_scores)) for w in word_scores],
                pronunciation_score=overall,
                speech_frames=speech_frames(ci_ll),
            )
        return PhraseScore(phrase, overall, tuple(word_scores), assessment)

    def _word_scores(
        self,
        tokens: list[Token],
        variants: list[list[tuple[str, ...]]],
        alignment: Alignment | None,
        gops: list[PhoneGop],
        ci_ll: np.ndarray,
    ) -> list[WordScore]:
        by_word: dict[int, list[PhoneGop]] = {}
        for g in gops:
            by_word.setdefault(g.word, []).append(g)
        ms_per_frame = FRAME_SHIFT * 1000 // SAMPLE_RATE
        pad_ms = _PAD_SAMPLES * 1000 // SAMPLE_RATE
        out = []
        for w, token in enumerate(tokens):
            chosen = alignment.variants[w] if alignment is not None else 0
            phones = list(variants[w][chosen])
            ipa = to_ipa(phones)
            word_gops = by_word.get(w, [])
            scores = []
            for i, phone in enumerate(phones):
                found = word_gops[i] if i < len(word_gops) else None
                if found is None:
                    scores.append(PhonemeScore(phone, ipa[i], "#", "#", 0))
                    continue
                g = found
                z = self.calibration.normalised_gop(g.phone, g.llr)
                value = int(np.rint(100.0 * float(self.calibration.probability(z))))
                like = self.calibration.sounds_like(g.phone, g.llr)
                like_ipa = ipa[i] if like == phone else IPA.get(like, "#")
                scores.append(PhonemeScore(phone, ipa[i], like, like_ipa, value))
            sylls = []
            at = 0
            for syl in syllabify(phones):
                part = scores[at : at + len(syl)]
                sylls.append(
                    SyllableScore(
                        respell(syl),
                        "".join(ipa[at : at + len(syl)]),
                        int(round(float(np.mean([p.score for p in part])))) if part else 0,
                        tuple(part),
                    )
                )
                at += len(syl)
            word_score = int(round(float(np.mean([p.score for p in scores])))) if scores else 0
            match = word_match(self.model, ci_ll, word_gops)
            if word_gops:
                start_ms = max(0, word_gops[0].start * ms_per_frame - pad_ms)
                end_ms = max(start_ms, word_gops[-1].end * ms_per_frame - pad_ms)
            else:
                start_ms = end_ms = 0
            out.append(
                WordScore(
                    word=token.text,
                    is_matched=bool(word_gops) and match >= MATCH_THRESHOLD,
                    start_ms=int(start_ms),
                    end_ms=int(end_ms),
                    start=token.start,
                    end=token.end,
                    score=word_score,
                    phoneme_scores=tuple(scores),
                    syllable_scores=tuple(sylls),
                )
            )
        return out
