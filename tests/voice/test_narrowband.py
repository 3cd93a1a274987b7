"""Narrow-band audio (8 kHz, or telephone bandwidth at 16 kHz) is refused with a 400; wide-band audio is not."""

from __future__ import annotations

import io
import wave

import av
import numpy as np
import pytest
from conftest import encode

from learnloop.voice import AudioError, PronunciationScorer, VoiceApi
from learnloop.voice.audio import decode_audio, require_wideband
from learnloop.voice.bandwidth import measure, narrowband_problem
from learnloop.voice.synthesis import synthesize

KEY = {"X-API-KEY": "secret"}
SAID = "she sells sea shells"  # S and SH: most of their energy is above 4 kHz


@pytest.fixture(scope="module")
def api(scorer: PronunciationScorer) -> VoiceApi:
    return VoiceApi(scorer, api_keys={"secret": "app-1"})


@pytest.fixture(scope="module")
def wide() -> np.ndarray:
    """espeak-ng saying SAID, decoded to 16 kHz samples."""
    return decode_audio(synthesize(SAID))[0]


def _wav(samples: np.ndarray, rate: int = 16000) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.clip(np.round(samples), -32768, 32767).astype(np.int16).tobytes())
    return buf.getvalue()


def _lowpass(samples: np.ndarray, cutoff_hz: float, rate: int = 16000) -> np.ndarray:
    spectrum = np.fft.rfft(samples)
    spectrum[np.fft.rfftfreq(len(samples), 1.0 / rate) > cutoff_hz] = 0
    return np.round(np.fft.irfft(spectrum, len(samples)))


def _score(api: VoiceApi, audio: bytes, fmt: str = "wav") -> tuple[int, dict[str, object]]:
    form = {"dialect": "en-us", "user_id": "u-1", "target_phrase": SAID, "audio_format": fmt}
    r = api.handle("POST", "/api/v1/score", form=form, files={"audio": audio}, headers=KEY)
    return r.status, r.body


def _detail(body: dict[str, object]) -> str:
    assert body == {"errors": [{"status": 400, "detail": body["errors"][0]["detail"]}]}  # type: ignore[index]
    detail: str = body["errors"][0]["detail"]  # type: ignore[index]
    return detail


def test_an_8_khz_wav_is_a_400_naming_its_sample_rate(api: VoiceApi, wide: np.ndarray) -> None:
    status, body = _score(api, _wav(_lowpass(wide, 3800)[::2], rate=8000))
    assert status == 400, body
    assert _detail(body) == (
        "audio is narrow-band (8000 Hz sample rate, content up to 4.0 kHz); "
        "16 kHz or more is needed to score pronunciation"
    )


def test_a_16_khz_wav_low_passed_at_3_4_khz_is_a_400(api: VoiceApi, wide: np.ndarray) -> None:
    status, body = _score(api, _wav(_lowpass(wide, 3400)))
    assert status == 400, body
    detail = _detail(body)
    assert detail.startswith("audio is narrow-band (16000 Hz sample rate, content up to 3.")
    assert detail.endswith("16 kHz or more is needed to score pronunciation")


def test_8_khz_audio_resampled_to_16_khz_is_a_400(api: VoiceApi, wide: np.ndarray) -> None:
    eight = _wav(_lowpass(wide, 3800)[::2], rate=8000)
    upsampled = decode_audio(eight)[0]  # ffmpeg's resampler, as a client converting to 16 kHz would use
    status, body = _score(api, _wav(upsampled))
    assert status == 400, body
    assert "narrow-band (16000 Hz sample rate" in _detail(body)


def test_the_same_utterance_wide_band_is_scored(api: VoiceApi, wide: np.ndarray) -> None:
    status, body = _score(api, _wav(wide))
    assert status == 200, body
    assert isinstance(body["overall_score"], int) and body["overall_score"] >= 60
    words = body["word_scores"]
    assert isinstance(words, list) and [w["word"] for w in words] == SAID.split()
    assert all(w["is_matched"] for w in words)


def test_a_quiet_wide_band_utterance_is_not_refused(api: VoiceApi, wide: np.ndarray) -> None:
    quiet = np.round(wide * 10 ** (-45 / 20))  # peaks around -50 dB full scale
    assert np.abs(quiet).max() < 150
    status, body = _score(api, _wav(quiet))
    assert status == 200, body


def test_silence_and_faint_noise_are_not_called_narrow_band() -> None:
    assert narrowband_problem(np.zeros(16000)) is None
    assert measure(np.zeros(16000)).loud_frames == 0
    hiss = np.round(np.random.default_rng(1).normal(0.0, 3.0, 16000))
    assert narrowband_problem(hiss) is None


@pytest.mark.parametrize("voice", ["en-us", "en-us+klatt", "en-gb"])
@pytest.mark.parametrize("word", ["no", "more", "I"])
def test_short_words_without_fricatives_are_not_refused(voice: str, word: str) -> None:
    # vowels and nasals only: little energy above 5 kHz, even wide-band
    for fmt in ("wav", "mp3", "webm"):
        data = synthesize(word, voice=voice)
        if fmt != "wav":
            data = encode(decode_audio(data)[0], fmt)
        samples, kind = decode_audio(data, wideband=True)
        assert kind == fmt and len(samples) > 1600


def test_a_webm_of_telephone_band_audio_is_refused(api: VoiceApi, wide: np.ndarray) -> None:
    status, body = _score(api, encode(_lowpass(wide, 3400), "webm"), fmt="webm")
    assert status == 400, body
    assert "narrow-band (48000 Hz sample rate" in _detail(body)


def test_an_8_khz_mp3_is_refused_by_its_sample_rate(api: VoiceApi, wide: np.ndarray) -> None:
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="mp3") as container:
        stream = container.add_stream("libmp3lame", rate=8000)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(wide.astype(np.int16).reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = 16000
        resampler = av.AudioResampler(format=stream.format.name, layout="mono", rate=8000)
        for out in resampler.resample(frame):
            for packet in stream.encode(out):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    status, body = _score(api, buf.getvalue(), fmt="mp3")
    assert status == 400, body
    assert "narrow-band (8000 Hz sample rate, content up to 4.0 kHz)" in _detail(body)


def test_the_library_raises_the_same_error_for_bytes_and_samples(scorer: PronunciationScorer, wide: np.ndarray) -> None:
    narrow = _lowpass(wide, 3400)
    for audio in (_wav(narrow), narrow.astype(np.int16), (narrow / 32768.0).astype(np.float32)):
        with pytest.raises(AudioError, match="narrow-band"):
            scorer.score(audio, SAID)
        with pytest.raises(AudioError, match="narrow-band"):
            scorer.multichoice(audio, [SAID, "good morning"])
        with pytest.raises(AudioError, match="narrow-band"):
            scorer._prepare(audio)  # the path every scoring method (score, multichoice, evidence) takes
    assert scorer.score(wide.astype(np.int16), SAID).overall_score >= 60
    with pytest.raises(AudioError, match="8000 Hz"):
        require_wideband(narrow[::2], source_rate=8000)
    require_wideband(wide)


def test_decode_audio_refuses_only_when_asked(wide: np.ndarray) -> None:
    narrow = _wav(_lowpass(wide, 3400))
    samples, kind = decode_audio(narrow)
    assert kind == "wav" and len(samples) == len(wide)
    with pytest.raises(AudioError, match="narrow-band"):
        decode_audio(narrow, wideband=True)
