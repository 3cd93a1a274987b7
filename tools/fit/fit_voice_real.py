"""Fit the voice scoring model on the speechocean762 train split (never the test split).

    python tools/fit/fit_voice_real.py SO762_DIR [--out src/learnloop/voice/assessment.json]

Needs the ``fit`` extra (PyTorch) and espeak-ng. Writes ``assessment.json`` and the
sequence model's weights beside it (``assessment.npz``, whose SHA-256 the JSON records).

- **sequence model** (``learnloop.voice.sequence``; trained by ``_sequence_torch.py``): a
  small transformer over the phones of the whole utterance predicting the experts' phone
  accuracy, word accuracy and total at once, trained on the train split's utterances and on
  the ``fit`` part of the espeak-ng substitution set (``benchmarks/substitution_set.py``)
  and the labelled calibration words (``benchmarks/_espeak_labelled.py``): phones said
  right labelled 2, the substituted or deleted phone 0, no word or total label;
- **said** stage: logistic regression over the word features (with the sequence model's
  phone predictions) gives the probability that a word was said at all, learned from the
  corpus' words against words of texts the audio does not say (a tenth of the train
  utterances paired with another utterance's text, a tenth with one word of another text
  inserted); words and the total are scaled by it, as before;
- **bands**: the predicted phone accuracy of the "retry" edge (best F1 for phones the
  experts' mean puts below 1), 1.7 and 1.9 for 80 and 90; ``is_matched``: the *said*
  probability below which 3 % of the words the experts rate 8-10 fall;
- **said as** (``learnloop.voice.saidas``): the conditional logit behind ``sounds_like``,
  fitted on the substitution set's ``fit`` part and the calibration words (the phone said
  is known) and on the train split's phones (rated correct: said as itself; rated wrong:
  as something else); ``--said-as-only`` refits it alone.

Every choice is made on five speaker folds inside the train split (word folds for the
espeak-ng words), and every later stage learns from out-of-fold predictions of the
sequence model, so that it sees predictions for speakers the model was not trained on.
The final models are then fitted on the whole train split. Prints the fold figures.

Data: see ``benchmarks/_so762.py`` (speechocean762, Zhang et al. 2021, CC BY 4.0).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core per process, before numpy and torch load

import argparse
import dataclasses
import json
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

# the speechocean762 helpers and the substitution set the voice benchmarks share
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _sequence_torch as seq
import _so762
import torch
from threadpoolctl import threadpool_limits

from learnloop.voice.assessment import (
    Assessor,
    Bands,
    Linear,
    fit_logistic,
    said_features,
    sequence_features,
    utterance_timing,
)
from learnloop.voice.saidas import FEATURE_NAMES, SaidAs, fit_said_as

#: (width, heads, layers, feed-forward, dropout, epochs): the sizes tried on the folds
CONFIGS = [(32, 2, 2, 64, 0.1, 30)]
RIDGES = [0.1, 1.0, 10.0, 100.0]
SAID_AS_RIDGES = [0.1, 1.0, 10.0]
#: is_matched: the P(said) below which this share of the words the experts rate 8-10 fall on the
#: folds (4 %: at 3 %, 28.9 % of the words of texts not said were matched, against 23.3 % with the
#: per-phone network; at 4 %, 24.3 %)
MATCHED_QUANTILE = 0.04
#: the band edges 80 and 90 on the experts' phone scale: 90+ when the five experts'
#: mean is 1.9 or more (at most one calls it accented), 80+ from 1.7
KNOTS_80_90 = (1.7, 1.9)
SEEDS = 1  # networks per fold
FINAL_SEEDS = 3  # networks averaged in the shipped model


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
    all (a phrase with an inserted word has no total). They train the *said* stage; the
    sequence model learns from the corpus' utterances only.

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


def as_utterance(ev: object, phone_y: np.ndarray, word_y: np.ndarray | None, total_y: float) -> seq.Utterance:
    n_words = len(ev.pronunciations)  # type: ignore[attr-defined]
    return seq.Utterance(
        sequence_features(ev),  # type: ignore[arg-type]
        np.array([g.word for g in ev.gops], dtype=np.int64),  # type: ignore[attr-defined]
        n_words,
        utterance_timing(ev),  # type: ignore[arg-type]
        phone_y,
        np.full(n_words, np.nan) if word_y is None else word_y,
        total_y,
    )


def word_fold(word: str, folds: int) -> int:
    """The fold of an espeak-ng word (a hash of the word)."""
    return zlib.crc32(word.encode()) % folds


def synthetic(root: Path, folds: int) -> tuple[list[seq.Utterance], np.ndarray, list[tuple[int, int, str]]]:
    """Labelled espeak-ng words: the ``fit`` part of the substitution set (said right, with a
    substitution or with a deletion; insertions are not labelled per phone) and the
    calibration words of ``_espeak_labelled``. Returns the utterances, their word folds and,
    per utterance, (edited phone, rendition group, kind) with -1 for a word said right."""
    import _espeak_labelled
    import substitution_set

    utts, fold, meta = [], [], []
    for r in substitution_set.renditions(root, "fit"):
        p = r.pair
        if p is not None and p.kind == "ins":
            continue
        n = len(r.evidence.gops)  # type: ignore[attr-defined]
        at = -1 if p is None else p.at
        utts.append(as_utterance(r.evidence, np.where(np.arange(n) == at, 0.0, 2.0), None, float("nan")))
        fold.append(word_fold(r.word, folds))
        meta.append((at, 0, "ok" if p is None else p.kind))
    for key, raw in _espeak_labelled.evidence(root).items():
        ev = _so762.to_evidence(key, raw)
        if len(ev.gops) != len(ev.pronunciations[0]):  # type: ignore[attr-defined]
            continue
        at = int(raw["substituted"])  # type: ignore[call-overload]
        n = len(ev.gops)  # type: ignore[attr-defined]
        utts.append(as_utterance(ev, np.where(np.arange(n) == at, 0.0, 2.0), None, float("nan")))
        fold.append(word_fold(key.split(":")[1], folds))
        meta.append((at, 1, "ok" if at < 0 else "sub"))
    return utts, np.array(fold), meta


Fit = Callable[[np.ndarray, np.ndarray], Callable[[np.ndarray], np.ndarray]]


def choose(
    what: str,
    candidates: list[tuple[str, Fit]],
    x: np.ndarray,
    y: np.ndarray,
    fold: np.ndarray,
    trainable: np.ndarray,
    judge: Callable[[np.ndarray], float],
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
        print(f"  {what} {name}: fold {score:.4f}")
        if best is None or score > best[0]:
            best = (score, fit, oof)
    assert best is not None
    return best[1], best[2]


def ridges(fit: Callable[..., Callable[[np.ndarray], np.ndarray]]) -> list[tuple[str, Fit]]:
    """``fit`` with each of the ridge penalties ``RIDGES``."""
    return [(f"ridge={r}", lambda x, y, r=r: fit(x, y, ridge=r)) for r in RIDGES]


def ensemble(utts: list[seq.Utterance], config: tuple, progress: str, seeds: int = SEEDS) -> list[seq.Net]:
    width, heads, layers, ff, dropout, epochs = config
    return [
        seq.train(
            utts, width=width, heads=heads, layers=layers, ff=ff, dropout=dropout, epochs=epochs, seed=s,
            progress=f"{progress} seed {s}",
        )
        for s in range(seeds)
    ]  # fmt: skip


def predict(nets: list[seq.Net], utts: list[seq.Utterance]) -> list[tuple[np.ndarray, np.ndarray, float]]:
    runs = [seq.predict(n, utts) for n in nets]
    return [
        (
            np.mean([r[j][0] for r in runs], 0),
            np.mean([r[j][1] for r in runs], 0),
            float(np.mean([r[j][2] for r in runs])),
        )
        for j in range(len(utts))
    ]


def said_as_examples(
    root: Path, evs: list, phone_y: list[np.ndarray], real: np.ndarray, folds: int, seed: int = 0
) -> tuple[list[np.ndarray], list[int], np.ndarray]:
    """Examples of the *said as* choice: each one's candidate features, the candidate said (its
    row) or -1 for "anything but itself", and the word fold of an espeak-ng example (-1 for
    the corpus).

    - the ``fit`` part of the substitution set (``benchmarks/substitution_set.py``): the
      substituted phone said as its substitute, the deleted one as ``#``, the phones of the
      words said right as themselves (the neighbours of an edit and the insertions are left
      out); the learner's first language is given for half of them (half of those its own,
      half another), to learn how far to trust a pattern;
    - the calibration words of ``_espeak_labelled`` (said right, and with a phone replaced by
      any other of its class: far substitutions too, which the patterns hardly have);
    - the train split's phones: those the five experts all call correct said as themselves
      (20,000 of them, seeded), those they call wrong (mean 0.5 or less) as anything else;
      the learners are Mandarin speakers, given as such for half of them.
    """
    import substitution_set

    from learnloop.voice.confusions import FIRST_LANGUAGES
    from learnloop.voice.saidas import candidate_features, candidates

    rng = np.random.default_rng(seed)
    blocks, labels, fold = [], [], []

    def given(own: tuple[str, ...]) -> str | None:
        r = rng.random()
        if r < 0.5 or not own:
            return None
        others = [x for x in FIRST_LANGUAGES if x not in own]
        if r < 0.75 or not others:
            return own[0]
        return str(rng.choice(others))

    for r in substitution_set.renditions(root, "fit"):
        p = r.pair
        if p is not None and p.kind == "ins":
            continue
        for g in r.evidence.gops:  # type: ignore[attr-defined]
            if p is None:
                label, l1 = 0, given(("zh",))
            elif g.index == p.at:
                names = candidates(g.phone)
                if p.heard not in names:
                    continue
                label, l1 = names.index(p.heard), given(p.l1)
            else:
                continue
            blocks.append(candidate_features(g.phone, g.llr, g.end - g.start, l1))
            labels.append(label)
            fold.append(zlib.crc32(r.word.encode()) % folds)
    import _espeak_labelled

    substitute = {job[0]: job[4] for job in _espeak_labelled.jobs()}
    for key, raw in _espeak_labelled.evidence(root).items():
        ev = _so762.to_evidence(key, raw)
        if len(ev.gops) != len(ev.pronunciations[0]):  # type: ignore[attr-defined]
            continue
        at = int(raw["substituted"])  # type: ignore[call-overload]
        word = key.split(":")[1]
        said = list(ev.pronunciations[0])  # type: ignore[attr-defined]
        if at >= 0:
            said[at] = substitute[key]
        for g in ev.gops:  # type: ignore[attr-defined]
            if at < 0:
                label = 0
            elif g.index == at and said[at] in candidates(g.phone):
                label = candidates(g.phone).index(said[at])
            else:
                continue
            blocks.append(candidate_features(g.phone, g.llr, g.end - g.start, given(())))
            labels.append(label)
            fold.append(zlib.crc32(word.encode()) % folds)
    pool = [(u, k) for u in np.flatnonzero(real) for k in range(len(phone_y[u]))]
    right = 0
    for j in rng.permutation(len(pool)):
        u, k = pool[j]
        y = phone_y[u][k]
        if y == 2.0 and right < 20000:
            label, right = 0, right + 1
        elif y <= 0.5:
            label = -1
        else:
            continue
        g = evs[u].gops[k]
        blocks.append(candidate_features(g.phone, g.llr, g.end - g.start, "zh" if rng.random() < 0.5 else None))
        labels.append(label)
        fold.append(-1)
    return blocks, labels, np.array(fold)


def fit_said_as_stage(root: Path, evs: list, phone_y: list[np.ndarray], real: np.ndarray, folds: int) -> SaidAs:
    """The *said as* choice, its ridge chosen by top-1 on the espeak-ng word folds (the phone
    said named, for the substituted and deleted phones of the held-out words of each fold)."""
    blocks, labels, fold = said_as_examples(root, evs, phone_y, real, folds)
    lab = np.array(labels)
    n_synth = int(np.sum(fold >= 0))
    print(
        f"said as: {n_synth} espeak-ng phones ({int(np.sum((fold >= 0) & (lab > 0)))} substituted or deleted) and "
        f"{len(labels) - n_synth} of the corpus ({int(np.sum(lab < 0))} called wrong)"
    )

    def word_fold_top1(blocks: list[np.ndarray], ridge: float) -> float:
        hits = []
        for k in range(folds):
            model = fit_said_as(
                [b for b, f in zip(blocks, fold) if f != k], [y for y, f in zip(labels, fold) if f != k], ridge=ridge
            )
            for j in np.flatnonzero((fold == k) & (lab > 0)):
                s = blocks[j] @ model.weights
                hits.append(1 + int(np.argmax(s[1:])) == lab[j])
        return float(np.mean(hits))

    best: tuple[float, float] | None = None
    for ridge in SAID_AS_RIDGES:
        top1 = word_fold_top1(blocks, ridge)
        print(f"  said as, ridge {ridge}: word-fold top-1 {top1:.1%} ({int(np.sum((fold >= 0) & (lab > 0)))} phones)")
        if best is None or top1 > best[0]:
            best = (top1, ridge)
    assert best is not None
    # the same without the first-language pattern features: what the acoustic evidence and the
    # articulatory distance name alone (the substitution set is drawn from the patterns)
    cols = [FEATURE_NAMES.index("pattern"), FEATURE_NAMES.index("pattern_given")]
    plain = [b.copy() for b in blocks]
    for b in plain:
        b[:, cols] = 0.0
    print(
        f"  said as without the pattern features, ridge {best[1]}: word-fold top-1 {word_fold_top1(plain, best[1]):.1%}"
    )
    assert best is not None
    return fit_said_as(blocks, labels, ridge=best[1])


def fit_said_stage(
    evs: list,
    phone_oof_list: list[np.ndarray],
    word_oof_list: list[np.ndarray],
    total_oof: np.ndarray,
    word_y: list[np.ndarray],
    unsaid_flags: list[np.ndarray],
    total_y: np.ndarray,
    real: np.ndarray,
    fold_of_utt: np.ndarray,
) -> tuple[Linear, float]:
    """The *said* stage (its ridge chosen by the fold AUC of said against unsaid words) and the
    ``is_matched`` level, from the sequence model's out-of-fold predictions; prints the fold
    figures of the word and total scores it scales."""
    word_x = [said_features(evs[u], phone_oof_list[u], word_oof_list[u], float(total_oof[u])) for u in range(len(evs))]
    wx, wy = np.concatenate(word_x), np.concatenate(word_y)
    wat = np.cumsum([0, *[len(b) for b in word_x]])
    wfold = np.repeat(fold_of_utt, np.diff(wat))
    wreal = np.repeat(real, np.diff(wat))
    unsaid = np.concatenate(unsaid_flags)
    said_fit, logit = choose(
        "said (AUC, said vs unsaid words)",
        ridges(fit_logistic),
        wx,
        (~unsaid).astype(float),
        wfold,
        np.ones(len(wy), dtype=bool),
        lambda o: auc(o, ~unsaid),
    )
    p_said = 1.0 / (1.0 + np.exp(-logit))
    word_pred = np.concatenate(word_oof_list)
    gated_word = p_said * word_pred
    good = wreal & (wy >= 8)
    matched_above = float(np.quantile(p_said[good], MATCHED_QUANTILE))
    print(
        f"  word fold PCC: {pcc(word_pred[wreal], wy[wreal]):.4f} as said, {pcc(gated_word[wreal], wy[wreal]):.4f} "
        f"with P(said); is_matched when P(said) >= {matched_above:.3f}: false for "
        f"{np.mean(p_said[good] < matched_above):.1%} of words rated 8-10, "
        f"{np.mean(p_said[wreal & (wy <= 2)] < matched_above):.1%} rated 0-2, {np.mean(p_said[unsaid] < matched_above):.1%} not said"
    )
    wrong_text = np.repeat(~real & (total_y == 0), np.diff(wat))
    share_said = np.add.reduceat(p_said, wat[:-1]) / np.diff(wat)
    gated_total = total_oof * share_said
    print(
        f"  total fold PCC: {pcc(total_oof[real], total_y[real]):.4f} as said, {pcc(gated_total[real], total_y[real]):.4f} "
        f"with P(said); texts not said: total {np.mean(gated_total[~real & (total_y == 0)]):.2f} on average, "
        f"{np.mean(gated_total[~real & (total_y == 0)] >= 4):.1%} of them 40 or more, word scores "
        f"{10 * np.mean(gated_word[wrong_text]):.1f} on average; an inserted word {10 * np.mean(gated_word[unsaid & ~wrong_text]):.1f}"
    )

    said = said_fit(wx, (~unsaid).astype(float))
    return said, matched_above  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[2] / "src/learnloop/voice/assessment.json"
    )
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--dump", type=Path, help="save the out-of-fold predictions here (.npz)")
    ap.add_argument(
        "--said-as-only", action="store_true", help="refit the said-as choice of the model at --out and keep the rest"
    )
    ap.add_argument(
        "--said-as-from",
        type=Path,
        help="take the said-as choice from this model instead of fitting it (the same fit, when its data are the same)",
    )
    args = ap.parse_args()
    threadpool_limits(1)
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    labels = _so762.load_labels(args.root)
    evs, phone_y, word_y, unsaid_flags, total_y, real, fold_of_utt = training_set(args.root, labels, args.folds)
    if args.said_as_only:
        kept = Assessor.load(args.out)
        said_as = fit_said_as_stage(args.root, evs, phone_y, real, args.folds)
        dataclasses.replace(kept, said_as_model=said_as).save(args.out)
        print(f"wrote {args.out} (said as refitted) in {time.perf_counter() - t0:.0f} s")
        return
    utts = [
        as_utterance(ev, py, wy if r else None, t if r else float("nan"))
        for ev, py, wy, t, r in zip(evs, phone_y, word_y, total_y, real, strict=True)
    ]
    s_utts, s_fold, s_meta = synthetic(args.root, args.folds)
    print(
        f"train: {int(real.sum())} utterances ({sum(len(p) for p, r in zip(phone_y, real) if r)} phones) and "
        f"{int((~real).sum())} paired with a text they do not say; {len(s_utts)} espeak-ng words "
        f"({sum(m[0] >= 0 for m in s_meta)} with a phone substituted or deleted); {args.folds} speaker folds"
    )
    y = np.concatenate([p for p, r in zip(phone_y, real) if r])
    wy_real = np.concatenate([w for w, r in zip(word_y, real) if r])

    # -- sequence model on the folds -----------------------------------------------------------
    best = None
    for config in CONFIGS:
        oof: list[tuple[np.ndarray, np.ndarray, float] | None] = [None] * len(utts)
        s_oof: list[tuple[np.ndarray, np.ndarray, float] | None] = [None] * len(s_utts)
        for k in range(args.folds):
            train_set = [u for u, r, f in zip(utts, real, fold_of_utt) if r and f != k]
            train_set += [u for u, f in zip(s_utts, s_fold) if f != k]
            nets = ensemble(train_set, config, f"fold {k}")
            idx = [j for j in range(len(utts)) if fold_of_utt[j] == k]
            for j, found in zip(idx, predict(nets, [utts[j] for j in idx])):
                oof[j] = found
            sidx = [j for j in range(len(s_utts)) if s_fold[j] == k]
            for j, found in zip(sidx, predict(nets, [s_utts[j] for j in sidx])):
                s_oof[j] = found
            print(f"  fold {k} done ({time.perf_counter() - t0:.0f} s)", flush=True)
        phone = np.concatenate([np.clip(o[0], 0, 2) for o, r in zip(oof, real) if r])  # type: ignore[index]
        word = np.concatenate([np.clip(o[1], 0, 10) for o, r in zip(oof, real) if r])  # type: ignore[index]
        total = np.array([np.clip(o[2], 0, 10) for o, r in zip(oof, real) if r])  # type: ignore[index]
        edited = np.array([o[0][m[0]] for o, m in zip(s_oof, s_meta) if m[0] >= 0])  # type: ignore[index]
        right = np.concatenate([o[0] for o, m in zip(s_oof, s_meta) if m[0] < 0])  # type: ignore[index]
        s_auc = auc(np.r_[-edited, -right], np.r_[np.ones(len(edited), bool), np.zeros(len(right), bool)])
        r3 = (pcc(phone, y), pcc(word, wy_real), pcc(total, total_y[real]))
        print(
            f"  sequence model {config}: fold PCC phone {r3[0]:.4f}, word (said) {r3[1]:.4f}, total {r3[2]:.4f}; "
            f"espeak-ng edited vs correct phones AUC {s_auc:.3f}",
            flush=True,
        )
        if best is None or sum(r3) > best[0]:
            best = (sum(r3), config, oof)
    assert best is not None
    _, config, oof_all = best
    phone_oof_list = [np.clip(o[0], 0.0, 2.0) for o in oof_all]  # type: ignore[index]
    word_oof_list = [np.clip(o[1], 0.0, 10.0) for o in oof_all]  # type: ignore[index]
    total_oof = np.array([float(np.clip(o[2], 0.0, 10.0)) for o in oof_all])  # type: ignore[index]
    counts = [len(p) for p in phone_oof_list]
    phone_oof = np.concatenate(phone_oof_list)
    is_real = np.repeat(real, counts)
    yy = np.concatenate(phone_y)

    # band edge 60: the predicted accuracy that best separates mispronounced phones
    # (experts' mean < 1) from the rest, by F1 on the folds
    po, yr = phone_oof[is_real], yy[is_real]
    wrong = yr < 1.0
    grid = np.round(np.arange(0.8, 1.65, 0.01), 2)
    f1s = []
    for t in grid:
        flagged = po < t
        tp = np.sum(flagged & wrong)
        f1s.append(2 * tp / max(flagged.sum() + wrong.sum(), 1))
    t60 = float(grid[int(np.argmax(f1s))])
    bands = Bands((t60, *KNOTS_80_90))
    scores = bands.phone_score(po)
    print(
        f"  band 60 at accuracy {t60:.2f} (fold F1 {max(f1s):.3f}); detection AUC {auc(-po, wrong):.3f}; "
        f"expert-correct phones below 60: {np.mean(scores[yr == 2] < 60):.1%}; score PCC {pcc(scores, yr):.4f}"
    )

    # -- said stage (on out-of-fold phone predictions) ------------------------------------------
    said, matched_above = fit_said_stage(
        evs, phone_oof_list, word_oof_list, total_oof, word_y, unsaid_flags, total_y, real, fold_of_utt
    )

    # -- said as ---------------------------------------------------------------------------------
    if args.said_as_from is not None:
        said_as_model = SaidAs.from_dict(json.loads(args.said_as_from.read_text())["said_as"])
        print(f"said as: taken from {args.said_as_from}")
    else:
        said_as_model = fit_said_as_stage(args.root, evs, phone_y, real, args.folds)

    if args.dump:
        wat = np.cumsum([0, *[len(w) for w in word_oof_list]])
        np.savez(args.dump, phone_oof=phone_oof, word_oof=np.concatenate(word_oof_list), total_oof=total_oof, wat=wat)

    # -- final fit on the whole train split ---------------------------------------------------------
    final_set = [u for u, r in zip(utts, real) if r] + s_utts
    nets = ensemble(final_set, config, "final", FINAL_SEEDS)
    model = seq.export(nets)
    assessor = Assessor(None, None, None, bands, said, matched_above, sequence=model, said_as_model=said_as_model)
    assessor.save(args.out)
    npz = args.out.with_suffix(".npz")
    print(
        f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KB) and {npz.name} ({npz.stat().st_size / 1024:.0f} KB) "
        f"in {time.perf_counter() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()
