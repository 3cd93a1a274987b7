"""Audio decoding: wav, mp3 and webm bytes to 16 kHz mono samples.

Decoding uses PyAV (ffmpeg inside the ``av`` wheel of the ``voice`` extra),
imported lazily.  The container is recognised from the bytes themselves; only
the three documented formats are accepted.  Samples come back as float64 in
16-bit units (full scale ±32768), the scale the acoustic model expects.

``decode_audio(data, wideband=True)`` (what the scorer uses) also refuses
narrow-band audio: a declared sample rate below 16 kHz, or (wav and webm) a
spectrum that stops near 4 kHz (see :mod:`learnloop.voice.bandwidth`).  mp3 is
checked by its sample rate only: its encoder drops faint high-frequency energy,
which makes words of vowels and nasals look band-limited.
"""

from __future__ import annotations

import io
from typing import Any, Final

import numpy as np

from learnloop.errors import ValidationError
from learnloop.voice.bandwidth import MIN_SAMPLE_RATE, narrowband_message, narrowband_problem

__all__ = ["AUDIO_FORMATS", "MAX_AUDIO_SECONDS", "AudioError", "decode_audio", "require_wideband"]

AUDIO_FORMATS: Final = ("wav", "mp3", "webm")
MAX_AUDIO_SECONDS: Final = 60.0
MAX_AUDIO_BYTES: Final = 16 * 1024 * 1024
_SAMPLE_RATE = 16000
# ffmpeg demuxer names -> the documented format they carry.
_CONTAINERS: Final = {"wav": "wav", "mp3": "mp3", "matroska,webm": "webm", "webm": "webm"}


class AudioError(ValidationError):
    """Audio bytes that are empty, undecodable, of an unsupported format, too long or narrow-band."""


def _av() -> Any:
    try:
        import av
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("decoding audio needs the 'voice' extra: pip install 'learnloop[voice]'") from exc
    return av


def require_wideband(samples: np.ndarray, *, source_rate: int | None = None, spectral: bool = True) -> None:
    """Raise :class:`AudioError` if 16 kHz ``samples`` (16-bit units) are narrow-band.

    ``source_rate`` is the sample rate the audio was decoded from (``None``: 16 kHz);
    ``spectral=False`` checks only that.  Silent audio passes: nothing in it tells
    the bandwidth.
    """
    problem = narrowband_problem(samples, source_rate=source_rate, spectral=spectral)
    if problem is not None:
        raise AudioError(problem)


def decode_audio(
    data: bytes, *, max_seconds: float = MAX_AUDIO_SECONDS, wideband: bool = False
) -> tuple[np.ndarray, str]:
    """Decode ``data`` to 16 kHz mono; returns ``(samples, format)``.

    Raises :class:`AudioError` for empty, undecodable, unsupported or over-long audio,
    and with ``wideband=True`` for narrow-band audio (see :func:`require_wideband`).

    >>> decode_audio(b"not audio")
    Traceback (most recent call last):
      ...
    learnloop.voice.audio.AudioError: audio could not be decoded as wav, mp3 or webm
    """
    samples, kind, rate = _decode(data, max_seconds=max_seconds, min_rate=MIN_SAMPLE_RATE if wideband else 0)
    if wideband:
        require_wideband(samples, source_rate=rate, spectral=kind != "mp3")
    return samples, kind


def _decode(data: bytes, *, max_seconds: float, min_rate: int = 0) -> tuple[np.ndarray, str, int]:
    """``(samples at 16 kHz, format, the source's lowest sample rate)``; refuses a rate below ``min_rate``."""
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
        source_rate = 0
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
                source_rate = rate if not source_rate else min(source_rate, rate)
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
    if 0 < source_rate < min_rate:
        raise AudioError(narrowband_message(source_rate, source_rate / 2))
    samples = np.concatenate(chunks).astype(np.float64) if chunks else np.zeros(0)
    if len(samples) < _SAMPLE_RATE // 10:
        raise AudioError("audio is shorter than 0.1 seconds")
    return samples, kind, source_rate
