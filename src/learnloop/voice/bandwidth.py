"""Narrow-band audio: telephone-bandwidth speech the 16 kHz acoustic model cannot score.

The acoustic model hears 0-8 kHz.  Audio recorded at 8 kHz, or band-limited to
telephone bandwidth (about 0.3-3.4 kHz) and stored at a higher rate, carries
nothing above 4 kHz, where the fricatives S, SH, F, TH and Z have most of their
energy; scored anyway, those phones come out near 0.  Such audio is told apart
by its declared sample rate, and, at 16 kHz or more, by its spectrum: over the
loud frames (within :data:`LOUD_DB` of the loudest, so pauses and hiss do not
count), the energy above 5 kHz is compared with the energy at 2-3.5 kHz, just
below a telephone channel's edge.  Wide-band speech keeps some energy above
5 kHz (aspiration, fricatives, vowel harmonics, microphone noise); band-limited
speech has only what quantisation and resampling leave there.

The thresholds come from speechocean762 and espeak-ng speech and their
band-limited versions (docs/voice.md, "Narrow-band audio").  Numpy only.
"""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np

__all__ = [
    "HIGH_DROP_DB",
    "MIN_SAMPLE_RATE",
    "Bandwidth",
    "measure",
    "narrowband_message",
    "narrowband_problem",
]

MIN_SAMPLE_RATE: Final = 16000
SAMPLE_RATE: Final = 16000
# Narrow-band: the energy above HIGH_HZ is more than HIGH_DROP_DB below the energy in
# the reference band, which itself holds at least MIN_REFERENCE_DB of the total.
HIGH_HZ: Final = 5000.0
REFERENCE_HZ: Final = (2000.0, 3500.0)
HIGH_DROP_DB: Final = -50.0
MIN_REFERENCE_DB: Final = -40.0
LOUD_DB: Final = 30.0
_FRAME: Final = 512
_HOP: Final = 256
_LOW_HZ: Final = 100.0  # below this: hum and offsets, not speech
_MIN_RMS: Final = 2.0  # a loud frame is above this, in 16-bit units (about -84 dB full scale)
_CONTENT_SHARE: Final = 0.999


class Bandwidth(NamedTuple):
    """What :func:`measure` found; the fields are ``None`` when no frame is loud enough.

    ``high_db``: energy above 5 kHz relative to the 2-3.5 kHz band; ``reference_db``:
    the 2-3.5 kHz band relative to all energy above 100 Hz; ``content_hz``: the
    frequency below which 99.9 % of that energy lies.  All over the loud frames.
    """

    high_db: float | None
    reference_db: float | None
    content_hz: float | None
    loud_frames: int


def _power(samples: np.ndarray) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64).reshape(-1)
    if len(x) < _FRAME:
        x = np.concatenate([x, np.zeros(_FRAME - len(x))])
    frames = np.lib.stride_tricks.sliding_window_view(x, _FRAME)[::_HOP]
    frames = frames - frames.mean(axis=1, keepdims=True)
    power: np.ndarray = np.abs(np.fft.rfft(frames * np.hanning(_FRAME), axis=1)) ** 2
    return power


def _db(ratio: float) -> float:
    return float(10.0 * np.log10(max(ratio, 1e-12)))


def measure(samples: np.ndarray) -> Bandwidth:
    """The spectral balance of 16 kHz ``samples`` in 16-bit units (see :class:`Bandwidth`)."""
    freqs = np.fft.rfftfreq(_FRAME, 1.0 / SAMPLE_RATE)
    speech = freqs >= _LOW_HZ
    power = _power(samples)[:, speech]
    freqs = freqs[speech]
    energy = power.sum(axis=1)
    floor = _MIN_RMS**2 * float(np.sum(np.hanning(_FRAME) ** 2)) * _FRAME
    loud = (energy >= float(np.percentile(energy, 99)) * 10 ** (-LOUD_DB / 10)) & (energy > floor)
    if not loud.any():
        return Bandwidth(None, None, None, 0)
    spectrum = power[loud].sum(axis=0)
    total = float(spectrum.sum())
    reference = float(spectrum[(freqs >= REFERENCE_HZ[0]) & (freqs < REFERENCE_HZ[1])].sum())
    high = float(spectrum[freqs >= HIGH_HZ].sum())
    cumulative = np.cumsum(spectrum) / total
    content = float(freqs[min(int(np.searchsorted(cumulative, _CONTENT_SHARE)), len(freqs) - 1)])
    return Bandwidth(_db(high / reference) if reference > 0 else None, _db(reference / total), content, int(loud.sum()))


def is_narrowband(found: Bandwidth) -> bool:
    """Whether a measurement shows band-limited speech (silence and odd spectra do not)."""
    if found.high_db is None or found.reference_db is None:
        return False
    return found.reference_db >= MIN_REFERENCE_DB and found.high_db < HIGH_DROP_DB


def narrowband_problem(samples: np.ndarray, *, source_rate: int | None = None, spectral: bool = True) -> str | None:
    """Why 16 kHz ``samples`` (decoded from audio at ``source_rate``) cannot be scored, or ``None``.

    ``spectral=False`` checks the sample rate only.
    """
    rate = SAMPLE_RATE if source_rate is None else int(source_rate)
    if rate < MIN_SAMPLE_RATE:
        return narrowband_message(rate, rate / 2)
    if not spectral:
        return None
    found = measure(samples)
    if not is_narrowband(found):
        return None
    return narrowband_message(rate, found.content_hz or HIGH_HZ)


def narrowband_message(rate: int, content_hz: float) -> str:
    """The refusal: ``audio is narrow-band (8000 Hz sample rate, content up to 4.0 kHz); ...``."""
    return (
        f"audio is narrow-band ({rate} Hz sample rate, content up to {content_hz / 1000:.1f} kHz); "
        f"{MIN_SAMPLE_RATE // 1000} kHz or more is needed to score pronunciation"
    )
