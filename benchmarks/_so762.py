"""speechocean762 for the voice benchmarks: labels, audio and the scorer's evidence, cached.

Zhang et al. (2021), "speechocean762: An Open-Source Non-native English Speech
Corpus For Pronunciation Assessment", arXiv 2104.01378 (CC BY 4.0). ``DIR`` holds
the corpus' ``WAVE/``, ``train/`` and ``test/`` (``fetch github:jimbozhang/speechocean762``,
then ``git archive HEAD WAVE train test resource | tar -x``) and ``scores.json`` (the
expert labels; by default ``../shared/data/speechocean762/scores.json``).

The evidence of every utterance (the scorer's forced alignment and GOP against the
corpus' own canonical phones, which the experts labelled) is computed once and
cached under ``DIR/.learnloop/``; it is the input of both fitting and evaluation.
"""

from __future__ import annotations

import json
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHARED_SCORES = Path(__file__).resolve().parents[2] / "shared" / "data" / "speechocean762" / "scores.json"
CACHE_VERSION = 1


def labels_path(root: Path) -> Path:
    own = root / "scores.json"
    return own if own.exists() else SHARED_SCORES


def split_ids(root: Path, split: str) -> list[str]:
    """Utterance ids of ``train`` or ``test``, in the corpus' order."""
    lines = (root / split / "wav.scp").read_text().splitlines()
    return [line.split()[0] for line in lines if line.strip()]


def transcripts(root: Path, split: str) -> dict[str, str]:
    """The text each utterance of ``train`` or ``test`` reads (the split's Kaldi ``text`` file)."""
    out = {}
    for line in (root / split / "text").read_text().splitlines():
        if line.strip():
            utt, text = line.split(maxsplit=1)
            out[utt] = text.strip()
    return out


def wav_paths(root: Path, split: str) -> dict[str, Path]:
    out = {}
    for line in (root / split / "wav.scp").read_text().splitlines():
        if line.strip():
            utt, rel = line.split()[:2]
            out[utt] = root / rel
    return out


def speakers(root: Path, split: str) -> dict[str, str]:
    pairs = (line.split() for line in (root / split / "utt2spk").read_text().splitlines() if line.strip())
    return {utt: spk for utt, spk in pairs}


@dataclass
class Table:
    """Flat arrays of one split: phones, words and utterances (see :func:`load`)."""

    utt_ids: list[str]
    speaker: np.ndarray  # (U,) speaker index
    utt: dict[str, np.ndarray]  # per utterance: labels and utterance evidence
    word: dict[str, np.ndarray]  # per word
    phone: dict[str, np.ndarray]  # per phone (llr: (P, 40))


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def _one(args: tuple[str, str, list[str], list[list[str]]]) -> tuple[str, dict[str, object] | None]:
    utt, path, words, phones = args
    return utt, serialise(Path(path).read_bytes(), words, phones)


def serialise(audio: bytes, words: list[str], phones: list[list[str]]) -> dict[str, object]:
    """The scorer's evidence of ``audio`` against ``words`` said as ``phones``, as JSON-ready values."""
    from learnloop.voice import PronunciationScorer
    from learnloop.voice.gop import SCORING_PHONES

    scorer = PronunciationScorer()
    try:
        ev = scorer.evidence(audio, " ".join(words), pronunciations=phones)
    except Exception as exc:  # reported, counted, never silently dropped
        return {"error": f"{type(exc).__name__}: {exc}"}
    assert len(SCORING_PHONES) == 40
    rows = [(g.word, g.index, g.start, g.end, g.gop, g.loglik, list(g.llr), g.sounds_like) for g in ev.gops]
    segs = [] if ev.alignment is None else [(p.word, p.start, p.end) for p in ev.alignment.phones]
    return {
        "pron": [list(p) for p in ev.pronunciations],
        "rows": rows,
        "segs": segs,
        "match": [float(m) if np.isfinite(m) else -1e9 for m in ev.word_match],
        "speech_frames": ev.speech_frames,
        "n_frames": ev.n_frames,
        "align_ll": None if ev.alignment is None else float(ev.alignment.loglik),
    }


#: share of train utterances paired with a text they do not say (see :func:`mismatched_jobs`)
MISMATCH_SHARE = 0.1


def mismatched_jobs(root: Path, kind: str, seed: int = 0) -> list[tuple[str, str, list[str], list[list[str]], int]]:
    """Train utterances paired with a text they do not say, as the experts would label them.

    ``wrong``: the words of another utterance (every phone missed: accuracy 0, total 0);
    ``extra``: their own words with one word of another utterance inserted at a random
    place (that word's phones missed). Each is a seeded tenth of the train split; the
    last element of a job is the inserted word's position (-1 for ``wrong``).
    """
    labels = json.loads(labels_path(root).read_text())
    paths = wav_paths(root, "train")
    ids = split_ids(root, "train")
    rng = np.random.default_rng({"wrong": seed, "extra": seed + 1}[kind])
    chosen = rng.choice(len(ids), int(MISMATCH_SHARE * len(ids)), replace=False)
    jobs = []
    for j in chosen:
        utt = ids[j]
        own = labels[utt]["words"]
        other = labels[ids[(j + 1 + int(rng.integers(len(ids) - 1))) % len(ids)]]["words"]
        if kind == "wrong":
            words, at = other, -1
        else:
            at = int(rng.integers(len(own) + 1))
            words = [*own[:at], other[int(rng.integers(len(other)))], *own[at:]]
        jobs.append((utt, str(paths[utt]), [w["text"] for w in words], [w["phones"] for w in words], at))
    return jobs


def evidence(root: Path, split: str, *, workers: int = 2) -> dict[str, dict[str, object]]:
    """The evidence of every utterance of ``split`` (computed once, then read from the cache).

    ``split`` is ``train``, ``test``, or ``train-wrong`` / ``train-extra`` (see
    :func:`mismatched_jobs`; each entry then also holds its ``words`` and ``inserted`` position).
    """
    cache = root / ".learnloop" / f"evidence-{split}-v{CACHE_VERSION}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from tqdm.auto import tqdm

    if split in ("train-wrong", "train-extra"):
        full = mismatched_jobs(root, split.split("-")[1])
        jobs = [job[:4] for job in full]
        extra = {job[0]: {"words": job[2], "phones": job[3], "inserted": job[4]} for job in full}
    else:
        labels = json.loads(labels_path(root).read_text())
        paths = wav_paths(root, split)
        jobs = []
        for utt in split_ids(root, split):
            words = labels[utt]["words"]
            jobs.append((utt, str(paths[utt]), [w["text"] for w in words], [w["phones"] for w in words]))
        extra = {}
    out: dict[str, dict[str, object]] = {}
    with ProcessPoolExecutor(workers, initializer=_worker_init) as pool:
        try:
            for utt, found in tqdm(pool.map(_one, jobs, chunksize=8), total=len(jobs), desc=f"evidence {split}"):
                out[utt] = {**found, **extra.get(utt, {})}  # type: ignore[dict-item]
        except KeyboardInterrupt:
            pool.shutdown(cancel_futures=True)
            raise
    cache.parent.mkdir(exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, cache)
    return out


def evidences(root: Path, split: str) -> dict[str, object]:
    """The cached evidence of ``split`` as :class:`~learnloop.voice.evidence.Evidence` objects."""
    return {utt: to_evidence(utt, raw) for utt, raw in evidence(root, split).items()}


def to_evidence(utt: str, raw: dict[str, object]) -> object:
    """An :class:`~learnloop.voice.evidence.Evidence` back from :func:`serialise`'s values."""
    from learnloop.voice.alignment import AlignedPhone, Alignment
    from learnloop.voice.evidence import Evidence
    from learnloop.voice.gop import PhoneGop

    if "error" in raw:
        raise RuntimeError(f"{utt}: {raw['error']}")
    pron = [tuple(p) for p in raw["pron"]]  # type: ignore[attr-defined]
    gops = tuple(
        PhoneGop(pron[w][i], w, i, s, e, gop, like, ll, tuple(llr))
        for w, i, s, e, gop, ll, llr, like in raw["rows"]  # type: ignore[attr-defined]
    )
    by_start = {g.start: g for g in gops}
    phones = []
    for w, s, e in raw["segs"]:  # type: ignore[attr-defined]
        g = by_start.get(s) if w >= 0 else None
        name, index = (g.phone, g.index) if g is not None else ("SIL", 0)
        phones.append(AlignedPhone(name, w, index, s, e, 0.0, -1))
    alignment = None
    if raw["align_ll"] is not None:
        alignment = Alignment(tuple(phones), (0,) * len(pron), float(raw["align_ll"]), int(raw["n_frames"]))  # type: ignore[arg-type]
    return Evidence(
        tuple(pron),
        alignment,
        gops,
        tuple(-np.inf if m <= -1e9 else m for m in raw["match"]),  # type: ignore[attr-defined]
        int(raw["speech_frames"]),  # type: ignore[call-overload]
        int(raw["n_frames"]),  # type: ignore[call-overload]
    )


def phone_labels(labels: dict[str, dict], utt: str, ev: object) -> np.ndarray:
    """The experts' accuracy of each aligned phone of ``ev`` (its ``gops`` order)."""
    words = labels[utt]["words"]
    return np.array([words[g.word]["phones-accuracy"][g.index] for g in ev.gops], dtype=np.float64)  # type: ignore[attr-defined]


def load_labels(root: Path) -> dict[str, dict]:
    return json.loads(labels_path(root).read_text())


def speaker_folds(root: Path, split: str, utts: list[str], k: int = 5, seed: int = 0) -> np.ndarray:
    """A fold number per utterance, speakers kept whole (seeded)."""
    spk = speakers(root, split)
    names = sorted({spk[u] for u in utts})
    order = np.random.default_rng(seed).permutation(len(names))
    fold = {names[j]: i % k for i, j in enumerate(order)}
    return np.array([fold[spk[u]] for u in utts])
