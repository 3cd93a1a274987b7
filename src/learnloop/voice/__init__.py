"""learnloop.voice: pronunciation scoring of spoken English and the voice API.

>>> from learnloop.voice import PronunciationScorer, VoiceApi
>>> r = VoiceApi(api_keys={"k": "app-1"}).handle("POST", "/api/v1/syllables", form={"target_phrase": "hi"})
>>> r.status
401

Heavy dependencies (pocketsphinx's model files, PyAV, PyJWT) are imported only
when first needed; install them with ``pip install 'learnloop[voice]'``.
"""

from __future__ import annotations

from learnloop.voice.api import VoiceApi
from learnloop.voice.audio import AudioError, decode_audio
from learnloop.voice.calibration import CALIBRATION, Calibration
from learnloop.voice.results import (
    Assessment,
    Explanation,
    PhonemeScore,
    PhraseScore,
    SyllableScore,
    WordScore,
)
from learnloop.voice.scorer import PronunciationScorer

__all__ = [
    "Assessment",
    "AudioError",
    "CALIBRATION",
    "Calibration",
    "Explanation",
    "PhonemeScore",
    "PhraseScore",
    "PronunciationScorer",
    "SyllableScore",
    "VoiceApi",
    "WordScore",
    "decode_audio",
]
