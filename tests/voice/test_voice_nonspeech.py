"""Audio that holds no speech scores 0; real speech is scored as before.

The non-speech signals are synthesised here (tones, a square wave, a constant
signal, mains hum, clicks, noise); without the speech check each of them scored
50-87 for its phrase. The real speech is the committed slice of speechocean762's
train split (tests/data/speechocean762, CC BY 4.0, Zhang et al. 2021) and
espeak-ng's renditions of the test phrases.
"""

from __future__ import annotations

import dataclasses
import io
import json
import wave
from pathlib import Path

import numpy as np
import pytest

from learnloop.voice import PronunciationScorer, VoiceApi
from learnloop.voice.assessment import default_assessor
from learnloop.voice.evidence import Evidence
from learnloop.voice.speech import SILENCE_MARGIN, SQUEEZED_SHARE, heard, speech_evidence

SR = 16000
SLICE = Path(__file__).resolve().parents[1] / "data" / "speechocean762"


def wav(samples: np.ndarray) -> bytes:
    pcm = np.clip(np.rint(samples), -32768, 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


def _t(seconds: float) -> np.ndarray:
    return np.arange(int(seconds * SR)) / SR


def _hum(seconds: float, f: float, amplitude: float) -> np.ndarray:
    t = _t(seconds)
    return sum(amplitude / k * np.sin(2 * np.pi * f * k * t) for k in range(1, 8)) / 2


def _clicks(seconds: float, rate: int) -> np.ndarray:
    x = np.zeros(len(_t(seconds)))
    x[:: SR // rate] = 30000
    return x


def _pink(seconds: float, level: float) -> np.ndarray:
    n = len(_t(seconds))
    f = np.fft.rfftfreq(n, 1 / SR)
    f[0] = f[1]
    x = np.fft.irfft(np.fft.rfft(np.random.default_rng(0).normal(size=n)) / np.sqrt(f), n)
    return level * 32767 * x / np.abs(x).max()


# name: (phrase, samples); each scored 54-87 for its phrase before the speech check
NON_SPEECH = {
    "constant full scale": ("hello world", lambda: np.full(3 * SR, 32767.0)),
    "constant half scale": ("how are you", lambda: np.full(3 * SR, 16000.0)),
    "white noise": ("hello world", lambda: 0.2 * 32767 * np.random.default_rng(0).normal(size=3 * SR)),
    "pink noise": ("hello world", lambda: _pink(3.0, 0.03)),
    "sine 200 Hz": ("hello world", lambda: 0.9 * 32767 * np.sin(2 * np.pi * 200 * _t(3.0))),
    "sine 440 Hz": ("hello world", lambda: 0.5 * 32767 * np.sin(2 * np.pi * 440 * _t(3.0))),
    "square 250 Hz": ("hello world", lambda: 0.5 * 32767 * np.sign(np.sin(2 * np.pi * 250 * _t(1.5)))),
    "hum 60 Hz and harmonics": ("hello world", lambda: _hum(3.0, 60, 0.9 * 32767)),
    "hum 50 Hz and harmonics": ("the quick brown fox jumps over the lazy dog", lambda: _hum(1.0, 50, 0.5 * 32767)),
    "clicks 5 per second": ("hello world", lambda: _clicks(1.0, 5)),
}


@pytest.mark.parametrize("name", sorted(NON_SPEECH))
def test_audio_without_speech_scores_zero(scorer: PronunciationScorer, name: str) -> None:
    phrase, make = NON_SPEECH[name]
    result = scorer.score(wav(make()), phrase)
    assert result.overall_score == 0
    for word in result.word_scores:
        assert not word.is_matched and word.score == 0
        assert all(p.score == 0 and p.sounds_like == "#" for p in word.phoneme_scores)


def test_the_api_reports_audio_without_speech_as_nothing_said(scorer: PronunciationScorer) -> None:
    api = VoiceApi(scorer, api_keys=None, jwt_issuers=None)
    form = {"dialect": "en-us", "user_id": "u-1", "target_phrase": "hello world"}
    r = api.handle("POST", "/api/v1/fluency/score", form=form, files={"audio": wav(_hum(3.0, 60, 0.9 * 32767))})
    assert r.status == 200
    body = r.body
    assert isinstance(body, dict)
    assert body["overall_score"] == 0
    assert [w["is_matched"] for w in body["word_scores"]] == [False, False]
    assert body["word_scores"][0]["phoneme_scores"][0]["sounds_like"] == "#"
    content = [e["keyword"] for e in body["assessment"]["content"]["explanation"]]
    assert "missing_words" in content


def test_without_the_check_the_same_audio_scores_as_speech(scorer: PronunciationScorer) -> None:
    """The check is what lowers these scores: the scoring model alone calls the audio good speech."""
    ungated = dataclasses.replace(default_assessor(), speech_gate=False)
    ev = scorer.evidence(wav(np.full(3 * SR, 32767.0)), "hello world")
    assert not heard(ev)
    alone = ungated.judge(ev)
    # every phone scores as said well (83-100), and the phrase far above the 0 the check gives (overall
    # 59 with the phones' second sequence model, 62 before it: the words' P(said) is 0.89 and 0.71)
    assert np.all(alone.phone_scores >= 60) and alone.overall_score >= 50
    assert default_assessor().judge(ev).overall_score == 0


def test_real_learners_are_heard_and_scored_as_before(
    scorer: PronunciationScorer, speechocean_evidence: list[tuple[str, Evidence]]
) -> None:
    """Every utterance of the speechocean762 slice is speech, through the product path and against
    the corpus' phones, and its scores are those of the scoring model alone."""
    labels = json.loads((SLICE / "scores.json").read_text())
    against_phones = dict(speechocean_evidence)  # (made once for the voice tests)
    assert sorted(against_phones) == sorted(labels)
    ungated = dataclasses.replace(default_assessor(), speech_gate=False)
    model = default_assessor()
    margins = []
    for utt, label in sorted(labels.items()):
        audio = (SLICE / "WAVE" / f"{utt}.WAV").read_bytes()
        text = " ".join(w["text"] for w in label["words"])
        for ev in (scorer.evidence(audio, text), against_phones[utt]):
            se = speech_evidence(ev)
            assert se.heard, (utt, se)
            margins.append(se.over_silence)
            before, after = ungated.judge(ev), model.judge(ev)
            assert after.overall_score == before.overall_score
            assert np.array_equal(after.word_scores, before.word_scores)
            assert np.array_equal(after.phone_scores, before.phone_scores)
    # most of them are heard by a wide margin, not by the squeezing rule alone
    assert np.mean(np.array(margins) >= SILENCE_MARGIN) > 0.9


def test_synthesised_speech_is_heard(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    for name in ("phrase", "other", "slow", "substituted", "phrase.mp3", "phrase.webm"):
        phrase = "the cat sat on the mat" if name == "other" else "please call me tomorrow"
        se = speech_evidence(scorer.evidence(clips[name], phrase))
        assert se.heard, (name, se)
        assert se.squeezed < SQUEEZED_SHARE
