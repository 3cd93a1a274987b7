"""Audio decoding: wav, mp3 and webm bytes to 16 kHz mono samples.

Decoding uses PyAV (ffmpeg inside the ``av`` wheel of the ``voice`` extra),
imported lazily.  The container is recognised from the bytes themselves; only
the three documented formats are accepted.  Samples come back as float64 in
16-bit units (full scale ±32768), the scale the acoustic model expects.
"""

from __future__ import annotations

import io
from typing import Any, Final

import numpy as np

from learnloop.errors import ValidationError

__all__ = ["AUDIO_FORMATS", "MAX_AUDIO_SECONDS", "AudioError", "decode_audio"]

AUDIO_FORMATS: Final = ("wav", "mp3", "webm")
MAX_AUDIO_SECONDS: Final = 60.0
MAX_AUDIO_BYTES: Final = 16 * 1024 * 1024
_SAMPLE_RATE = 16000
# ffmpeg demuxer names -> the documented format they carry.
_CONTAINERS: Final = {"wav": "wav", "mp3": "mp3", "matroska,webm": "webm", "webm": "webm"}


class AudioError(ValidationError):
    """Audio bytes that are empty, undecodable, of an unsupported format or too long."""


def _av() -> Any:
    try:
        import av
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("decoding audio needs the 'voice' extra: pip install 'learnloop[voice]'") from exc
    return av


def decode_audio(data: bytes, *, max_seconds: float = MAX_AUDIO_SECONDS) -> tuple[np.ndarray, str]:
    """Decode ``data`` to 16 kHz mono; returns ``(samples, format)``.

    Raises :class:`AudioError` for empty, undecodable, unsupported or over-long audio.

    >>> decode_audio(b"not audio")
    Traceback (most recent call last):
      ...
    learnloop.voice.audio.AudioError: audio could not be decoded as wav, mp3 or webm
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise AudioError(f"audio must be bytes, not {type(data).__name__}")
    raw = bytes(data)
    if not raw:
        raise AudioError("audio is empty")
    if len(raw) > MAX_AUDIO_BYTES:
        raise AudioError(f"audio is too large: {len(raw)} bytes > {MAX_AUDIO_BYTES}")
    av = _av()
    max_samples = int(max_seconds * _SAMPLE_RATE)
    try:
        container = av.open(io.BytesIO(raw), mode="r")
    except (av.error.FFmpegError, ValueError, OSError, UnicodeDecodeError):
        raise AudioError("audio could not be decoded as wav, mp3 or webm") from None
    try:
        kind = _CONTAINERS.get(container.format.name)
        if kind is None:
            raise AudioError(f"unsupported audio container '{container.format.name}': use wav, mp3 or webm")
        if not container.streams.audio:
            raise AudioError("the file holds no audio stream")
        resampler = av.AudioResampler(format="s16", layout="mono", rate=_SAMPLE_RATE)
        chunks: list[np.ndarray] = []
        total = 0
        seconds = 0.0
        too_long = AudioError(f"audio is longer than {max_seconds:g} seconds")
        try:
            for frame in container.decode(audio=0):
                # the length decoded so far, in the input's own samples: checked before the
                # frame is resampled, so a header claiming a tiny sample rate cannot make
                # the resampler produce unbounded output
                rate = frame.sample_rate or 0
                if rate <= 0:
                    raise AudioError(f"audio could not be decoded as {kind}: no sample rate")
                seconds += frame.samples / rate
                if seconds > max_seconds:
                    raise too_long
                for out in resampler.resample(frame):
                    chunk = out.to_ndarray().reshape(-1)
                    chunks.append(chunk)
                    total += len(chunk)
                if total > max_samples:
                    raise too_long
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
        except AudioError:
            raise  # an AudioError is a ValueError: never taken for a decoding hiccup below
        except (av.error.FFmpegError, ValueError, OSError):
            if not chunks:
                raise AudioError(f"audio could not be decoded as {kind}") from None
    finally:
        container.close()
    samples = np.concatenate(chunks).astype(np.float64) if chunks else np.zeros(0)
    if len(samples) < _SAMPLE_RATE // 10:
        raise AudioError("audio is shorter than 0.1 seconds")
    return samples, kind
