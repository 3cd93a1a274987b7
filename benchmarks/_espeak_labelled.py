"""Labelled synthetic speech for the voice scoring model: espeak-ng words said right and with one
phone substituted (the calibration words of ``bench_voice_gop.py``, never its evaluation words).

Each of the calibration words is said by each voice once as its dictionary pronunciation (every
phone labelled 2, correct) and twice with one phone replaced by another of its class, chosen and
checked as ``bench_voice_gop.substitutions`` does (the replaced phone labelled 0, the others 2). The
evidence is cached under the speechocean762 cache directory.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

CACHE_VERSION = 1


def _render(job: tuple[str, str, list[str], int, str]) -> tuple[str, dict[str, object]]:
    from _so762 import serialise

    from learnloop.voice.synthesis import default_stress, espeak_phonemes, synthesize

    key, voice, phones, at, sub = job
    said = list(phones) if at < 0 else [*phones[:at], sub, *phones[at + 1 :]]
    audio = synthesize(espeak_phonemes(said, stress=default_stress(phones)), voice=voice)
    raw = serialise(audio, [key.split(":")[1]], [phones])
    raw["substituted"] = at
    return key, raw


def jobs() -> list[tuple[str, str, list[str], int, str]]:
    """Every rendition: (``voice:word:k``, voice, dictionary phones, substituted position or -1,
    the substitute), drawn as the calibration script draws them (seeded; espeak-ng is asked
    whether each substitution is heard)."""
    from bench_voice_gop import CALIBRATION_WORDS, VOICES, substitutions

    from learnloop.voice import PronunciationScorer

    lexicon = PronunciationScorer().lexicon
    rng = random.Random(11)  # the calibration script's seed
    out = []
    for voice in VOICES:
        for word in CALIBRATION_WORDS:
            phones = list(lexicon.pronunciations(word)[0])
            subs = substitutions(phones, rng, count=2, voice=voice, key=f"11:{voice}:{word}")
            out.append((f"{voice}:{word}:0", voice, phones, -1, ""))
            out += [(f"{voice}:{word}:{k + 1}", voice, phones, i, sub) for k, (i, sub) in enumerate(subs)]
    return out


def evidence(root: Path, *, workers: int = 2) -> dict[str, dict[str, object]]:
    """``voice:word:k`` -> the serialised evidence of that rendition and its ``substituted`` position (-1: none)."""
    cache = root / ".learnloop" / f"evidence-espeak-v{CACHE_VERSION}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from concurrent.futures import ProcessPoolExecutor

    from _so762 import _worker_init
    from tqdm.auto import tqdm

    todo = jobs()
    out: dict[str, dict[str, object]] = {}
    with ProcessPoolExecutor(workers, initializer=_worker_init) as pool:
        for key, raw in tqdm(pool.map(_render, todo, chunksize=8), total=len(todo), desc="evidence espeak-ng"):
            out[key] = raw
    cache.parent.mkdir(exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, cache)
    return out
