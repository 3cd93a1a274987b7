"""Fit the phone-score calibration (learnloop/voice/calibration.json).

Generates labelled espeak-ng phones on the calibration word list only (see
bench_voice_gop.py: each word and voice said correctly and with two different
phones substituted), then fits

- the pair statistics: mean and standard deviation of the GOP ratio of each
  target phone against each candidate phone, over every phone of the correct
  renditions and of carrier sentences made of calibration words (connected
  speech at two other speeds: phones are shorter and coarticulated there);
- ``P(correct) = sigmoid(intercept + weight * z)`` by maximum likelihood, on
  the labelled phones, where ``z`` is the pair-normalised GOP;

writes them to ``src/learnloop/voice/calibration.json`` and prints the fit,
with a five-fold cross-validated AUC over calibration words (the tables and
weights refitted without the held-out words).

Run:  .venv/bin/python tools/fit/calibrate_voice_gop.py   (about three minutes)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the word lists of bench_voice_gop

from bench_voice_gop import (
    CALIBRATION_WORDS,
    VOICES,
    auc,
    labelled_examples,
    sentence_reference,
)

from learnloop.voice.calibration import fit_calibration
from learnloop.voice.gop import PhoneGop

OUT = Path(__file__).resolve().parents[2] / "src" / "learnloop" / "voice" / "calibration.json"
FOLDS = 5


def main() -> None:
    reference: list[tuple[str, str, PhoneGop]] = []
    examples = labelled_examples(CALIBRATION_WORDS, VOICES, seed=11, per_word=2, reference=reference)
    phones = np.array([e.phone for e in examples])
    llrs = np.array([e.llr for e in examples])
    y = np.array([e.correct for e in examples], dtype=float)
    sentences = sentence_reference(VOICES)
    ref_words = [(w,) for _, w, _ in reference] + [ws for _, ws, _ in sentences]
    ref_phones = np.array([g.phone for _, _, g in reference] + [g.phone for _, _, g in sentences])
    ref_llrs = np.array([g.llr for _, _, g in reference] + [g.llr for _, _, g in sentences])
    cal = fit_calibration(list(phones), llrs, y, reference=(list(ref_phones), ref_llrs))
    p = cal.probability([cal.normalised_gop(ph, v) for ph, v in zip(phones, llrs)])
    print(
        f"{len(examples)} labelled phones ({int(y.sum())} correct) and {len(ref_phones)} reference phones "
        f"({len(sentences)} of them in sentences) from {len(CALIBRATION_WORDS)} words x {len(VOICES)} voices"
    )
    print(
        f"training AUC {auc(p[y == 1], p[y == 0]):.3f}, "
        f"log loss {-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)):.3f}"
    )

    # Cross-validation by word: refit without a fifth of the words, score that fifth.
    rng = np.random.default_rng(0)
    fold_of = dict(zip(CALIBRATION_WORDS, rng.permutation(len(CALIBRATION_WORDS)) % FOLDS))
    fold = np.array([fold_of[e.word] for e in examples])
    ref_folds = [{fold_of[w] for w in ws} for ws in ref_words]
    held = np.empty(len(examples))
    for k in range(FOLDS):
        test = fold == k
        keep = np.array([k not in fs for fs in ref_folds])  # no phone of a sentence with a held-out word
        part = fit_calibration(
            list(phones[~test]), llrs[~test], y[~test], reference=(list(ref_phones[keep]), ref_llrs[keep])
        )
        held[test] = part.probability([part.normalised_gop(ph, v) for ph, v in zip(phones[test], llrs[test])])
    print(f"cross-validated AUC ({FOLDS} folds by word): {auc(held[y == 1], held[y == 0]):.3f}")
    print(f"intercept {cal.intercept:.3f}, weight {cal.weight:.3f}")
    OUT.write_text(json.dumps(cal.to_dict(), separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
