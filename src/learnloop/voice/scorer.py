"""The pronunciation scorer: audio and a target phrase in, word/syllable/phone scores out.

Pipeline: decode (``audio``) -> pad with 250 ms of quiet and add a fixed,
seeded noise floor (synthetic or gated audio has digital silence the model
never saw) -> MFCC features (``features``) -> forced alignment over the
phrase's pronunciations (``alignment``) -> GOP per phone (``gop``) ->
calibrated 0..100 scores (``calibration``); audio in which the model hears no
speech scores 0 (``speech``).

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
from learnloop.voice.alignment import align
from learnloop.voice.assessment import Assessor, Judgement, default_assessor
from learnloop.voice.audio import MAX_AUDIO_SECONDS, decode_audio
from learnloop.voice.calibration import CALIBRATION, Calibration
from learnloop.voice.evidence import Evidence
from learnloop.voice.features import FRAME_SHIFT, SAMPLE_RATE, mfcc_features
from learnloop.voice.fluency import assess
from learnloop.voice.gop import PhoneGop, ci_loglik, phone_gops, speech_frames, word_match
from learnloop.voice.lexicon import Lexicon, Token, tokenize
from learnloop.voice.phonemes import IPA, PHONES, respell, to_ipa
from learnloop.voice.results import PhonemeScore, PhraseScore, SyllableScore, WordScore
from learnloop.voice.syllables import syllabify

__all__ = ["MAX_PHRASE_CHARS", "MAX_PHRASE_WORDS", "PronunciationScorer"]

MAX_PHRASE_CHARS = 500
MAX_PHRASE_WORDS = 60
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
        assessor: Assessor | None = None,
        max_seconds: float = MAX_AUDIO_SECONDS,
        pin_blas: bool = True,
    ) -> None:
        self.model_dir = None if model_dir is None else Path(model_dir)
        self.dictionary = None if dictionary is None else Path(dictionary)
        self.calibration = calibration
        self._assessor = assessor
        self.max_seconds = max_seconds
        self.pin_blas = pin_blas

    def _pin(self) -> None:
        if self.pin_blas:
            _one_blas_thread()

    @property
    def assessor(self) -> Assessor:
        """The scoring model (:mod:`learnloop.voice.assessment`; the shipped one by default)."""
        return self._assessor if self._assessor is not None else default_assessor()

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
        self._pin()
        utterance = self._prepare(audio)
        variants = [self.lexicon.pronunciations(t.key) for t in tokens]
        return self._result(self._evidence(utterance, variants), target_phrase, tokens, fluency=fluency)

    def multichoice(self, audio: bytes | np.ndarray, phrases: Sequence[str]) -> PhraseScore:
        """Score ``audio`` against the candidate phrase it matches best.

        The best match is the candidate whose forced alignment explains the audio
        with the highest likelihood (the question a recogniser asks), not the one
        with the highest score: a badly said right answer must not lose to a
        well-fitting part of a wrong one. Ties go to the earlier candidate; a
        candidate too long for the audio comes last.
        """
        if not phrases:
            raise ValidationError("at least one candidate phrase is needed")
        token_lists = [self._tokens(p) for p in phrases]
        self._pin()
        utterance = self._prepare(audio)
        best: tuple[float, int, Evidence] | None = None
        for at, tokens in enumerate(token_lists):
            variants = [self.lexicon.pronunciations(t.key) for t in tokens]
            ev = self._evidence(utterance, variants, gop=False)
            fit = -np.inf if ev.alignment is None else ev.alignment.loglik
            if best is None or fit > best[0]:
                best = (fit, at, ev)
        assert best is not None
        _, at, ranked = best
        variants = [self.lexicon.pronunciations(t.key) for t in token_lists[at]]
        ev = self._evidence(utterance, variants, aligned=ranked)  # the winner's alignment, not computed again
        return self._result(ev, phrases[at], token_lists[at], fluency=False)

    def evidence(
        self,
        audio: bytes | np.ndarray,
        target_phrase: str,
        *,
        pronunciations: Sequence[Sequence[str]] | None = None,
    ) -> Evidence:
        """The acoustic evidence of ``audio`` against ``target_phrase`` (see :class:`Evidence`).

        ``pronunciations`` (one phone sequence per word of the phrase, ARPABET;
        stress digits are dropped) replaces the dictionary's variants, e.g. to
        score against the canonical phones a corpus was labelled with.
        """
        tokens = self._tokens(target_phrase)
        if pronunciations is None:
            variants = [self.lexicon.pronunciations(t.key) for t in tokens]
        else:
            variants = _given(tokens, pronunciations)
        self._pin()
        return self._evidence(self._prepare(audio), variants)

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

    def _evidence(
        self,
        utt: _Utterance,
        variants: list[list[tuple[str, ...]]],
        *,
        gop: bool = True,
        aligned: Evidence | None = None,
    ) -> Evidence:
        """The evidence of ``utt`` (without ``gop``: the alignment alone, for ranking candidates;
        ``aligned``: such evidence of the same variants, whose alignment is reused)."""
        model = self.model
        cache = utt.densities
        ci_ll = ci_loglik(model, utt.features, cache=cache)
        alignment = aligned.alignment if aligned is not None else align(model, utt.features, variants, cache=cache)
        gops = []
        if gop and alignment is not None:
            gops = phone_gops(model, utt.features, alignment, ci_ll, cache=cache)
        by_word: dict[int, list[PhoneGop]] = {}
        for g in gops:
            by_word.setdefault(g.word, []).append(g)
        chosen = alignment.variants if alignment is not None else (0,) * len(variants)
        speech = speech_frames(ci_ll)
        return Evidence(
            pronunciations=tuple(tuple(v[c]) for v, c in zip(variants, chosen, strict=True)),
            alignment=alignment,
            gops=tuple(gops),
            word_match=tuple(word_match(model, ci_ll, by_word.get(w, [])) for w in range(len(variants))),
            speech_frames=int(np.count_nonzero(speech)),
            n_frames=len(utt.features),
            speech=speech,
        )

    def _result(self, ev: Evidence, phrase: str, tokens: list[Token], *, fluency: bool) -> PhraseScore:
        judgement = self.assessor.judge(ev)
        word_scores = self._word_scores(tokens, ev, judgement)
        assessment = None
        if fluency:
            assessment = assess(
                ev.alignment,
                words=[t.text for t in tokens],
                matched=[w.is_matched for w in word_scores],
                syllables_per_word=[max(1, len(w.syllable_scores)) for w in word_scores],
                pronunciation_score=judgement.overall_score,
                speech_frames=ev.speech if ev.speech is not None else np.zeros(ev.n_frames, dtype=bool),
            )
        return PhraseScore(phrase, judgement.overall_score, tuple(word_scores), assessment)

    def _word_scores(self, tokens: list[Token], ev: Evidence, judgement: Judgement) -> list[WordScore]:
        position = {(g.word, g.index): k for k, g in enumerate(ev.gops)}
        ms_per_frame = FRAME_SHIFT * 1000 // SAMPLE_RATE
        pad_ms = _PAD_SAMPLES * 1000 // SAMPLE_RATE
        sounds_like = self.assessor.sounds_like(ev, judgement)
        out = []
        for w, token in enumerate(tokens):
            phones = list(ev.pronunciations[w])
            ipa = to_ipa(phones)
            word_gops = ev.word_gops(w)
            scores = []
            for i, phone in enumerate(phones):
                k = position.get((w, i))
                if k is None:
                    scores.append(PhonemeScore(phone, ipa[i], "#", "#", 0))
                    continue
                value = int(judgement.phone_scores[k])
                like = sounds_like[k]
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
            if word_gops:
                start_ms = max(0, word_gops[0].start * ms_per_frame - pad_ms)
                end_ms = max(start_ms, word_gops[-1].end * ms_per_frame - pad_ms)
            else:
                start_ms = end_ms = 0
            out.append(
                WordScore(
                    word=token.text,
                    is_matched=bool(judgement.said[w] >= self.assessor.matched_above),
                    start_ms=int(start_ms),
                    end_ms=int(end_ms),
                    start=token.start,
                    end=token.end,
                    score=int(judgement.word_scores[w]),
                    phoneme_scores=tuple(scores),
                    syllable_scores=tuple(sylls),
                )
            )
        return out


def _given(tokens: list[Token], pronunciations: Sequence[Sequence[str]]) -> list[list[tuple[str, ...]]]:
    """One variant per word from caller-given phones (stress digits dropped), checked."""
    if len(pronunciations) != len(tokens):
        raise ValidationError(f"{len(pronunciations)} pronunciations for {len(tokens)} words")
    out = []
    for token, phones in zip(tokens, pronunciations, strict=True):
        plain = tuple(p.rstrip("012").upper() for p in phones)
        unknown = sorted(set(plain) - set(PHONES))
        if not plain or unknown:
            raise ValidationError(f"pronunciation of {token.text!r}: unknown phones {unknown or '(none given)'}")
        out.append([plain])
    return out


_PIN_LOCK = threading.Lock()
_PINNED = False


def _one_blas_thread() -> None:
    """Limit the process's BLAS libraries to one thread, once.

    The scorer's matrix products are small: on a busy machine, BLAS threads only
    contend (a real-time factor of 0.128 with the default threads against 0.021
    with one, on 2 shared cores). OpenBLAS keeps one process-wide setting that
    only one Python thread may change (threadpoolctl enforces this), so the limit
    is set for the process on the first scoring call and left in place; pass
    ``pin_blas=False`` to the scorer to manage threads yourself.
    """
    global _PINNED
    if _PINNED:
        return
    with _PIN_LOCK:
        if not _PINNED:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
            _PINNED = True
