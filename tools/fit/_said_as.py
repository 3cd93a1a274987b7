"""The *said as* choice behind ``sounds_like`` (``learnloop.voice.saidas``): its examples and its fit.

Used by ``fit_voice_real.py``; needs the evidence caches of ``substitution_set.py`` and
``_espeak_labelled.py`` under ``SO762_DIR/.learnloop/``.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path

import _so762
import numpy as np

from learnloop.voice import saidas
from learnloop.voice.saidas import FEATURE_NAMES, SaidAs, fit_said_as

#: the ridges tried on the word folds (their fold figures are cached under ``SO762_DIR/.learnloop/``)
SAID_AS_RIDGES = [0.1, 1.0, 10.0, 100.0]
#: the probabilities of another phone from which ``sounds_like`` may name it above the retry band,
#: tried on the train folds (:func:`choose_report_above`)
REPORT_ABOVE = [0.5, 0.6, 0.7, 0.8, 0.9]
#: ... the lowest of them that names another phone for at most this share of the phones all five
#: experts call correct (the issue's bar for expert-correct phones in the retry band)
FALSE_ALARMS = 0.05


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

    substitute = espeak_substitutes(root)
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


def espeak_substitutes(root: Path) -> dict[str, str]:
    """``voice:word:k`` -> the phone ``_espeak_labelled`` put in, kept beside its evidence cache (drawing
    the jobs asks espeak-ng about every word again, minutes on a loaded machine)."""
    import _espeak_labelled

    cache = root / ".learnloop" / f"espeak-substitutes-v{_espeak_labelled.CACHE_VERSION}.json"
    if cache.exists():
        return dict(json.loads(cache.read_text()))
    found = {job[0]: job[4] for job in _espeak_labelled.jobs()}
    cache.write_text(json.dumps(found))
    return found


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
        key = hashlib.sha256(repr((ridge, folds, labels)).encode() + fold.tobytes())
        for b in blocks:
            key.update(np.ascontiguousarray(b).tobytes())
        for f in (Path(__file__), Path(saidas.__file__)):
            key.update(f.read_bytes())
        cache = root / ".learnloop" / f"said-as-folds-{key.hexdigest()[:16]}.json"
        if cache.exists():
            return float(json.loads(cache.read_text()))
        hits = []
        for k in range(folds):
            model = fit_said_as(
                [b for b, f in zip(blocks, fold) if f != k], [y for y, f in zip(labels, fold) if f != k], ridge=ridge
            )
            for j in np.flatnonzero((fold == k) & (lab > 0)):
                s = blocks[j] @ model.weights
                hits.append(1 + int(np.argmax(s[1:])) == lab[j])
        cache.write_text(json.dumps(float(np.mean(hits))))
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


def choose_report_above(
    model: SaidAs,
    evs: list,
    phone_y: list[np.ndarray],
    real: np.ndarray,
    fold_scores: np.ndarray,
    part: object = None,
    part_scores: list[np.ndarray] | None = None,
) -> SaidAs:
    """``model`` with the lowest of :data:`REPORT_ABOVE` for which ``sounds_like`` names another phone
    for at most :data:`FALSE_ALARMS` of the corpus' expert-correct phones (their out-of-fold scores
    ``fold_scores``, 0-100, in ``evs`` order, the retry band included); None when none of them
    does. With the substitution set's fit ``part`` and its renditions' fold scores, prints how often
    the substituted phone is named as reported at each threshold."""
    at = np.cumsum([0, *[len(ev.gops) for ev in evs]])
    score, prob = [], []
    for j in np.flatnonzero(real):
        for k, g in enumerate(evs[j].gops):
            if phone_y[j][k] == 2.0:
                score.append(fold_scores[at[j] + k])
                prob.append(model.other_and_probability(g.phone, g.llr, g.end - g.start)[1])
    score_a, prob_a = np.array(score), np.array(prob)
    chosen = None
    print(
        f"sounds_like of the {len(score_a)} expert-correct train phones: another phone for "
        f"{np.mean(score_a < 60):.1%} (below 60)"
    )
    for above in REPORT_ABOVE:
        alarms = float(np.mean((score_a < 60) | (prob_a >= above)))
        named = ""
        if part is not None and part_scores is not None:
            hits = []
            for e, _, pos, kind in part.pairs:  # type: ignore[attr-defined]
                if kind != "sub":
                    continue
                g = part.renditions[e].evidence.gops[pos]  # type: ignore[attr-defined]
                other, p = model.other_and_probability(g.phone, g.llr, g.end - g.start)
                said = other if part_scores[e][pos] < 60 or p >= above else g.phone
                hits.append(said == part.renditions[e].pair.heard)  # type: ignore[attr-defined]
            named = f"; fit part's substitutions named as reported {np.mean(hits):.1%}"
        print(f"  also from a probability of {above}: another phone for {alarms:.1%}{named}")
        if chosen is None and alarms <= FALSE_ALARMS:
            chosen = above
    print(f"  report_above: {chosen}")
    return SaidAs(model.weights, chosen)
