"""Labelled evaluation of the pronunciation scorer on espeak-ng speech.

For every word and voice, espeak-ng says the word's dictionary pronunciation
twice: once as is, once with one phone replaced by another phone of the same
class (vowel for vowel, consonant for consonant), chosen by a seeded random
generator.  The scorer aligns both renditions to the dictionary pronunciation;
the replaced phone is a *substituted* example, the same phone in the correct
rendition a *correct* one.  Reported:

- AUC of substituted-vs-correct detection by the calibrated phone score (and by
  the raw GOP alone), on words not used for calibration;
- how often ``sounds_like`` names the substitute, or one of its class;
- the real-time factor of ``PronunciationScorer.score`` on one core (decode,
  features, alignment, GOP), with the model load time reported separately.

Run:  .venv/bin/python benchmarks/bench_voice_gop.py   (about two minutes)
Needs espeak-ng (scripts/system-deps installs it).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core, before numpy loads BLAS

import argparse
import random
import time
from dataclasses import dataclass

import numpy as np

from learnloop.voice import PronunciationScorer
from learnloop.voice.alignment import align
from learnloop.voice.gop import phone_gops
from learnloop.voice.phonemes import CONSONANTS, VOWELS
from learnloop.voice.synthesis import espeak_phonemes, synthesize

VOICES = ("en-us", "en-us+f2", "en-us+m3", "en-us+klatt")

# Words used only to fit the calibration (benchmarks/calibrate_voice_gop.py).
CALIBRATION_WORDS = """
cat dog house water apple green table window garden music paper river friend
mother number people school little morning yellow chicken summer butter pencil
rabbit orange monkey sister doctor kitchen letter bottle teacher basket
button candle dinner flower hammer jacket ladder market napkin pocket
""".split()

# Words used only for evaluation.
EVALUATION_WORDS = """
bread chair cloud dream fish glass grape horse juice knife lamp milk mouse
night plate queen shirt sheep shoe smile snake spoon stone sugar thumb tiger
train truck voice wheel zebra bridge candy castle cookie dragon engine forest
guitar island lemon magnet nurse ocean pillow planet puzzle rocket salad
shadow silver soccer spider sweater ticket tomato turtle velvet wagon winter
camera banana holiday elephant umbrella computer potato medicine animal
family library""".split()


@dataclass(frozen=True)
class Example:
    voice: str
    word: str
    phone: str
    substitute: str  # equal to phone for a correct example
    gop: float
    frame_gop: float
    sounds_like: str
    correct: bool


def labelled_examples(words: list[str], voices: tuple[str, ...] = VOICES, *, seed: int = 7) -> list[Example]:
    scorer = PronunciationScorer()
    model, lexicon = scorer.model, scorer.lexicon
    rng = random.Random(seed)
    vowels, consonants = sorted(VOWELS), sorted(CONSONANTS)
    out: list[Example] = []
    for voice in voices:
        for word in words:
            phones = list(lexicon.pronunciations(word)[0])
            i = rng.randrange(len(phones))
            pool = vowels if phones[i] in VOWELS else consonants
            sub = rng.choice([p for p in pool if p != phones[i]])
            swapped = phones.copy()
            swapped[i] = sub
            for said, correct in ((phones, True), (swapped, False)):
                utt = scorer._prepare(synthesize(espeak_phonemes(said), voice=voice))
                alignment = align(model, utt.features, [[tuple(phones)]])
                if alignment is None:
                    continue
                g = phone_gops(model, utt.features, alignment)[i]
                out.append(Example(voice, word, phones[i], said[i], g.gop, g.frame_gop, g.sounds_like, correct))
    return out


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    p = np.asarray(positive, float)[:, None]
    n = np.asarray(negative, float)[None, :]
    return float(np.mean(p > n) + 0.5 * np.mean(p == n))


def real_time_factor(phrases: list[str], voice: str = "en-us") -> tuple[float, float, float]:
    """(model load seconds, scoring seconds, audio seconds) over the phrases."""
    scorer = PronunciationScorer()
    t0 = time.perf_counter()
    _ = scorer.model, scorer.lexicon.pronunciations("warm")
    load = time.perf_counter() - t0
    clips = [synthesize(p, voice=voice) for p in phrases]
    audio_s = sum((len(c) - 44) / 2 / 22050 for c in clips)
    scorer.score(clips[0], phrases[0])  # warm caches
    t0 = time.perf_counter()
    for clip, phrase in zip(clips, phrases):
        scorer.score(clip, phrase)
    return load, time.perf_counter() - t0, audio_s


RTF_PHRASES = [
    "the quick brown fox jumps over the lazy dog",
    "she sells sea shells by the sea shore",
    "I would like a cup of coffee please",
    "learning a new language takes time and practice",
    "where is the nearest train station",
    "thank you very much for your help",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--voices", default=",".join(VOICES))
    args = parser.parse_args()
    voices = tuple(args.voices.split(","))
    from learnloop.voice.calibration import CALIBRATION

    load, spent, audio_s = real_time_factor(RTF_PHRASES)  # first: the model load is timed cold
    t0 = time.perf_counter()
    examples = labelled_examples(EVALUATION_WORDS, voices)
    elapsed = time.perf_counter() - t0
    ok = [e for e in examples if e.correct]
    bad = [e for e in examples if not e.correct]
    score = lambda es: CALIBRATION.probability([e.gop for e in es], [e.frame_gop for e in es])  # noqa: E731
    print(f"evaluation: {len(EVALUATION_WORDS)} words x {len(voices)} voices ({', '.join(voices)}), "
          f"{len(ok)} correct and {len(bad)} substituted phones, {elapsed:.0f} s")
    print(f"AUC calibrated score: {auc(score(ok), score(bad)):.3f}")
    print(f"AUC raw GOP:          {auc([e.gop for e in ok], [e.gop for e in bad]):.3f}")
    for v in voices:
        o = [e for e in ok if e.voice == v]
        b = [e for e in bad if e.voice == v]
        print(f"  {v:12s} AUC {auc(score(o), score(b)):.3f}")
    s_ok = np.rint(100 * score(ok))
    s_bad = np.rint(100 * score(bad))
    print(f"correct phones: median score {np.median(s_ok):.0f}, {np.mean(s_ok >= 80):.0%} >= 80")
    print(f"substituted:    median score {np.median(s_bad):.0f}, {np.mean(s_bad < 60):.0%} < 60")
    same = np.mean([e.sounds_like == e.substitute for e in bad])
    cls = np.mean([(e.sounds_like in VOWELS) == (e.substitute in VOWELS) and e.sounds_like != e.phone for e in bad])
    print(f"sounds_like names the substitute: {same:.0%}; another phone of its class: {cls:.0%}")
    print(f"model load: {load:.2f} s; scoring {audio_s:.1f} s of audio took {spent:.2f} s: RTF {spent / audio_s:.3f}")


if __name__ == "__main__":
    main()
