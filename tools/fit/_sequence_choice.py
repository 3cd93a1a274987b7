"""The sequence models' fold predictions from which ``fit_voice_real.py`` chooses (PyTorch, the ``voice-train`` extra).

Two sequence models of one size may be shipped: one trained on the corpus alone, whose word and
total predictions feed the later stages, and one trained on the corpus and the substitution set's
fit-part renditions (their phones weighted in the loss), whose phone predictions enter the phone
blend. :func:`sequence_runs` gives, for each weight of the renditions, the fold predictions the
choice reads (seed 0): the phones of the model trained with that weight (none: the corpus-only model)
and the words and totals of the corpus-only one; :func:`seeds_averaged` the same for one weight with
``FINAL_SEEDS`` networks averaged, as shipped.
"""

from __future__ import annotations

import time
from pathlib import Path

import _substitutions
import numpy as np
from _stages import pcc

#: the sequence model's sizes tried on the folds: (width, heads, layers, feed-forward, dropout, epochs)
SEQ_CONFIGS: list[tuple[int, int, int, int, float, int]] = [(32, 2, 2, 64, 0.1, 30), (48, 2, 2, 96, 0.1, 30)]
#: the weight of the substitution set's fit-part renditions in the phones' sequence model's phone loss
SUB_WEIGHTS = [0.0, 0.2, 0.5, 2.0]
#: networks (seeds 0, 1, ...) averaged in each shipped sequence model and in the fold predictions of the chosen
#: size and weight, on which the blend is chosen again and the weight's slack checked again (the size and the
#: weight are chosen on seed 0's)
FINAL_SEEDS = 3

Run = tuple[tuple, float, list, list]  # (config, weight, corpus predictions, renditions' predictions)


def sequence_runs(
    utts: list, phone_y_real: np.ndarray, word_y: list, total_y: np.ndarray, real: np.ndarray,
    fold_of_utt: np.ndarray, part: _substitutions.FitPart, root: Path, t0: float,
) -> list[Run]:  # fmt: skip
    """The size (by the mean of the corpus-only model's own three fold PCCs, seed 0, as before), then for
    each weight of ``SUB_WEIGHTS`` the fold predictions of that size (seed 0): phones from the model trained
    with the renditions so weighted, words and totals from the corpus-only model."""
    cache = root / ".learnloop"
    wy_real = np.concatenate([w for w, r in zip(word_y, real, strict=True) if r])

    def report(what: str, found: list) -> float:
        own, rend = found[: len(utts)], found[len(utts) :]
        ph = np.concatenate([np.clip(o[0], 0, 2) for o, r in zip(own, real, strict=True) if r])
        wd = np.concatenate([np.clip(o[1], 0, 10) for o, r in zip(own, real, strict=True) if r])
        tt = np.array([np.clip(o[2], 0, 10) for o, r in zip(own, real, strict=True) if r])
        r3 = (pcc(ph, phone_y_real), pcc(wd, wy_real), pcc(tt, total_y[real]))
        print(
            f"  {what}: fold PCC phone {r3[0]:.4f}, word (said) {r3[1]:.4f}, total {r3[2]:.4f}; mean "
            f"{np.mean(r3):.4f}; substitutions AUC {_substitutions.pair_auc(part, [o[0] for o in rend]):.3f} "
            f"({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
        return float(np.mean(r3))

    best: tuple[float, tuple] | None = None
    for config in SEQ_CONFIGS:
        found = _substitutions.sequence_oof(utts, real, fold_of_utt, part, config, 0.0, cache)
        mean = report(f"sequence model {config}, seed 0", found)
        if best is None or mean > best[0]:
            best = (mean, config)
    assert best is not None
    config = best[1]

    out: list[Run] = []
    for weight in SUB_WEIGHTS:
        found = _substitutions.sequence_oof(utts, real, fold_of_utt, part, config, weight, cache)
        if weight == 0.0:
            without = found
        mixed = [(f[0], b[1], b[2]) for f, b in zip(found, without, strict=True)]
        report(f"{config}, seed 0, phones with the renditions weighted {weight}", mixed)
        out.append((config, weight, mixed[: len(utts)], mixed[len(utts) :]))
    return out


def seeds_averaged(
    utts: list, real: np.ndarray, fold_of_utt: np.ndarray, part: _substitutions.FitPart, config: tuple,
    weight: float, root: Path,
) -> Run:  # fmt: skip
    """The fold predictions of ``config`` with ``FINAL_SEEDS`` networks averaged, as shipped: phones from the
    model trained with the renditions weighted ``weight``, words and totals from the corpus-only model."""
    cache = root / ".learnloop"

    def averaged(w: float) -> list:
        return _substitutions.mean_of(
            [_substitutions.seed_oof(utts, real, fold_of_utt, part, config, w, s, cache) for s in range(FINAL_SEEDS)]
        )

    without = averaged(0.0)
    found = without if weight == 0.0 else averaged(weight)
    mixed = [(f[0], b[1], b[2]) for f, b in zip(found, without, strict=True)]
    return config, weight, mixed[: len(utts)], mixed[len(utts) :]
