"""Diagnosis on the held-out part of the substitution set: does the edited phone score low, and
does ``sounds_like`` name what was said?

    python benchmarks/bench_voice_substitutions.py SO762_DIR [--model assessment.json] [--split held-out]

The set (``substitution_set.py``): espeak-ng minimal pairs of first-language error
patterns, four voices, split by word; the scoring model learns from the ``fit``
part only, and this reads the ``held-out`` part. For every pair and voice, the
edited canonical phone of the edited rendition is compared with the same phone of
the word said right by the same voice.

- **AUC**: the probability that the edited phone's predicted accuracy is below the
  correct one's (ties count half), over all pairs and by kind (vowel and consonant
  substitutions, deletions, insertions: the canonical phone next to the added
  vowel), by voice and by first language;
- **phones below 60**: the share of correct and of edited phones in the retry band;
- **sounds_like**: for substitutions, how often it names the phone said, as the
  product reports it (the target itself when the phone scores 60 or more) and
  when asked (the model's best phone other than the target, whatever the score);
  for deletions, how often it is ``#``. ``--first-language`` gives the scorer each
  pair's first language (its patterns then weigh in); by default none is given.

Data: the evidence cache of ``substitution_set.py`` under ``SO762_DIR/.learnloop/``.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import substitution_set

from learnloop.voice.assessment import Assessor, default_assessor
from learnloop.voice.phonemes import VOWELS


def auc(low: list[float], high: list[float]) -> float:
    """Probability that an edited phone (``low``) scores below a correct one (``high``); ties half."""
    a = np.asarray(low, float)[:, None]
    b = np.asarray(high, float)[None, :]
    return float(np.mean(a < b) + 0.5 * np.mean(a == b))


def kind_of(pair: substitution_set.Pair) -> str:
    if pair.kind == "sub":
        return "vowel substitution" if pair.target in VOWELS else "consonant substitution"
    return {"del": "deletion", "ins": "insertion"}[pair.kind]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--model", type=Path, help="an assessment.json (default: the shipped one)")
    ap.add_argument("--split", default="held-out", choices=("held-out", "fit"))
    ap.add_argument("--first-language", action="store_true", help="give the scorer each pair's first language")
    args = ap.parse_args()
    model = default_assessor() if args.model is None else Assessor.load(args.model)
    found = substitution_set.renditions(args.root, args.split)
    correct: dict[tuple[str, str], tuple[np.ndarray, object]] = {}
    for r in found:
        if r.pair is None:
            correct[(r.voice, r.word)] = (model.judge(r.evidence).phone_accuracy, r.evidence)  # type: ignore[arg-type]
    rows = []  # (pair, voice, edited accuracy, correct accuracy, sounds_like as reported, when asked, score)
    for r in found:
        if r.pair is None or (r.voice, r.word) not in correct:
            continue
        p = r.pair
        ev = r.evidence
        l1 = p.l1[0] if args.first_language and p.l1 else None
        j = model.judge(ev)  # type: ignore[arg-type]
        reported = model.sounds_like(ev, j, first_language=l1)  # type: ignore[arg-type]
        asked = model.said_as(ev, first_language=l1)  # type: ignore[arg-type]
        ok_acc = correct[(r.voice, r.word)][0]
        rows.append(
            (
                p,
                r.voice,
                float(j.phone_accuracy[p.at]),
                float(ok_acc[p.at]),
                reported[p.at],
                asked[p.at],
                int(j.phone_scores[p.at]),
            )
        )
    n_pairs = len({row[0].key for row in rows})
    print(
        f"substitution set, {args.split} part: {n_pairs} pairs x {len(substitution_set.VOICES)} voices = {len(rows)} "
        f"edited renditions, {len(correct)} words said right; model {args.model or 'shipped'}"
        + ("; first language given" if args.first_language else "")
    )
    correct_phones = [float(row[3]) for row in rows]
    print()
    print("| edited phones | renditions | AUC (edited below correct) | edited < 60 | correct < 60 |")
    print("|---|---|---|---|---|")
    bands = model.bands

    def line(name: str, sel: list[tuple]) -> None:
        if not sel:
            return
        low = [s[2] for s in sel]
        high = [s[3] for s in sel]
        print(
            f"| {name} | {len(sel)} | {auc(low, high):.3f} | {np.mean(bands.phone_score(np.array(low)) < 60):.0%} "
            f"| {np.mean(bands.phone_score(np.array(high)) < 60):.1%} |"
        )

    subs = [r for r in rows if r[0].kind == "sub"]
    line("substitutions", subs)
    groups: defaultdict[str, list[tuple]] = defaultdict(list)
    for row in rows:
        groups[kind_of(row[0])].append(row)
    for name in ("vowel substitution", "consonant substitution", "deletion", "insertion"):
        line(name, groups[name])
    line("substitutions and deletions", [r for r in rows if r[0].kind != "ins"])
    for voice in substitution_set.VOICES:
        line(f"substitutions, {voice}", [r for r in subs if r[1] == voice])
    for l1 in ("zh", "es", "hi", "ar"):
        line(f"substitutions, pattern of {l1}", [r for r in subs if l1 in r[0].l1])
    print(f"(correct phones in these words: {np.mean(bands.phone_score(np.array(correct_phones)) < 60):.1%} below 60)")
    print()
    named = np.mean([r[4] == r[0].heard for r in subs])
    asked = np.mean([r[5] == r[0].heard for r in subs])
    band_only = np.mean([(r[5] if r[6] < 60 else r[0].target) == r[0].heard for r in subs])
    same_class = np.mean([(r[5] in VOWELS) == (r[0].heard in VOWELS) and r[5] != r[0].target for r in subs])
    print(
        f"sounds_like names the phone said (substitutions, {len(subs)}): {named:.1%} as reported, {asked:.1%} when asked"
    )
    print(f"  as reported if only the retry band (< 60) named another phone: {band_only:.1%}")
    print(f"  the phone named when asked is of the said phone's class: {same_class:.1%}")
    for name in ("vowel substitution", "consonant substitution"):
        sel = groups[name]
        print(
            f"  {name}s: {np.mean([r[4] == r[0].heard for r in sel]):.1%} as reported, "
            f"{np.mean([r[5] == r[0].heard for r in sel]):.1%} when asked"
        )
    for voice in substitution_set.VOICES:
        sel = [r for r in subs if r[1] == voice]
        print(
            f"  {voice}: {np.mean([r[4] == r[0].heard for r in sel]):.1%} as reported, {np.mean([r[5] == r[0].heard for r in sel]):.1%} when asked"
        )
    dels = groups["deletion"]
    if dels:
        print(
            f"deletions ({len(dels)}): sounds_like '#' {np.mean([r[4] == '#' for r in dels]):.1%} as reported, "
            f"{np.mean([r[5] == '#' for r in dels]):.1%} when asked"
        )


if __name__ == "__main__":
    main()
