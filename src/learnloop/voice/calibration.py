"""From GOP to a 0..100 phone score: pair-normalised GOP and a fitted logistic mapping.

The GOP stage (``gop``) gives, for an aligned target phone ``t``, the per-frame
log-likelihood ratio ``llr[q]`` of ``t`` against every candidate phone ``q``
(positive where ``t`` fits better).  Some pairs are close in any voice
(``T``/``D``, ``AH``/``IH``, ``M``/``N``), others far apart, so one threshold on
the raw ratio cannot serve them all.  Each ratio is therefore standardised by
how *that pair* behaves when ``t`` is said correctly, and the phone is judged
by its worst competitor:

    z = min over plausible q != t of (llr[q] - mean[t, q]) / sd[t, q]
    score = round(100 * sigmoid(intercept + weight * z))

A plausible substitute (``COMPETITORS``) is a phone of the same class (vowel
for a vowel, consonant for a consonant), an approximant (``L R W Y``, which
border on vowels: ``L``/``OW``, ``W``/``UW``, ``Y``/``IY``, ``R``/``ER``) or
silence (nothing said).  A consonant heard as a vowel is rarely what a
speaker did; in connected speech a nasal or a stop coloured by its vowel
neighbours often fits some vowel model unusually well, and such pairs made
correctly said phones fail.

``mean`` and ``sd`` are the mean and standard deviation of ``llr[q]`` over
correctly said ``t`` in the calibration speech, isolated words and connected
sentences (shrunk towards the average over all targets when ``t`` is rare).  The score estimates the probability
that the phone was said as the target.

Everything here was fitted on phones of espeak-ng speech, half said correctly
and half replaced by another phone of the same class, over calibration words
that the benchmark never evaluates on; ``tools/fit/calibrate_voice_gop.py``
reproduces ``calibration.json`` and prints the fit.  Rerun it after any change
to the front end, the alignment or the GOP.

>>> from learnloop.voice.gop import SCORING_PHONES
>>> typical = CALIBRATION.mean[PHONES.index("AA")].copy()  # an average correctly said AA
>>> phone_score("AA", typical) >= 90
True
>>> typical[SCORING_PHONES.index("IY")] = -2.0  # IY fits 2 nats per frame better than AA
>>> phone_score("AA", typical) < 20
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Final

import numpy as np

from learnloop.voice.gop import SCORING_PHONES
from learnloop.voice.phonemes import PHONES, VOWELS

__all__ = ["CALIBRATION", "COMPETITORS", "Calibration", "fit_calibration", "phone_score", "score_band"]

_ROW: Final = {p: i for i, p in enumerate(PHONES)}
_COL: Final = {p: i for i, p in enumerate(SCORING_PHONES)}
_SD_FLOOR = 0.05
_APPROXIMANTS: Final = frozenset({"L", "R", "W", "Y"})


def _plausible(target: str, candidate: str) -> bool:
    if candidate == target:
        return False
    if candidate == "SIL" or target in _APPROXIMANTS or candidate in _APPROXIMANTS:
        return True
    return (target in VOWELS) == (candidate in VOWELS)


COMPETITORS: Final = np.array([[_plausible(t, q) for q in SCORING_PHONES] for t in PHONES])
"""``COMPETITORS[row of t, column of q]``: whether ``q`` is a plausible substitute for ``t``."""
COMPETITORS.setflags(write=False)


@dataclass(frozen=True, eq=False)
class Calibration:
    """Learned state of the scoring: pair statistics and logistic coefficients.

    ``mean`` and ``sd`` have one row per target phone (``PHONES``) and one
    column per candidate phone (``SCORING_PHONES``).
    """

    intercept: float
    weight: float
    mean: np.ndarray
    sd: np.ndarray

    def normalised_gop(self, phone: str, llr: Sequence[float] | np.ndarray) -> float:
        """``z``: the target's margin over its worst competitor, in pair standard deviations."""
        row = _ROW[phone]
        z = (np.asarray(llr, dtype=np.float64) - self.mean[row]) / self.sd[row]
        return float(np.min(z[COMPETITORS[row]]))

    def sounds_like(self, phone: str, llr: Sequence[float] | np.ndarray) -> str:
        """What a phone sounds like: itself when it scores 50 or more, else the best other fit.

        The best other fit is the plausible substitute (``COMPETITORS``) with
        the lowest ratio (the one that fits the audio best); ``#`` when that
        is silence (no phoneme was detected).
        """
        if float(self.probability(self.normalised_gop(phone, llr))) >= 0.5:
            return phone
        return self.best_substitute(phone, llr)

    def best_substitute(self, phone: str, llr: Sequence[float] | np.ndarray) -> str:
        """The plausible substitute of ``phone`` that fits the audio best (``#``: silence)."""
        others = np.asarray(llr, dtype=np.float64).copy()
        others[~COMPETITORS[_ROW[phone]]] = np.inf
        like = SCORING_PHONES[int(np.argmin(others))]
        return "#" if like == "SIL" else like

    def probability(self, z: np.ndarray | float) -> np.ndarray:
        """Estimated probability that a phone of normalised GOP ``z`` was said right."""
        x = self.intercept + self.weight * np.asarray(z, dtype=np.float64)
        return 1.0 / (1.0 + np.exp(-np.clip(x, -50.0, 50.0)))

    def to_dict(self) -> dict[str, object]:
        return {
            "intercept": round(self.intercept, 4),
            "weight": round(self.weight, 4),
            "targets": list(PHONES),
            "candidates": list(SCORING_PHONES),
            "mean": np.round(self.mean, 4).tolist(),
            "sd": np.round(self.sd, 4).tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Calibration:
        if data.get("targets") != list(PHONES) or data.get("candidates") != list(SCORING_PHONES):
            raise ValueError("calibration tables do not match the phone set (targets/candidates differ)")
        mean = np.asarray(data["mean"], dtype=np.float64)
        sd = np.asarray(data["sd"], dtype=np.float64)
        shape = (len(PHONES), len(SCORING_PHONES))
        if mean.shape != shape or sd.shape != shape:
            raise ValueError(f"calibration tables must have shape {shape}, not {mean.shape} and {sd.shape}")
        mean.setflags(write=False)
        sd.setflags(write=False)
        return cls(float(data["intercept"]), float(data["weight"]), mean, sd)  # type: ignore[arg-type]


def _load_default() -> Calibration:
    text = resources.files("learnloop.voice").joinpath("calibration.json").read_text(encoding="utf-8")
    return Calibration.from_dict(json.loads(text))


# Fitted by tools/fit/calibrate_voice_gop.py (see the module docstring).
CALIBRATION: Final = _load_default()


def phone_score(phone: str, llr: Sequence[float] | np.ndarray, calibration: Calibration = CALIBRATION) -> int:
    """The integer 0..100 score of one phone from its GOP ratios."""
    z = calibration.normalised_gop(phone, llr)
    return int(np.rint(100.0 * float(calibration.probability(z))))


def score_band(score: int) -> str:
    """The spec's band of a score: ``A`` 90+, ``B`` 80-89, ``C`` 60-79, ``D`` below 60.

    >>> [score_band(s) for s in (100, 90, 89, 80, 79, 60, 59, 0)]
    ['A', 'A', 'B', 'B', 'C', 'C', 'D', 'D']
    """
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    if score >= 60:
        return "C"
    return "D"


def _pair_statistics(phones: Sequence[str], llrs: np.ndarray, *, prior: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd of ``llr[q]`` per target phone, shrunk towards the all-target average."""
    llrs = np.asarray(llrs, dtype=np.float64)
    grand_mean = llrs.mean(axis=0)
    grand_var = llrs.var(axis=0)
    mean = np.tile(grand_mean, (len(PHONES), 1))
    var = np.tile(grand_var, (len(PHONES), 1))
    rows = np.asarray([_ROW[p] for p in phones])
    for r in np.unique(rows):
        own = llrs[rows == r]
        w = len(own) / (len(own) + prior)
        mean[r] = w * own.mean(axis=0) + (1 - w) * grand_mean
        var[r] = w * own.var(axis=0) + (1 - w) * grand_var
    sd = np.maximum(np.sqrt(var), _SD_FLOOR)
    own = (np.arange(len(PHONES)), [_COL[p] for p in PHONES])
    mean[own], sd[own] = 0.0, 1.0  # a target against itself: not a competitor
    return mean, sd


def fit_calibration(
    phones: Sequence[str],
    llrs: np.ndarray,
    correct: np.ndarray,
    *,
    reference: tuple[Sequence[str], np.ndarray] | None = None,
    prior: float = 10.0,
    l2: float = 1e-3,
) -> Calibration:
    """Fit the pair statistics and the logistic mapping on labelled phones.

    ``phones`` are target phones, ``llrs`` their GOP ratios ``(n, len(SCORING_PHONES))``
    and ``correct`` whether each was said right.  The pair statistics come
    from ``reference`` (target phones and ratios of correctly said phones;
    by default the correct ones among the labelled), the logistic weights
    from the labelled phones by maximum likelihood (Newton's method, a tiny
    L2 penalty on the slope).

    >>> rng = np.random.default_rng(0)
    >>> n = len(SCORING_PHONES)
    >>> good = rng.normal(2.0, 0.5, (200, n))
    >>> bad = rng.normal(2.0, 0.5, (200, n))
    >>> bad[:, _COL["IY"]] = rng.normal(-1.0, 0.5, 200)
    >>> cal = fit_calibration(["AA"] * 400, np.vstack([good, bad]), np.r_[np.ones(200), np.zeros(200)])
    >>> bool(phone_score("AA", good[0], cal) > 80 and phone_score("AA", bad[0], cal) < 20)
    True
    """
    llrs = np.asarray(llrs, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if reference is None:
        keep = y > 0.5
        reference = ([p for p, k in zip(phones, keep) if k], llrs[keep])
    mean, sd = _pair_statistics(reference[0], reference[1], prior=prior)
    base = Calibration(0.0, 1.0, mean, sd)
    z = np.asarray([base.normalised_gop(p, v) for p, v in zip(phones, llrs)])
    x = np.column_stack([np.ones(len(z)), z])
    beta = np.zeros(2)
    penalty = l2 * np.diag([0.0, 1.0])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ beta, -50, 50)))
        grad = x.T @ (y - p) - penalty @ beta
        hess = (x * (p * (1 - p))[:, None]).T @ x + penalty
        step = np.linalg.solve(hess + 1e-9 * np.eye(2), grad)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-8:
            break
    mean.setflags(write=False)
    sd.setflags(write=False)
    return Calibration(float(beta[0]), float(beta[1]), mean, sd)
