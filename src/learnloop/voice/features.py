"""The MFCC front end of the en-us model, in numpy.

It reproduces the Sphinx front end the model was trained with (``feat.params``):
16 kHz audio, pre-emphasis 0.97, 25.625 ms Hamming windows every 10 ms, a
512-point FFT, 25 mel filters from 130 Hz to 6800 Hz (unit area, rounded to
FFT bins), the Sphinx noise-removal step on the filter-bank energies, the log, a
unitary DCT-II to 13 cepstra, sinusoidal liftering (22), batch cepstral mean
normalisation over frames with ``c0 >= 0``, and ``1s_c_d_dd`` features: the
cepstra, their ±2-frame differences and the differences of ±1-frame differences
around them (39 numbers per 10 ms frame).

>>> import numpy as np
>>> t = np.arange(16000) / 16000
>>> feats = mfcc_features(3000 * np.sin(2 * np.pi * 440 * t))
>>> feats.shape
(99, 39)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["FRAME_SHIFT", "SAMPLE_RATE", "cepstra", "mfcc_features"]

SAMPLE_RATE = 16000
FRAME_SHIFT = 160  # samples: 10 ms
_FRAME_SIZE = 410  # samples: 25.625 ms
_NFFT = 512
_NFILT = 25
_LOWER_HZ = 130.0
_UPPER_HZ = 6800.0
_NCEP = 13
_LIFTER = 22
_ALPHA = 0.97
_LOG_FLOOR = 1e-4

# Noise removal constants of the Sphinx front end.
_SMOOTH_WINDOW = 4
_LAMBDA_POWER = 0.7
_LAMBDA_A = 0.995
_LAMBDA_B = 0.5
_LAMBDA_T = 0.85
_MU_T = 0.2
_MAX_GAIN = 20.0


#: frames transformed at once by :func:`cepstra` (bounds its memory on long audio)
_BLOCK_FRAMES = 1024


def _mel(hz: np.ndarray | float) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + np.asarray(hz, dtype=np.float64) / 700.0)


def _mel_inv(mel: np.ndarray | float) -> np.ndarray:
    return 700.0 * (10.0 ** (np.asarray(mel, dtype=np.float64) / 2595.0) - 1.0)


@lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mel filter bank (bins x filters), DCT (filters x cepstra), lifter and window."""
    step = SAMPLE_RATE / _NFFT
    lo, hi = _mel(_LOWER_HZ), _mel(_UPPER_HZ)
    width = (hi - lo) / (_NFILT + 1)
    bank = np.zeros((_NFFT // 2 + 1, _NFILT))
    hz_bins = np.arange(_NFFT // 2 + 1) * step
    for i in range(_NFILT):
        left, centre, right = (np.floor(_mel_inv(lo + (i + j) * width) / step + 0.5) * step for j in range(3))
        inside = (hz_bins >= left) & (hz_bins <= right)
        inside[_NFFT // 2] = False
        up = (hz_bins - left) / (centre - left)
        down = (right - hz_bins) / (right - centre)
        bank[inside, i] = np.minimum(up, down)[inside] * 2.0 / (right - left)
    k = np.arange(_NCEP)[None, :]
    j = np.arange(_NFILT)[:, None]
    dct = np.cos(np.pi / _NFILT * k * (j + 0.5)) * np.sqrt(2.0 / _NFILT)
    dct[:, 0] = np.sqrt(1.0 / _NFILT)
    lifter = 1.0 + _LIFTER / 2.0 * np.sin(np.arange(_NCEP) * np.pi / _LIFTER)
    n = np.arange(_FRAME_SIZE)
    window = 0.54 - 0.46 * np.cos(2 * np.pi * n / (_FRAME_SIZE - 1))
    return bank, dct, lifter, window


def _frames(signal: np.ndarray) -> np.ndarray:
    """Overlapping frames (the last one zero-padded), shape (T, frame size)."""
    n = len(signal)
    if n < _FRAME_SIZE:
        count = 1 if n else 0
    else:
        count = 1 + (n - _FRAME_SIZE) // FRAME_SHIFT
        if (n - _FRAME_SIZE) % FRAME_SHIFT:
            count += 1
    padded = np.zeros((count - 1) * FRAME_SHIFT + _FRAME_SIZE if count else 0)
    padded[:n] = signal
    if not count:
        return np.zeros((0, _FRAME_SIZE))
    idx = np.arange(count)[:, None] * FRAME_SHIFT + np.arange(_FRAME_SIZE)[None, :]
    return padded[idx]  # type: ignore[no-any-return]


def _remove_noise(power: np.ndarray) -> np.ndarray:
    """The Sphinx noise-removal recursion over filter-bank energies (T x filters)."""
    out = np.empty_like(power)
    if not len(power):
        return out
    smoothed = power[0].copy()
    noise = power[0] / _MAX_GAIN
    floor = power[0] / _MAX_GAIN
    peak = np.zeros_like(smoothed)
    lo = np.maximum(np.arange(_NFILT) - _SMOOTH_WINDOW, 0)
    hi = np.minimum(np.arange(_NFILT) + _SMOOTH_WINDOW, _NFILT - 1)
    smoother = np.zeros((_NFILT, _NFILT))
    for i in range(_NFILT):
        smoother[lo[i] : hi[i] + 1, i] = 1.0 / (hi[i] - lo[i] + 1)
    for t, frame in enumerate(power):
        smoothed = _LAMBDA_POWER * smoothed + (1 - _LAMBDA_POWER) * frame
        noise = np.where(
            smoothed >= noise,
            _LAMBDA_A * noise + (1 - _LAMBDA_A) * smoothed,
            _LAMBDA_B * noise + (1 - _LAMBDA_B) * smoothed,
        )
        signal = np.maximum(smoothed - noise, 1.0)
        floor = np.where(
            signal >= floor,
            _LAMBDA_A * floor + (1 - _LAMBDA_A) * signal,
            _LAMBDA_B * floor + (1 - _LAMBDA_B) * signal,
        )
        cur = signal.copy()
        peak = peak * _LAMBDA_T
        signal = np.where(signal < _LAMBDA_T * peak, peak * _MU_T, signal)
        peak = np.where(cur > peak, cur, peak)
        signal = np.maximum(signal, floor)
        gain = np.where(signal < _MAX_GAIN * smoothed, signal / np.maximum(smoothed, 1e-30), _MAX_GAIN)
        gain = np.maximum(gain, 1.0 / _MAX_GAIN)
        out[t] = frame * (gain @ smoother)
    return out


def cepstra(samples: np.ndarray) -> np.ndarray:
    """13 liftered MFCCs per 10 ms frame of 16 kHz audio in 16-bit sample units."""
    bank, dct, lifter, window = _tables()
    x = np.asarray(samples, dtype=np.float64)
    emphasised = np.empty_like(x)
    if len(x):
        emphasised[0] = x[0]
        emphasised[1:] = x[1:] - _ALPHA * x[:-1]
    frames = _frames(emphasised)
    # the spectrum a block of frames at a time: on a minute of audio the whole would take ~100 MB
    blocks = []
    for at in range(0, len(frames), _BLOCK_FRAMES):
        spectrum = np.fft.rfft(frames[at : at + _BLOCK_FRAMES] * window, n=_NFFT, axis=1)
        blocks.append((spectrum.real**2 + spectrum.imag**2) @ bank)
    mel = _remove_noise(np.concatenate(blocks) if blocks else np.zeros((0, bank.shape[1])))
    return (np.log(mel + _LOG_FLOOR) @ dct) * lifter  # type: ignore[no-any-return]


def mfcc_features(samples: np.ndarray) -> np.ndarray:
    """``1s_c_d_dd`` features (T x 39) after batch CMN, ready for the acoustic model."""
    cep = cepstra(samples)
    if not len(cep):
        return np.zeros((0, 3 * _NCEP))
    voiced = cep[:, 0] >= 0
    mean = cep[voiced].mean(axis=0) if voiced.any() else cep.mean(axis=0)
    cep = cep - mean
    padded = np.concatenate([np.repeat(cep[:1], 3, axis=0), cep, np.repeat(cep[-1:], 3, axis=0)])
    n = len(cep)

    def at(offset: int) -> np.ndarray:
        return padded[3 + offset : 3 + offset + n]

    delta = at(2) - at(-2)
    delta2 = (at(3) - at(-1)) - (at(1) - at(-3))
    return np.concatenate([cep, delta, delta2], axis=1)
