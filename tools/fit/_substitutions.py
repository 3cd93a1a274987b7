"""The ``fit`` part of the substitution set as phone labels, word folds and pairs to measure on.

Used by ``fit_voice_real.py``: the sequence model may learn from these renditions (a clean
substitution or deletion is labelled 0, wrong, not accent), and the fold substitution AUC
that chooses their weight is measured on them, each word's renditions predicted by models
that did not see that word (word folds: ``zlib.crc32(word) % folds``, as the *said as*
choice's).
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def word_fold(word: str, folds: int) -> int:
    """The word fold of an espeak-ng rendition of ``word``."""
    return zlib.crc32(word.encode()) % folds


@dataclass
class FitPart:
    """The renditions (``substitution_set.Rendition``; insertions left out), the phone labels of
    each (2 said right, 0 the edited phone, nan its neighbours), each one's word fold, and the
    pairs to measure on: (edited rendition, the same word said right by the same voice, the
    edited phone's position, the pair's kind)."""

    renditions: list
    labels: list[np.ndarray]
    fold: np.ndarray
    pairs: list[tuple[int, int, int, str]]


def fit_part(root: Path, folds: int) -> FitPart:
    import substitution_set

    found = [r for r in substitution_set.renditions(root, "fit") if r.pair is None or r.pair.kind != "ins"]
    labels = []
    for r in found:
        y = np.full(len(r.evidence.gops), 2.0)
        if r.pair is not None:
            y[max(r.pair.at - 1, 0) : r.pair.at + 2] = np.nan  # the neighbours of an edit: unknown
            y[r.pair.at] = 0.0
        labels.append(y)
    right = {(r.voice, r.word): j for j, r in enumerate(found) if r.pair is None}
    pairs = [
        (j, right[(r.voice, r.word)], r.pair.at, r.pair.kind)
        for j, r in enumerate(found)
        if r.pair is not None and (r.voice, r.word) in right
    ]
    return FitPart(found, labels, np.array([word_fold(r.word, folds) for r in found]), pairs)


def pair_auc(part: FitPart, phone_pred: list[np.ndarray], kinds: tuple[str, ...] = ("sub",)) -> float:
    """The probability that an edited phone of ``kinds`` is predicted below the same phone said
    right (ties count half), over every pair and voice."""
    low = np.array([phone_pred[e][at] for e, c, at, k in part.pairs if k in kinds])
    high = np.array([phone_pred[c][at] for e, c, at, k in part.pairs if k in kinds])
    if not len(low):
        return float("nan")
    a, b = low[:, None], high[None, :]
    return float(np.mean(a < b) + 0.5 * np.mean(a == b))


def rendition_utterances(part: FitPart, weight: float) -> list:
    """The fit part's renditions as the sequence model's utterances, their phones weighted ``weight``
    (none when 0); no word or total label."""
    import _sequence_torch as seq

    if weight == 0.0:
        return []
    return [
        dataclasses.replace(seq.as_utterance(r.evidence, lab, None, float("nan")), weight=weight)
        for r, lab in zip(part.renditions, part.labels, strict=True)
    ]


def sequence_oof(
    utts: list, real: np.ndarray, fold_of_utt: np.ndarray, part: FitPart, config: tuple,
    weight: float, cache_dir: Path,
) -> list:  # fmt: skip
    """Fold predictions of the corpus' utterances (speaker folds) and then of the fit part's renditions
    (word folds), by networks trained on the corpus' own utterances of the other folds and, with a
    ``weight`` above 0, the renditions of the other word folds."""
    import _sequence_torch as seq

    rend = [seq.as_utterance(r.evidence, lab, None, float("nan")) for r, lab in zip(part.renditions, part.labels)]
    if weight > 0.0:
        rend = [dataclasses.replace(u, weight=weight) for u in rend]
    trainable = np.r_[real, np.full(len(rend), weight > 0.0)]
    return seq.out_of_fold(
        utts + rend, trainable, np.r_[fold_of_utt, part.fold], config, f"{config} w{weight} ", cache_dir=cache_dir
    )


def seed_oof(
    utts: list, real: np.ndarray, fold_of_utt: np.ndarray, part: FitPart, config: tuple,
    weight: float, seed: int, cache_dir: Path,
) -> list:  # fmt: skip
    """:func:`sequence_oof` by networks trained with ``seed`` (seed 0 is :func:`sequence_oof`'s own): one
    network per fold, the same rows; kept in ``cache_dir`` keyed by a hash of the training file, the
    inputs, the labels, the folds, the config and the seed."""
    import hashlib
    import pickle

    import _sequence_torch as seq

    if seed == 0:
        return sequence_oof(utts, real, fold_of_utt, part, config, weight, cache_dir)  # type: ignore[no-any-return]
    rend = [seq.as_utterance(r.evidence, lab, None, float("nan")) for r, lab in zip(part.renditions, part.labels)]
    if weight > 0.0:
        rend = [dataclasses.replace(u, weight=weight) for u in rend]
    every = utts + rend
    trainable = np.r_[real, np.full(len(rend), weight > 0.0)]
    fold = np.r_[fold_of_utt, part.fold]
    key = hashlib.sha256(Path(seq.__file__).read_bytes())
    for u in every:
        for a in (u.x, u.word, u.timing, u.phone_y, u.word_y, np.array([u.total_y, u.weight])):
            key.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    key.update(trainable.astype(np.int8).tobytes() + fold.astype(np.int64).tobytes() + repr((config, seed)).encode())
    path = cache_dir / f"sequence-oof-seed-{key.hexdigest()[:16]}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())  # type: ignore[no-any-return]
    width, heads, layers, ff, dropout, epochs = config
    out: list = [None] * len(every)
    for k in np.unique(fold):
        train = [u for u, t, f in zip(every, trainable, fold, strict=True) if t and f != k]
        net = seq.train(
            train, width=width, heads=heads, layers=layers, ff=ff, dropout=dropout, epochs=epochs, seed=seed,
            progress=f"seed {seed} fold {k}",
        )  # fmt: skip
        idx = [j for j in range(len(every)) if fold[j] == k]
        for j, found in zip(idx, seq.predict(net, [every[j] for j in idx]), strict=True):
            out[j] = found
    path.write_bytes(pickle.dumps(out))
    return out


def mean_of(runs: list[list]) -> list:
    """The mean of several runs' (phone, word, total) predictions of each utterance."""
    return [
        (
            np.mean([r[j][0] for r in runs], 0),
            np.mean([r[j][1] for r in runs], 0),
            float(np.mean([r[j][2] for r in runs])),
        )
        for j in range(len(runs[0]))
    ]
