"""Audio length is enforced from what decodes, for every container; memory stays bounded."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import textwrap
import wave

import numpy as np
import pytest
from conftest import PHRASE, encode

from learnloop.voice import PronunciationScorer, VoiceApi

KEY = {"X-API-KEY": "secret"}


@pytest.fixture(scope="module")
def api(scorer: PronunciationScorer) -> VoiceApi:
    return VoiceApi(scorer, api_keys={"secret": "app-1"})


def _wav(samples: np.ndarray, rate: int = 16000) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype(np.int16).tobytes())
    return buf.getvalue()


def _noise(seconds: float) -> np.ndarray:
    return (np.random.default_rng(0).normal(0.0, 300.0, int(16000 * seconds))).astype(np.int16)


def _score(api: VoiceApi, audio: bytes) -> tuple[int, object]:
    form = {"dialect": "en-us", "user_id": "u-1", "target_phrase": PHRASE}
    r = api.handle("POST", "/api/v1/score", form=form, files={"audio": audio}, headers=KEY)
    return r.status, r.body


@pytest.mark.parametrize("fmt", ["wav", "mp3", "webm"])
def test_audio_over_60_seconds_is_a_400_in_every_container(api: VoiceApi, fmt: str) -> None:
    samples = _noise(75.0)
    audio = _wav(samples) if fmt == "wav" else encode(samples, fmt)
    status, body = _score(api, audio)
    assert status == 400, body
    assert "longer than 60 seconds" in str(body)


def test_a_wav_header_claiming_a_tiny_sample_rate_is_a_400_without_decoding_it_all(api: VoiceApi) -> None:
    # 2,000 samples at 1 Hz claim 33 minutes; resampled to 16 kHz they would be 32 million samples
    status, body = _score(api, _wav(_noise(0.125), rate=1))
    assert status == 400, body
    assert "longer than 60 seconds" in str(body)


def test_a_wav_header_claiming_a_huge_data_chunk_is_bounded(api: VoiceApi) -> None:
    audio = bytearray(_wav(_noise(2.0)))
    at = audio.index(b"data") + 4
    audio[at : at + 4] = struct.pack("<I", 0xFFFFFFF0)  # the header claims ~4 GB of samples
    status, _ = _score(api, bytes(audio))
    assert status in (200, 400)  # scored from what is there, or refused: never unbounded, never a 500


def test_a_body_that_decodes_to_nothing_is_a_400(api: VoiceApi) -> None:
    status, body = _score(api, _wav(np.zeros(0, dtype=np.int16)))
    assert status == 400, body


def test_an_empty_api_key_is_refused_at_construction(scorer: PronunciationScorer) -> None:
    with pytest.raises(ValueError):
        VoiceApi(scorer, api_keys={"": "app-1"})
    with pytest.raises(ValueError):
        VoiceApi(scorer, api_keys={"k": ""})


@pytest.mark.slow
def test_scoring_a_minute_of_audio_peaks_below_300_mb() -> None:
    code = textwrap.dedent(
        """
        import io, wave
        import numpy as np
        from learnloop.voice import PronunciationScorer
        from learnloop.voice.synthesis import synthesize
        from learnloop.voice.audio import decode_audio
        clip, _ = decode_audio(synthesize("please call me tomorrow, the cat sat on the mat"))
        reps = int(58 * 16000 // len(clip))
        samples = np.tile(clip, reps).astype(np.int16)
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(samples.tobytes())
        phrase = " ".join(["please call me tomorrow the cat sat on the mat"] * reps)
        words = phrase.split()[:60]
        PronunciationScorer().score(buf.getvalue(), " ".join(words))
        # the high-water mark of this process's own memory (ru_maxrss would count the parent's
        # pages at fork time too)
        hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
        print(int(hwm.split()[1]) // 1024)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    peak_mb = int(done.stdout.strip().splitlines()[-1])
    assert peak_mb < 300, f"peak RSS {peak_mb} MB"
