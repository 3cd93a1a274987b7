"""What a phone was said as: a learned choice among the phones a learner could have said instead.

For an aligned target phone ``t`` the candidates are ``t`` itself, its plausible
substitutes (:data:`~learnloop.voice.calibration.COMPETITORS`: the phones of its
class, the approximants) and silence (``#``: nothing was said). Each candidate
``q`` gets a score ``w . f(t, q)`` and the choice is a softmax over the candidates
(a conditional logit). ``f`` reads the acoustic evidence and what is known of
learners:

- how much better ``q`` fits the phone's stretch of audio than ``t`` (the GOP
  ratio ``-llr[q]``, raw and standardised by how the pair behaves when ``t`` is
  said right), and whether ``q`` fits best of all the candidates;
- how far ``q`` is from ``t`` in articulatory features (:func:`~learnloop.voice.confusions.distance`);
- whether ``t`` said as ``q`` is a known first-language pattern
  (:data:`~learnloop.voice.confusions.L1_PATTERNS`) of any language, and of the
  learner's own first language when it is given;
- for silence, the phone's duration and its ratio against silence; for ``t``
  itself, its calibrated GOP, raw GOP and duration.

The weights (a few dozen numbers in ``assessment.json``) are fitted by
``tools/fit/fit_voice_real.py`` on the ``fit`` part of the espeak-ng substitution set
(the phone said is known) and on the speechocean762 train split (a phone the experts
call correct was said as itself; one they call wrong, as something else).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from learnloop.voice.calibration import CALIBRATION, COMPETITORS, Calibration
from learnloop.voice.confusions import FIRST_LANGUAGES, distance, substitutions
from learnloop.voice.gop import SCORING_PHONES
from learnloop.voice.phonemes import PHONES

__all__ = ["FEATURE_NAMES", "SaidAs", "candidate_features", "candidates", "fit_said_as"]

_ROW: Final = {p: i for i, p in enumerate(PHONES)}
_COL: Final = {p: i for i, p in enumerate(SCORING_PHONES)}
_SIL: Final = _COL["SIL"]
_CLIP: Final = 10.0

FEATURE_NAMES: Final = (
    "fit",  # -llr[q], clipped
    "fit_standardised",  # -(llr[q] - mean[t, q]) / sd[t, q], clipped
    "fits_best",  # q has the lowest ratio of the substitutes
    "fit_margin",  # how far q's fit is from the best substitute's (<= 0)
    "distance1",
    "distance2",
    "distance3",  # 3 or more (silence and across classes count 4)
    "pattern",  # t said as q is a pattern of some first language
    "pattern_given",  # ... of the learner's first language (0 when none is given)
    "silence",
    "silence_short",  # silence x the phone lasts the minimum 3 frames
    "silence_fit",  # silence x llr[SIL], clipped
    "self",
    "self_z",  # self x calibrated GOP (clipped)
    "self_gop",  # self x raw GOP (clipped)
    "self_frames",  # self x log frames
)

# per target: the candidate columns (t first, then its plausible substitutes, silence last)
_CANDIDATES: Final = {
    t: np.array([_COL[t], *[c for c in np.flatnonzero(COMPETITORS[_ROW[t]]) if c != _SIL], _SIL]) for t in PHONES
}
_DISTANCE: Final = {
    t: np.array([0 if c == _COL[t] else (4 if c == _SIL else distance(t, SCORING_PHONES[c])) for c in _CANDIDATES[t]])
    for t in PHONES
}
_ANY_PATTERN: Final = {
    t: np.array([(t, SCORING_PHONES[c]) in substitutions() for c in _CANDIDATES[t]], dtype=np.float64) for t in PHONES
}
_PATTERN: Final = {
    (l1, t): np.array([(t, SCORING_PHONES[c]) in substitutions(l1) for c in _CANDIDATES[t]], dtype=np.float64)
    for l1 in FIRST_LANGUAGES
    for t in PHONES
}


def candidates(phone: str) -> tuple[str, ...]:
    """The candidates of ``phone`` in the order of :func:`candidate_features` (itself first, ``#`` last)."""
    return tuple("#" if c == _SIL else SCORING_PHONES[c] for c in _CANDIDATES[phone])


def candidate_features(
    phone: str,
    llr: Sequence[float] | np.ndarray,
    frames: int,
    first_language: str | None = None,
    calibration: Calibration = CALIBRATION,
) -> np.ndarray:
    """``(len(candidates(phone)), len(FEATURE_NAMES))``: the features of every candidate (see the module)."""
    cols = _CANDIDATES[phone]
    ratio = np.asarray(llr, dtype=np.float64)
    row = _ROW[phone]
    k = len(cols)
    r = ratio[cols]
    fit = np.clip(-r, -_CLIP, _CLIP)
    std = np.clip(-(r - calibration.mean[row, cols]) / calibration.sd[row, cols], -_CLIP, _CLIP)
    fit[0] = std[0] = 0.0
    others = r[1:]
    best = np.zeros(k)
    best[1 + int(np.argmin(others))] = 1.0
    margin = np.zeros(k)
    margin[1:] = np.clip(float(np.min(others)) - others, -_CLIP, 0.0)
    d = _DISTANCE[phone]
    out = np.zeros((k, len(FEATURE_NAMES)))
    out[:, 0], out[:, 1], out[:, 2], out[:, 3] = fit, std, best, margin
    out[:, 4], out[:, 5], out[:, 6] = d == 1, d == 2, d >= 3
    out[:, 7] = _ANY_PATTERN[phone]
    if first_language is not None:
        out[:, 8] = _PATTERN[(first_language, phone)]
    out[-1, 9] = 1.0
    out[-1, 10] = float(frames <= 3)
    out[-1, 11] = float(np.clip(ratio[_SIL], -_CLIP, _CLIP))
    z = calibration.normalised_gop(phone, ratio)
    gop = min(0.0, float(np.min(np.delete(ratio, _COL[phone]))))
    out[0, 12] = 1.0
    out[0, 13] = float(np.clip(z, -_CLIP, _CLIP))
    out[0, 14] = float(np.clip(gop, -_CLIP, 0.0))
    out[0, 15] = float(np.log(max(frames, 1)))
    out[0, 4:8] = 0.0
    return out


@dataclass(frozen=True, eq=False)
class SaidAs:
    """The fitted weights of the choice (one per :data:`FEATURE_NAMES`) and ``report_above``:
    the probability of another phone from which ``sounds_like`` names it even when the phone
    scores 60 or more (None: only below 60)."""

    weights: np.ndarray
    report_above: float | None = None

    def probabilities(
        self,
        phone: str,
        llr: Sequence[float] | np.ndarray,
        frames: int,
        first_language: str | None = None,
        calibration: Calibration = CALIBRATION,
    ) -> np.ndarray:
        """The probability of each of :func:`candidates` ``(phone)``."""
        s = candidate_features(phone, llr, frames, first_language, calibration) @ self.weights
        s = np.exp(s - s.max())
        out: np.ndarray = s / s.sum()
        return out

    def other(
        self,
        phone: str,
        llr: Sequence[float] | np.ndarray,
        frames: int,
        first_language: str | None = None,
        calibration: Calibration = CALIBRATION,
    ) -> str:
        """The likeliest candidate other than ``phone`` itself (``#``: nothing was said)."""
        return self.other_and_probability(phone, llr, frames, first_language, calibration)[0]

    def other_and_probability(
        self,
        phone: str,
        llr: Sequence[float] | np.ndarray,
        frames: int,
        first_language: str | None = None,
        calibration: Calibration = CALIBRATION,
    ) -> tuple[str, float]:
        """:meth:`other` and its probability."""
        p = self.probabilities(phone, llr, frames, first_language, calibration)
        best = 1 + int(np.argmax(p[1:]))
        return candidates(phone)[best], float(p[best])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"features": list(FEATURE_NAMES), "weights": np.round(self.weights, 6).tolist()}
        if self.report_above is not None:
            out["report_above"] = self.report_above
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SaidAs:
        if d.get("features") != list(FEATURE_NAMES):
            raise ValueError("said-as model does not match its features")
        w = np.asarray(d["weights"], dtype=np.float64)
        w.setflags(write=False)
        above = d.get("report_above")
        if above is not None and not 0.0 < float(above) <= 1.0:
            raise ValueError(f"report_above must lie in (0, 1], not {above}")
        return cls(w, None if above is None else float(above))


def fit_said_as(
    blocks: Sequence[np.ndarray], labels: Sequence[int], *, ridge: float = 1.0, iterations: int = 200
) -> SaidAs:
    """Fit the weights by maximum likelihood (L-BFGS; scipy, imported when called).

    ``blocks[i]`` is the candidate features of example ``i`` and ``labels[i]`` the row of
    the candidate said, or -1 for "anything but the target itself" (row 0): a phone
    known to be wrong whose substitute is not known.
    """
    from scipy.optimize import minimize

    sizes = np.array([len(b) for b in blocks])
    x = np.concatenate(blocks)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    seg = np.repeat(np.arange(len(blocks)), sizes)
    y = np.asarray(labels)
    known = y >= 0
    pick = starts[known] + y[known]
    firsts = starts[~known]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = x @ w
        m = np.maximum.reduceat(s, starts)
        e = np.exp(s - m[seg])
        z = np.add.reduceat(e, starts)
        p = e / z[seg]
        lse = np.log(z) + m
        ex = np.add.reduceat(p[:, None] * x, starts)  # the expected features of each example
        # said as a known candidate: -log p[label]
        value = -np.sum(s[pick] - lse[known])
        grad = -(x[pick].sum(0) - ex[known].sum(0))
        # said as anything but itself: -log(1 - p[self]), whose gradient is p/(1-p) (x_self - E[x])
        p_self = p[firsts]
        value -= np.sum(np.log(np.maximum(1.0 - p_self, 1e-12)))
        coef = p_self / np.maximum(1.0 - p_self, 1e-12)
        grad += (coef[:, None] * (x[firsts] - ex[~known])).sum(0)
        value += 0.5 * ridge * float(w @ w)
        grad += ridge * w
        return float(value), grad

    found = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": iterations})
    return SaidAs(found.x)
