"""The stages after the phone predictions, chosen and fitted on speaker folds (``fit_voice_real.py``).

:func:`later_stages`: the band edge of the phone "retry" score, the word, *said* and utterance
ridges and the ``is_matched`` threshold, each chosen by its fold figure on out-of-fold phone
predictions (and the sequence model's word and total predictions, when given); with the fold
figures of the whole pipeline as shipped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from learnloop.voice.assessment import Bands, fit_linear, fit_logistic, utterance_features, word_features

RIDGES = [0.1, 1.0, 10.0, 100.0]
#: the band edges 80 and 90 on the experts' phone scale: 90+ when the five experts'
#: mean is 1.9 or more (at most one calls it accented), 80+ from 1.7
KNOTS_80_90 = (1.7, 1.9)


def pcc(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    from scipy.stats import rankdata

    r = rankdata(score)
    n1 = int(positive.sum())
    n0 = len(score) - n1
    return float((r[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


Fit = Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]]


def choose(
    what: str,
    candidates: list[tuple[str, Fit]],
    x: np.ndarray,
    y: np.ndarray,
    fold: np.ndarray,
    trainable: np.ndarray,
    judge: Callable[[np.ndarray], float],
    say: Callable[[str], None] = print,
) -> tuple[Fit, np.ndarray]:
    """The candidate whose out-of-fold predictions ``judge`` rates best, and those predictions
    (each fold predicted by a model fitted on the ``trainable`` rows of the other folds)."""
    best: tuple[float, Fit, np.ndarray] | None = None
    for name, fit in candidates:
        oof = np.zeros(len(y))
        for k in np.unique(fold):
            tr = (fold != k) & trainable
            oof[fold == k] = fit(x[tr], y[tr])(x[fold == k])
        score = judge(oof)
        say(f"  {what} {name}: fold {score:.4f}")
        if best is None or score > best[0]:
            best = (score, fit, oof)
    assert best is not None
    return best[1], best[2]


def ridges(fit: Callable[..., Callable[[np.ndarray], np.ndarray]]) -> list[tuple[str, Fit]]:
    """``fit`` with each of the ridge penalties ``RIDGES``."""
    return [(f"ridge={r}", lambda x, y, r=r: fit(x, y, ridge=r)) for r in RIDGES]


@dataclasses.dataclass
class Stages:
    """What the stages after the phone predictions learned on the folds, and their fold figures."""

    bands: Bands
    word_fit: Fit
    utt_fit: Fit
    said_fit: Fit
    matched_above: float
    wx: np.ndarray
    wy: np.ndarray
    wreal: np.ndarray
    unsaid: np.ndarray
    ux: np.ndarray
    figures: dict[str, float]


def later_stages(
    evs: list,
    phone_oof: np.ndarray,
    counts: list[int],
    seq_oof: list[tuple[np.ndarray, np.ndarray, float]] | None,
    y: np.ndarray,
    word_y: list[np.ndarray],
    unsaid_flags: list[np.ndarray],
    total_y: np.ndarray,
    real: np.ndarray,
    fold_of_utt: np.ndarray,
    say: Callable[[str], None] = print,
) -> Stages:
    """The retry edge, the word, *said* and utterance stages on out-of-fold phone predictions
    (and the sequence model's word and total predictions, when given), chosen on the folds;
    ``figures``: the fold PCCs of phone, word and total as shipped (words and total scaled by
    P(said)) on the corpus' utterances, and the rest of the fold checks."""
    is_real = np.repeat(real, counts)
    # band edge 60: the predicted accuracy that best separates mispronounced phones
    # (experts' mean < 1) from the rest, by F1 on the folds
    wrong = y < 1.0
    phone_oof_real, y_real, wrong_real = phone_oof[is_real], y[is_real], wrong[is_real]
    grid = np.round(np.arange(0.8, 1.65, 0.01), 2)
    f1s = []
    for t in grid:
        flagged = phone_oof_real < t
        tp = np.sum(flagged & wrong_real)
        f1s.append(2 * tp / max(flagged.sum() + wrong_real.sum(), 1))
    t60 = float(grid[int(np.argmax(f1s))])
    bands = Bands((t60, *KNOTS_80_90))
    scores = bands.phone_score(phone_oof_real)
    figures = {
        "phone": pcc(phone_oof_real, y_real),
        "detection_auc": auc(-phone_oof_real, wrong_real),
        "correct_below_60": float(np.mean(scores[y_real == 2] < 60)),
    }
    say(
        f"  band 60 at accuracy {t60:.2f} (fold F1 {max(f1s):.3f}); detection AUC {figures['detection_auc']:.3f}; "
        f"expert-correct phones below 60: {figures['correct_below_60']:.1%}; score PCC {pcc(scores, y_real):.4f}"
    )
    at = np.cumsum([0, *counts])
    seq_words = [None if seq_oof is None else np.clip(seq_oof[j][1], 0.0, 10.0) for j in range(len(evs))]
    seq_totals = [None if seq_oof is None else float(np.clip(seq_oof[j][2], 0.0, 10.0)) for j in range(len(evs))]
    word_x = [word_features(evs[j], phone_oof[at[j] : at[j + 1]], seq_words[j]) for j in range(len(evs))]
    wx, wy = np.concatenate(word_x), np.concatenate(word_y)
    wat = np.cumsum([0, *[len(b) for b in word_x]])  # each utterance's first word
    wfold = np.repeat(fold_of_utt, np.diff(wat))
    wreal = np.repeat(real, np.diff(wat))
    unsaid = np.concatenate(unsaid_flags)
    # said or not: real words (and the said words around an inserted one) against the
    # words of a text that was not said
    said_fit, logit = choose(
        "said (AUC, said vs unsaid words)",
        ridges(fit_logistic),
        wx,
        (~unsaid).astype(float),
        wfold,
        np.ones(len(wy), dtype=bool),
        lambda oof: auc(oof, ~unsaid),
        say,
    )
    p_said = 1.0 / (1.0 + np.exp(-logit))
    # the accuracy of a said word, learned from the corpus' words only (the unsaid words are
    # P(said)'s to handle), chosen by the fold PCC of the word score: P(said) x the prediction
    word_fit, word_oof = choose(
        "word (PCC of P(said) x prediction)",
        ridges(fit_linear),
        wx,
        wy,
        wfold,
        wreal,
        lambda oof: pcc((p_said * np.clip(oof, 0.0, 10.0))[wreal], wy[wreal]),
        say,
    )
    word_oof = np.clip(word_oof, 0.0, 10.0)
    # is_matched: the P(said) below which 3 % of the words the experts rate 8-10 fall
    good = wreal & (wy >= 8)
    matched_above = float(np.quantile(p_said[good], 0.03))
    gated_word = p_said * word_oof
    figures["word"] = pcc(gated_word[wreal], wy[wreal])
    figures["unsaid_matched"] = float(np.mean(p_said[unsaid] >= matched_above))
    say(
        f"  is_matched when P(said) >= {matched_above:.3f}: false for {np.mean(p_said[good] < matched_above):.1%} of "
        f"words rated 8-10, {np.mean(p_said[wreal & (wy <= 2)] < matched_above):.1%} of words rated 0-2, "
        f"{np.mean(p_said[unsaid] < matched_above):.1%} of words not said; word fold PCC {figures['word']:.4f} "
        f"({pcc(word_oof[wreal], wy[wreal]):.4f} without P(said))"
    )
    ux = np.concatenate(
        [
            utterance_features(evs[j], phone_oof[at[j] : at[j + 1]], word_oof[wat[j] : wat[j + 1]], seq_totals[j])
            for j in range(len(evs))
        ]
    )
    utt_fit, total_oof = choose(
        "utterance (PCC)",
        ridges(fit_linear),
        ux,
        total_y,
        fold_of_utt,
        real,
        lambda oof: pcc(oof[real], total_y[real]),
        say,
    )
    share_said = np.add.reduceat(p_said, wat[:-1]) / np.diff(wat)
    gated_total = np.clip(total_oof, 0.0, 10.0) * share_said
    figures["total"] = pcc(gated_total[real], total_y[real])
    not_said = ~real & (total_y == 0)
    figures["not_said_total"] = float(np.mean(gated_total[not_said]))
    say(
        f"  total fold PCC {figures['total']:.4f}; phrases not said at all: total {figures['not_said_total']:.2f} "
        f"on average, {np.mean(gated_total[not_said] >= 4):.1%} of them 40 or more"
    )
    figures["mean3"] = (figures["phone"] + figures["word"] + figures["total"]) / 3
    return Stages(bands, word_fit, utt_fit, said_fit, matched_above, wx, wy, wreal, unsaid, ux, figures)
