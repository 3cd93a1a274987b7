"""Shared fixtures of the voice tests: one scorer and espeak-ng clips made once per session.

espeak-ng is required (scripts/system-deps installs it): without it these
tests fail rather than skip.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import av
import numpy as np
import pytest

from learnloop.voice import PronunciationScorer
from learnloop.voice.audio import decode_audio
from learnloop.voice.evidence import Evidence
from learnloop.voice.synthesis import espeak_phonemes, synthesize

PHRASE = "please call me tomorrow"
OTHER = "the cat sat on the mat"
SPEECHOCEAN = Path(__file__).resolve().parents[1] / "data" / "speechocean762"


def encode(samples: np.ndarray, fmt: str) -> bytes:
    """16 kHz mono int16 samples encoded as mp3 or webm/opus with PyAV."""
    codec, rate = {"mp3": ("libmp3lame", 16000), "webm": ("libopus", 48000)}[fmt]
    buf = io.BytesIO()
    with av.open(buf, mode="w", format=fmt) as container:
        stream = container.add_stream(codec, rate=rate)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(samples.astype(np.int16).reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = 16000
        resampler = av.AudioResampler(format=stream.format.name, layout="mono", rate=rate)
        for out in resampler.resample(frame):
            for packet in stream.encode(out):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buf.getvalue()


@pytest.fixture(scope="session")
def scorer() -> PronunciationScorer:
    return PronunciationScorer()


@pytest.fixture(scope="session")
def clips() -> dict[str, bytes]:
    """WAV bytes of espeak-ng speech, keyed by what was said."""
    out = {
        "phrase": synthesize(PHRASE),
        "other": synthesize(OTHER),
        "slow": synthesize(PHRASE, speed=70),
        # "tomorrow" with its stressed vowel AA said as IY.
        "substituted": synthesize("please call me " + espeak_phonemes("T AH M IY R OW".split())),
    }
    samples, _ = decode_audio(out["phrase"])
    out["phrase.mp3"] = encode(samples, "mp3")
    out["phrase.webm"] = encode(samples, "webm")
    return out


@pytest.fixture(scope="session")
def speechocean_evidence(scorer: PronunciationScorer) -> list[tuple[str, Evidence]]:
    """(utterance, evidence against its labelled phones) for each utterance of the speechocean762 slice."""
    labels: dict[str, dict] = json.loads((SPEECHOCEAN / "scores.json").read_text())
    out = []
    for utt, label in sorted(labels.items()):
        audio = (SPEECHOCEAN / "WAVE" / f"{utt}.WAV").read_bytes()
        words = label["words"]
        ev = scorer.evidence(audio, " ".join(w["text"] for w in words), pronunciations=[w["phones"] for w in words])
        out.append((utt, ev))
    return out
