"""The substitution set: espeak-ng minimal pairs of first-language error patterns, for fitting and measuring.

Each *pair* is a word said as its dictionary pronunciation and the same word said
with one edit a learner of English commonly makes (``learnloop.voice.confusions``):

- ``sub``: one phone replaced by a near neighbour (``IH``/``IY``, ``CH``/``SH``,
  ``G``/``K``, ``V``/``W``, ``TH``/``S``, …), the patterns typical of Mandarin,
  Spanish, Hindi and Arabic speakers;
- ``del``: one phone left out (a final ``T``, ``D``, ``S``, an initial ``HH``);
- ``ins``: a vowel added (``AH`` after a final consonant, ``EH``/``IH`` before an
  initial ``S`` cluster, ``IH`` inside an initial cluster).

The pairs are listed in ``substitution_set.tsv`` (committed; the audio is not):
``word``, its dictionary ``phones``, the ``said`` phones, the ``kind``, the ``at``
position of the edited canonical phone (for an insertion, the canonical phone next
to the added vowel), the ``target`` phone there and what was ``heard`` in its
place (the substitute, ``#`` for a deletion, the phone itself followed by the
vowel for an insertion), the first languages whose pattern it is, and the
``split``: ``fit`` or ``held-out``, by word (a third of the words, by a hash of
the word, are held out; words of ``_espeak_labelled``'s calibration list, which
the scoring model learns from, are always in ``fit``). Substitutions that
espeak-ng realises exactly as the correct word (``realised_phonemes``) are not
listed.

Four voices (``VOICES``: ``en-us``, ``en-us+f2``, ``en-us+m3``, ``en-us+klatt``)
say every word right once and every pair's edit once, at 160 words per minute,
with the stress of the dictionary pronunciation; the scorer aligns each
rendition to the dictionary phones.

    python benchmarks/substitution_set.py SO762_DIR --make-list   # writes substitution_set.tsv
    python benchmarks/substitution_set.py SO762_DIR               # renders and caches the evidence

The pool of words the pairs are drawn from (:func:`word_pool`) is the vocabulary of
speechocean762's texts and the word lists of ``bench_voice_gop.py``: 2,565 words of 2
to 9 phones in the dictionary. ``--make-list`` also renders the evidence.
The evidence is cached under ``SO762_DIR/.learnloop/`` like the corpus' own
(``_so762.py``); ``tools/fit/fit_voice_real.py`` learns from the ``fit`` part and
``bench_voice_substitutions.py`` measures on the ``held-out`` part.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

LIST = Path(__file__).resolve().parent / "substitution_set.tsv"
VOICES = ("en-us", "en-us+f2", "en-us+m3", "en-us+klatt")
CACHE_VERSION = 1
#: words per substitution pattern, per deletion pattern and per insertion pattern
PER_SUB, PER_DEL, PER_INS = 6, 6, 10
HELD_OUT_SHARE = 3  # one word in three


@dataclass(frozen=True)
class Pair:
    key: str
    word: str
    phones: tuple[str, ...]
    said: tuple[str, ...]
    kind: str  # sub, del, ins
    at: int
    target: str
    heard: str
    l1: tuple[str, ...]
    split: str


def held_out(word: str) -> bool:
    from bench_voice_gop import CALIBRATION_WORDS

    return word not in CALIBRATION_WORDS and zlib.crc32(word.encode()) % HELD_OUT_SHARE == 0


def word_pool(root: Path) -> list[str]:
    """The words the committed list was drawn from: the vocabulary of speechocean762's texts
    (``train/text``, ``test/text``) and the word lists of ``bench_voice_gop.py``, those of 2 to 9
    phones in the dictionary (only the words' spellings are read, no label and no audio)."""
    from bench_voice_gop import CALIBRATION_WORDS, EVALUATION_WORDS

    from learnloop.voice.lexicon import Lexicon

    lexicon = Lexicon()
    words = set(CALIBRATION_WORDS) | set(EVALUATION_WORDS)
    for split in ("train", "test"):
        for line in (root / split / "text").read_text().splitlines():
            words |= {w.lower() for w in line.split()[1:]}
    return sorted(
        w for w in words if w.isalpha() and lexicon.in_dictionary(w) and 2 <= len(lexicon.pronunciations(w)[0]) <= 9
    )


def make_list(pool: list[str], seed: int = 31) -> list[Pair]:
    """Pairs drawn from ``pool`` (seeded; see the module docstring)."""
    from learnloop.voice.confusions import DELETIONS, INSERTIONS, L1_PATTERNS, first_languages_of
    from learnloop.voice.lexicon import Lexicon
    from learnloop.voice.phonemes import CONSONANTS
    from learnloop.voice.synthesis import default_stress, espeak_phonemes, realised_phonemes

    lexicon = Lexicon()
    entries = {w: tuple(lexicon.pronunciations(w)[0]) for w in sorted(set(pool)) if lexicon.in_dictionary(w)}
    known = {p for w in entries for p in lexicon.pronunciations(w)}
    rng = random.Random(seed)
    uses: Counter[str] = Counter()
    out: list[Pair] = []

    def heard(phones: tuple[str, ...], said: tuple[str, ...]) -> bool:
        stress = default_stress(phones)
        return realised_phonemes(espeak_phonemes(phones, stress=stress)) != realised_phonemes(
            espeak_phonemes(said, stress=stress)
        )

    def take(
        cands: list[tuple[str, int]],
        per: int,
        edit: Callable[[str, int], Pair | None],
        is_word: Callable[[tuple[str, int]], bool] = lambda c: False,
    ) -> None:
        # fewest uses first, true minimal pairs (the edit is itself a word) first among them
        rng.shuffle(cands)
        cands.sort(key=lambda c: (uses[c[0]], not is_word(c)))
        taken = 0
        for word, at in cands:
            if taken >= per or uses[word] >= 2:
                continue
            pair = edit(word, at)
            if pair is None:
                continue
            out.append(pair)
            uses[word] += 1
            taken += 1

    subs = sorted({pair for pairs in L1_PATTERNS.values() for pair in pairs})
    for target, sub in subs:
        cands = [(w, i) for w, ph in entries.items() for i, p in enumerate(ph) if p == target]

        def edit_is_word(c: tuple[str, int], sub: str = sub) -> bool:
            ph = entries[c[0]]
            return (*ph[: c[1]], sub, *ph[c[1] + 1 :]) in known

        def make_sub(word: str, at: int, target: str = target, sub: str = sub) -> Pair | None:
            ph = entries[word]
            said = (*ph[:at], sub, *ph[at + 1 :])
            if not heard(ph, said):
                return None
            l1 = tuple(sorted(first_languages_of(target, sub)))
            return Pair("", word, ph, said, "sub", at, target, sub, l1, "")

        take(cands, PER_SUB, make_sub, edit_is_word)

    for l1, phone, where in DELETIONS:
        cands = [(w, len(ph) - 1 if where == "final" else 0) for w, ph in entries.items() if len(ph) >= 3]
        cands = [(w, i) for w, i in cands if entries[w][i] == phone]

        def make_del(word: str, at: int, l1: str = l1) -> Pair | None:
            ph = entries[word]
            return Pair("", word, ph, (*ph[:at], *ph[at + 1 :]), "del", at, ph[at], "#", (l1,), "")

        take(cands, PER_DEL, make_del)

    for l1, vowel, where in INSERTIONS:
        if where == "final":
            cands = [(w, len(ph) - 1) for w, ph in entries.items() if ph[-1] in CONSONANTS]
        elif where == "prothesis":
            cands = [(w, 0) for w, ph in entries.items() if ph[0] == "S" and ph[1] in CONSONANTS]
        else:
            cands = [(w, 0) for w, ph in entries.items() if ph[0] in CONSONANTS and ph[1] in CONSONANTS]

        def make_ins(word: str, at: int, l1: str = l1, vowel: str = vowel, where: str = where) -> Pair | None:
            ph = entries[word]
            cut = at if where == "prothesis" else at + 1
            said = (*ph[:cut], vowel, *ph[cut:])
            return Pair("", word, ph, said, "ins", at, ph[at], f"{ph[at]}+{vowel}", (l1,), "")

        take(cands, PER_INS, make_ins)

    keyed = []
    for n, p in enumerate(out):
        split = "held-out" if held_out(p.word) else "fit"
        keyed.append(Pair(f"{p.word}:{n}", p.word, p.phones, p.said, p.kind, p.at, p.target, p.heard, p.l1, split))
    return keyed


def write_list(pairs: list[Pair], path: Path = LIST) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["key", "word", "phones", "said", "kind", "at", "target", "heard", "l1", "split"])
        for p in pairs:
            w.writerow(
                [
                    p.key,
                    p.word,
                    " ".join(p.phones),
                    " ".join(p.said),
                    p.kind,
                    p.at,
                    p.target,
                    p.heard,
                    ",".join(p.l1),
                    p.split,
                ]
            )


def load_list(path: Path = LIST) -> list[Pair]:
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [
        Pair(
            r["key"], r["word"], tuple(r["phones"].split()), tuple(r["said"].split()), r["kind"], int(r["at"]),
            r["target"], r["heard"], tuple(x for x in r["l1"].split(",") if x), r["split"],
        )
        for r in rows
    ]  # fmt: skip


def _render(job: tuple[str, str, tuple[str, ...], tuple[str, ...], str]) -> tuple[str, dict[str, object]]:
    from _so762 import serialise

    from learnloop.voice.synthesis import espeak_phonemes, synthesize

    key, voice, phones, said, word = job
    audio = synthesize(espeak_phonemes(said, stress=_stress(phones, said)), voice=voice)
    return key, serialise(audio, [word], [list(phones)])


def _stress(phones: tuple[str, ...], said: tuple[str, ...]) -> int:
    """The dictionary pronunciation's stressed vowel, counted in ``said`` (an added vowel shifts it)."""
    from learnloop.voice.phonemes import VOWELS
    from learnloop.voice.synthesis import default_stress

    stress = default_stress(list(phones))
    if len(said) <= len(phones):
        vowels_said = sum(p in VOWELS for p in said)
        vowels = sum(p in VOWELS for p in phones)
        return min(stress, max(vowels_said - 1, 0)) if vowels_said < vowels else stress
    # an insertion: count the added vowel if it comes before the stressed one
    at = next(i for i in range(len(said)) if i >= len(phones) or said[i] != phones[i])
    stressed_at = [i for i, p in enumerate(phones) if p in VOWELS][stress] if any(p in VOWELS for p in phones) else 0
    return stress + 1 if at <= stressed_at and said[at] in VOWELS else stress


def evidence(root: Path, *, workers: int = 2) -> dict[str, dict[str, object]]:
    """``voice|word|ok`` and ``voice|pair key`` -> the serialised evidence of that rendition (cached)."""
    listed = zlib.crc32(LIST.read_bytes())  # a new list is rendered anew
    cache = root / ".learnloop" / f"evidence-substitutions-v{CACHE_VERSION}-{listed:08x}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from concurrent.futures import ProcessPoolExecutor

    from _so762 import _worker_init
    from tqdm.auto import tqdm

    pairs = load_list()
    jobs = []
    words = {p.word: p.phones for p in pairs}
    for voice in VOICES:
        jobs += [(f"{voice}|{w}|ok", voice, ph, ph, w) for w, ph in sorted(words.items())]
        jobs += [(f"{voice}|{p.key}", voice, p.phones, p.said, p.word) for p in pairs]
    out: dict[str, dict[str, object]] = {}
    with ProcessPoolExecutor(workers, initializer=_worker_init) as pool:
        for key, raw in tqdm(pool.map(_render, jobs, chunksize=8), total=len(jobs), desc="evidence substitutions"):
            out[key] = raw
    cache.parent.mkdir(exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, cache)
    return out


@dataclass(frozen=True)
class Rendition:
    """One rendition of the set: the pair (None: a word said right), its voice and its evidence."""

    pair: Pair | None
    word: str
    voice: str
    evidence: object  # learnloop.voice.evidence.Evidence
    split: str


def renditions(root: Path, split: str | None = None) -> list[Rendition]:
    """Every rendition whose alignment covers all its phones (``split``: ``fit`` or ``held-out`` only)."""
    import _so762

    raw = evidence(root)
    pairs = load_list()
    split_of = {p.word: p.split for p in pairs}
    by_key = {p.key: p for p in pairs}
    out = []
    for key, value in raw.items():
        if "error" in value:
            continue
        voice, rest = key.split("|", 1)
        pair = None if rest.endswith("|ok") else by_key.get(rest)
        word = rest.split("|")[0] if pair is None else pair.word
        if split is not None and split_of.get(word) != split:
            continue
        ev = _so762.to_evidence(key, value)
        if len(ev.gops) != len(ev.pronunciations[0]):  # type: ignore[attr-defined]
            continue
        out.append(Rendition(pair, word, voice, ev, split_of[word]))
    return out


def summary(pairs: list[Pair]) -> str:
    kinds = Counter((p.kind, p.split) for p in pairs)
    l1 = Counter(x for p in pairs for x in p.l1)
    classes: defaultdict[str, int] = defaultdict(int)
    from learnloop.voice.phonemes import VOWELS

    for p in pairs:
        if p.kind == "sub":
            classes["vowel" if p.target in VOWELS else "consonant"] += 1
    words = {p.word for p in pairs}
    return (
        f"{len(pairs)} pairs over {len(words)} words: "
        + ", ".join(f"{k} {s} {n}" for (k, s), n in sorted(kinds.items()))
        + f"; substitutions of vowels {classes['vowel']}, consonants {classes['consonant']}; by first language "
        + ", ".join(f"{k} {n}" for k, n in sorted(l1.items()))
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path, nargs="?", help="speechocean762 directory (the evidence cache lives there)")
    ap.add_argument("--make-list", action="store_true", help="draw the pairs from the word pool of SO762_DIR")
    args = ap.parse_args()
    if args.make_list:
        if args.root is None:
            ap.error("--make-list reads the vocabulary of SO762_DIR's texts")
        pairs = make_list(word_pool(args.root))
        write_list(pairs)
        print(f"wrote {LIST}: {summary(pairs)}")
    if args.root:
        print(summary(load_list()))
        found = evidence(args.root)
        print(f"{len(found)} renditions cached ({sum('error' in v for v in found.values())} failed)")


if __name__ == "__main__":
    main()
