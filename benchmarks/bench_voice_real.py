"""The voice scores against speechocean762's experts, on the test split (scored once per figure).

    python benchmarks/bench_voice_real.py SO762_DIR [--model assessment.json] [--rtf 100] [--no-product]
    python benchmarks/bench_voice_real.py SO762_DIR --rtf-only train [--rtf 100]

Protocol (the published one): the scoring model is fitted on the train split only
(``tools/fit/fit_voice_real.py``); here every one of the 2,500 test utterances is
scored once against the corpus' canonical phones, which the experts labelled.
Printed beside the published rows:

- phone accuracy: PCC and MSE of the predicted expert accuracy (0-2), PCC of the
  0-100 phone score; mispronunciation detection (experts' mean < 1 positive) AUC,
  and F1 of the "retry" band (< 60); the share of expert-correct phones (2) scored
  below 60;
- word accuracy (0-10) and utterance total (0-10): PCC and MSE;
- ``is_matched`` false among words the experts rate 8-10 (and 0-2);
- how many utterances the speech check (``learnloop.voice.speech``) judges not heard
  (scored 0 as audio without speech), with the experts' totals of those;
- the same through the public ``PronunciationScorer.score`` with the dictionary's
  pronunciations (the product path; ``--no-product`` skips it), and the real-time
  factor of that path with the machine's default threading, median over ``--rtf``
  utterances.

``--no-speech-check`` scores every utterance with the scoring model alone (the
scorer before the speech check), for the figures the check is compared with.

``--rtf-only SPLIT`` times the product path alone on the first ``--rtf`` utterances
of ``SPLIT`` (wall-clock and process CPU time per second of audio), reading no
expert label: a speed figure that does not touch the test split's scores.

The row "GOP calibration (before)" is the espeak-ng-calibrated phone score that the
scorer used before the fitted model, computed from the same evidence.

Data: ``benchmarks/_so762.py`` (speechocean762, Zhang et al. 2021, CC BY 4.0).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _so762

from learnloop.voice.assessment import Assessor, default_assessor
from learnloop.voice.calibration import CALIBRATION
from learnloop.voice.speech import heard

PUBLISHED = [
    # (system, phone PCC, word accuracy PCC, utterance total PCC)
    ("Kaldi GOP baseline (Zhang et al. 2021)", 0.45, None, None),
    ("GOPT (Gong et al. 2022)", 0.612, 0.549, 0.742),
    ("OpenPronounce, training-free", None, None, 0.633),
]


def pcc(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def auc(score: np.ndarray, positive: np.ndarray) -> float:
    from scipy.stats import rankdata

    r = rankdata(score)
    n1 = int(positive.sum())
    return float((r[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * (len(score) - n1)))


def f1(flagged: np.ndarray, positive: np.ndarray) -> float:
    tp = np.sum(flagged & positive)
    return float(2 * tp / max(flagged.sum() + positive.sum(), 1))


def corpus_protocol(root: Path, model: Assessor, labels: dict) -> None:
    evs = _so762.evidences(root, "test")
    utts = list(evs)
    acc, score, before, y = [], [], [], []
    wacc, wy, said = [], [], []
    tot, ty = [], []
    unheard, other = [], []
    for u in utts:
        ev = evs[u]
        j = model.judge(ev)  # type: ignore[arg-type]
        if not heard(ev):  # type: ignore[arg-type]
            unheard.append(labels[u]["total"])
        acc.append(j.phone_accuracy)
        score.append(j.phone_scores)
        other.append([like != g.phone for g, like in zip(ev.gops, model.sounds_like(ev, j), strict=True)])  # type: ignore[arg-type, attr-defined]
        z = np.array([CALIBRATION.normalised_gop(g.phone, g.llr) for g in ev.gops])  # type: ignore[attr-defined]
        before.append(np.rint(100 * CALIBRATION.probability(z)))
        y.append(_so762.phone_labels(labels, u, ev))
        wacc.append(j.word_accuracy)
        wy.append([w["accuracy"] for w in labels[u]["words"]])
        said.append(j.said)
        tot.append(j.total)
        ty.append(labels[u]["total"])
    a, s, b, yy, named = map(np.concatenate, (acc, score, before, y, other))
    w, wyy, p_said = np.concatenate(wacc), np.concatenate(wy).astype(float), np.concatenate(said)
    t, tyy = np.array(tot), np.array(ty, dtype=float)
    wrong = yy < 1.0
    print(f"test split: {len(utts)} utterances, {len(yy)} phones, {len(wyy)} words (corpus phones)")
    check = "on" if model.speech_gate else "off"
    print(
        f"speech check {check}: {len(unheard)} utterances without speech to the check (scored 0 when it is on; "
        f"experts' totals {sorted(unheard)})"
    )
    print()
    print("| system | phone PCC | phone MSE | word acc. PCC | word MSE | total PCC | total MSE |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| learnloop (fitted model) | {pcc(a, yy):.3f} (score {pcc(s, yy):.3f}) | {np.mean((a - yy) ** 2):.3f} "
        f"| {pcc(w, wyy):.3f} | {np.mean((w - wyy) ** 2):.2f} | {pcc(t, tyy):.3f} | {np.mean((t - tyy) ** 2):.2f} |"
    )
    print(f"| learnloop GOP calibration (before) | {pcc(b, yy):.3f} | | | | | |")
    for name, p, wd, ut in PUBLISHED:
        cells = ["" if v is None else f"{v:.3f}" for v in (p, wd, ut)]
        print(f"| {name} | {cells[0]} | | {cells[1]} | | {cells[2]} | |")
    print()
    flagged = s < 60
    good_words = wyy >= 8
    print(f"mispronunciation detection (experts' mean < 1: {wrong.sum()} phones): AUC {auc(-a, wrong):.3f}, ")
    print(
        f"  F1 of the retry band (< 60) {f1(flagged, wrong):.3f} (before: AUC {auc(-b, wrong):.3f}, F1 {f1(b < 60, wrong):.3f})"
    )
    print(
        f"expert-correct phones (2) scored below 60: {np.mean(s[yy == 2] < 60):.1%} (before {np.mean(b[yy == 2] < 60):.1%})"
    )
    print(
        f"sounds_like names another phone for {np.mean(named[yy == 2]):.1%} of expert-correct phones "
        f"({np.mean(named[(yy == 2) & (s >= 60)]):.1%} of those scored 60 or more), {np.mean(named[wrong]):.1%} of "
        f"phones the experts' mean puts below 1"
    )
    cut = model.matched_above
    print(
        f"is_matched false (P(said) < {cut:.3f}): {np.mean(p_said[good_words] < cut):.1%} of words rated 8-10, "
        f"{np.mean(p_said[wyy <= 2] < cut):.1%} of words rated 0-2"
    )


def product_path(root: Path, labels: dict, n_rtf: int, model: Assessor) -> None:
    from tqdm.auto import tqdm

    from learnloop.voice import PronunciationScorer

    scorer = PronunciationScorer(assessor=model)
    paths = _so762.wav_paths(root, "test")
    utts = _so762.split_ids(root, "test")
    totals, ty, words, wy, rtf = [], [], [], [], []
    mismatched = unheard = 0
    for k, u in enumerate(tqdm(utts, desc="score (dictionary phones)")):
        audio = paths[u].read_bytes()
        text = " ".join(w["text"] for w in labels[u]["words"])
        t = time.perf_counter()
        r = scorer.score(audio, text)
        dt = time.perf_counter() - t
        if k < n_rtf:
            rtf.append(dt / ((len(audio) - 44) / 32000))
        unheard += r.overall_score == 0 and not any(w.is_matched for w in r.word_scores)
        totals.append(r.overall_score)
        ty.append(labels[u]["total"])
        if len(r.word_scores) == len(labels[u]["words"]):
            words += [ws.score for ws in r.word_scores]
            wy += [w["accuracy"] for w in labels[u]["words"]]
        else:
            mismatched += 1
    print()
    print(
        f"product path (PronunciationScorer.score, dictionary pronunciations), {len(utts)} test utterances: "
        f"word score PCC {pcc(np.array(words), np.array(wy, float)):.3f} ({mismatched} utterances tokenised differently, "
        f"left out of the word figure), overall score PCC {pcc(np.array(totals), np.array(ty, float)):.3f}"
    )
    print(f"overall score 0 with no word matched (as audio without speech is scored): {unheard} utterances")
    print(f"real-time factor, default threading: median {np.median(rtf):.3f} over {len(rtf)} utterances")


def rtf_only(root: Path, split: str, n: int) -> None:
    from learnloop.voice import PronunciationScorer

    transcripts = _so762.transcripts(root, split)
    paths = _so762.wav_paths(root, split)
    scorer = PronunciationScorer()
    wall, cpu = [], []
    for u in _so762.split_ids(root, split)[:n]:
        audio = paths[u].read_bytes()
        seconds = (len(audio) - 44) / 32000
        t, c = time.perf_counter(), time.process_time()
        scorer.score(audio, transcripts[u])
        wall.append((time.perf_counter() - t) / seconds)
        cpu.append((time.process_time() - c) / seconds)
    print(
        f"real-time factor, default threading, {len(wall)} {split} utterances: median {np.median(wall):.3f} "
        f"wall-clock, {np.median(cpu):.3f} process CPU time; load average {os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--model", type=Path, help="an assessment.json (default: the shipped one)")
    ap.add_argument("--rtf", type=int, default=100, help="utterances timed for the real-time factor")
    ap.add_argument("--no-product", action="store_true", help="skip the PronunciationScorer.score pass")
    ap.add_argument("--no-speech-check", action="store_true", help="score without the speech check (before it)")
    ap.add_argument("--rtf-only", metavar="SPLIT", choices=("train", "test"), help="time the product path only")
    args = ap.parse_args()
    if args.rtf_only:
        rtf_only(args.root, args.rtf_only, args.rtf)
        return
    labels = _so762.load_labels(args.root)
    model = default_assessor() if args.model is None else Assessor.load(args.model)
    if args.no_speech_check:
        model = dataclasses.replace(model, speech_gate=False)
    corpus_protocol(args.root, model, labels)
    if not args.no_product:
        product_path(args.root, labels, args.rtf, model)


if __name__ == "__main__":
    main()
