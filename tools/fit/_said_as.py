"""The *said as* choice behind ``sounds_like`` (``learnloop.voice.saidas``): its examples and its fit.

Used by ``fit_voice_real.py``; needs the evidence caches of ``substitution_set.py`` and
``_espeak_labelled.py`` under ``SO762_DIR/.learnloop/``.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import _so762
import numpy as np

from learnloop.voice.saidas import FEATURE_NAMES, SaidAs, fit_said_as

#: the ridges tried on the word folds; with one, it is taken without the fold figures (each fold
#: fit takes minutes on a shared machine: the shipped choice used 1.0, untuned)
SAID_AS_RIDGES = [1.0]


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

    if len(SAID_AS_RIDGES) == 1:
        return fit_said_as(blocks, labels, ridge=SAID_AS_RIDGES[0])
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
