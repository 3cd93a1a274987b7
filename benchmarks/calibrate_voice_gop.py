"""Fit the logistic calibration of phone scores (learnloop/voice/calibration.py).

Generates labelled espeak-ng phones on the calibration word list (see
bench_voice_gop.py: correct vs one substituted phone per word and voice), fits
``P(correct) = sigmoid(b0 + b1 * gop + b2 * frame_gop)`` by maximum likelihood
and prints the constants to paste into ``CALIBRATION``.

Run:  .venv/bin/python benchmarks/calibrate_voice_gop.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_voice_gop import CALIBRATION_WORDS, VOICES, auc, labelled_examples  # noqa: E402

from learnloop.voice.calibration import fit_calibration  # noqa: E402


def main() -> None:
    examples = labelled_examples(CALIBRATION_WORDS, VOICES, seed=11)
    gop = np.array([e.gop for e in examples])
    frame = np.array([e.frame_gop for e in examples])
    y = np.array([e.correct for e in examples], dtype=float)
    cal = fit_calibration(gop, frame, y)
    p = cal.probability(gop, frame)
    print(f"{len(examples)} phones ({int(y.sum())} correct) from {len(CALIBRATION_WORDS)} words x {len(VOICES)} voices")
    print(f"training AUC {auc(p[y == 1], p[y == 0]):.3f}, log loss {-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)):.3f}")
    print(f"CALIBRATION = Calibration(intercept={cal.intercept:.3f}, w_gop={cal.w_gop:.3f}, w_frame={cal.w_frame:.3f})")


if __name__ == "__main__":
    main()
