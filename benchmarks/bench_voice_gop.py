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

Labels (the default protocol):

- both renditions carry the stress of the dictionary pronunciation, so that
  exactly one phone differs (left to itself, espeak_phonemes would move the
  stress when a word's first vowel turns into or out of ``AH``);
- a substitution must be heard: when espeak-ng realises the substituted word
  exactly as the correct one (``N`` before ``K`` is spoken ``NG``, final ``IH``
  is spoken ``IY``), or the pair is ``T``/``D`` where espeak-ng flaps the ``T``
  (American English does not contrast them there), the substitute is drawn
  again from the same class by a second seeded generator.  The first
  generator's draws, and so every other example, stay as they were.

``--original-protocol`` turns both rules off (the labels of the first version).

Run:  .venv/bin/python benchmarks/bench_voice_gop.py   (about a minute)
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
from learnloop.voice.gop import PhoneGop, phone_gops
from learnloop.voice.lexicon import tokenize
from learnloop.voice.phonemes import CONSONANTS, VOWELS
from learnloop.voice.synthesis import default_stress, espeak_phonemes, realised_phonemes, synthesize

VOICES = ("en-us", "en-us+f2", "en-us+m3", "en-us+klatt")

# Words used only to fit the calibration (tools/fit/calibrate_voice_gop.py).
CALIBRATION_WORDS = """
cat dog house water apple green table window garden music paper river friend
mother number people school little morning yellow chicken summer butter pencil
rabbit orange monkey sister doctor kitchen letter bottle teacher basket
button candle dinner flower hammer jacket ladder market napkin pocket
baby ball bank beach bear bed bell bird blanket boat book boot bowl box boy
brother brush bubble bucket cake camel car carpet carrot chain cheese cherry
circle clock coat coffee corn cotton cow crown cup curtain desk diamond dinosaur
dish door dragonfly drum duck eagle ear egg eye face farmer feather finger fire
flag floor fork fox frog giraffe goat gold grass hair hand hat heart helmet hill
honey hook horn jelly key king kite ladybug leaf leg lion lock machine map mask
moon mountain mouth nail neck needle nest net nose note oven owl paint palace
pan parrot party pear pen pepper piano pig pin pipe pizza plane pond pumpkin
purple rain ring road robot roof rope rose ruler sand seed shell ship shop
skirt sky sleep snow sock soup star station stick storm street sun swan sword
tail tea tent thread tooth towel tower toy tree valley vase village violin
wall watch whale wind wing wolf wood worm yard year zipper
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

assert not set(CALIBRATION_WORDS) & set(EVALUATION_WORDS), "calibration and evaluation words must differ"

# Connected speech for the pair statistics: two calibration words in a carrier sentence.
SENTENCE_TEMPLATES = (
    "the {0} is on the {1}",
    "I have a {0} and a {1}",
    "she gave him the {0}",
    "we saw a {0} near the {1}",
    "his {0} was in the {1}",
    "they bought a new {0} last week",
    "put the {0} next to the {1}",
    "a {0} can be quite useful",
    "it was not a {0} but a {1}",
    "he likes the {0} more than the {1}",
    "our {0} is bigger than your {1}",
    "did they find the {0}",
    "there is no {0} in this {1}",
    "I think the {0} is broken",
    "she should bring a {0}",
    "let him hold the {0} for a minute",
)
SENTENCE_SPEEDS = (150, 185)  # words per minute; the word lists are said at 160


def calibration_sentences(count: int, seed: int) -> list[tuple[str, tuple[str, ...]]]:
    """``count`` carrier sentences of calibration words: (sentence, the calibration words in it)."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        template = SENTENCE_TEMPLATES[k % len(SENTENCE_TEMPLATES)]
        words = tuple(rng.sample(CALIBRATION_WORDS, 2))[: template.count("{")]
        out.append((template.format(*words), words))
    return out


def _carrier_words() -> set[str]:
    return {w for t in SENTENCE_TEMPLATES for w in t.replace("{0}", " ").replace("{1}", " ").split()}


assert not _carrier_words() & set(EVALUATION_WORDS), "sentences must not hold evaluation words"


@dataclass(frozen=True)
class Example:
    voice: str
    word: str
    phone: str
    substitute: str  # equal to phone for a correct example
    gop: float
    llr: tuple[float, ...]
    sounds_like: str
    correct: bool
    accuracy: float = float("nan")  # the scoring model's predicted expert accuracy (0-2), when judged


def _heard(phones: list[str], i: int, sub: str, voice: str) -> bool:
    """Whether espeak-ng's rendition with ``phones[i]`` replaced by ``sub`` differs as a phone should."""
    stress = default_stress(phones)
    swapped = [*phones[:i], sub, *phones[i + 1 :]]
    said = realised_phonemes(espeak_phonemes(phones, stress=stress), voice=voice)
    wrong = realised_phonemes(espeak_phonemes(swapped, stress=stress), voice=voice)
    if said == wrong:
        return False
    flap = "t#"
    return not ({phones[i], sub} == {"T", "D"} and said.count(flap) != wrong.count(flap))


def substitutions(
    phones: list[str], rng: random.Random, *, count: int, voice: str, key: str, corrected: bool = True
) -> list[tuple[int, str]]:
    """``count`` (position, substitute) pairs for one word and voice (see the module docstring)."""
    vowels, consonants = sorted(VOWELS), sorted(CONSONANTS)
    out = []
    for k in range(count):
        i = rng.randrange(len(phones))
        pool = [p for p in (vowels if phones[i] in VOWELS else consonants) if p != phones[i]]
        sub = rng.choice(pool)
        if corrected and not _heard(phones, i, sub, voice):
            again = random.Random(f"{key}:{k}")
            others = [p for p in pool if p != sub]
            again.shuffle(others)
            sub = next((p for p in others if _heard(phones, i, p, voice)), sub)
        out.append((i, sub))
    return out


def labelled_examples(
    words: list[str],
    voices: tuple[str, ...] = VOICES,
    *,
    seed: int = 7,
    per_word: int = 1,
    corrected: bool = True,
    reference: list[tuple[str, str, PhoneGop]] | None = None,
    judge: bool = False,
) -> list[Example]:
    """Correct and substituted examples.

    ``reference`` collects (voice, word, phone GOP) of every phone of the correct renditions.
    """
    scorer = PronunciationScorer()
    model, lexicon = scorer.model, scorer.lexicon
    rng = random.Random(seed)
    out: list[Example] = []

    def gops_of(said: list[str], phones: list[str]) -> list[PhoneGop] | None:
        stress = default_stress(phones) if corrected else None
        utt = scorer._prepare(synthesize(espeak_phonemes(said, stress=stress), voice=voice))
        alignment = align(model, utt.features, [[tuple(phones)]])
        return None if alignment is None else phone_gops(model, utt.features, alignment)

    def judged(said: list[str], phones: list[str]) -> np.ndarray | None:
        """The scoring model's phone accuracies of the word said as ``said`` (``judge``: with the model)."""
        if not judge:
            return None
        stress = default_stress(phones) if corrected else None
        audio = synthesize(espeak_phonemes(said, stress=stress), voice=voice)
        ev = scorer.evidence(audio, word, pronunciations=[phones])
        if len(ev.gops) != len(phones):
            return None
        return scorer.assessor.judge(ev).phone_accuracy

    for voice in voices:
        for word in words:
            phones = list(lexicon.pronunciations(word)[0])
            subs = substitutions(
                phones, rng, count=per_word, voice=voice, key=f"{seed}:{voice}:{word}", corrected=corrected
            )
            good = gops_of(phones, phones)
            good_acc = judged(phones, phones)
            if good is not None and reference is not None:
                reference.extend((voice, word, g) for g in good)
            for i, sub in subs:
                swapped = [*phones[:i], sub, *phones[i + 1 :]]
                bad, bad_acc = gops_of(swapped, phones), judged(swapped, phones)
                for gops, acc, said, correct in ((good, good_acc, phones[i], True), (bad, bad_acc, sub, False)):
                    if gops is None:
                        continue
                    g = gops[i]
                    a = float("nan") if acc is None else float(acc[i])
                    out.append(Example(voice, word, phones[i], said, g.gop, g.llr, g.sounds_like, correct, a))
    return out


def sentence_reference(
    voices: tuple[str, ...] = VOICES, *, per_speed: int = 32
) -> list[tuple[str, tuple[str, ...], PhoneGop]]:
    """(voice, calibration words, phone GOP) of every phone of correctly said carrier sentences.

    Each voice says ``per_speed`` sentences at each of ``SENTENCE_SPEEDS``; the
    scorer's own path (all pronunciation variants) aligns them.
    """
    scorer = PronunciationScorer()
    model, lexicon = scorer.model, scorer.lexicon
    out = []
    for speed in SENTENCE_SPEEDS:
        for voice in voices:
            for sentence, words in calibration_sentences(per_speed, seed=speed):
                utt = scorer._prepare(synthesize(sentence, voice=voice, speed=speed))
                variants = [lexicon.pronunciations(t.key) for t in tokenize(sentence)]
                alignment = align(model, utt.features, variants)
                if alignment is not None:
                    out.extend((voice, words, g) for g in phone_gops(model, utt.features, alignment))
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
    parser.add_argument("--original-protocol", action="store_true", help="labels without the two rules")
    parser.add_argument(
        "--held-out-voice",
        action="store_true",
        help="also refit the calibration without each voice in turn and score that voice (slower)",
    )
    args = parser.parse_args()
    voices = tuple(args.voices.split(","))
    from learnloop.voice.calibration import CALIBRATION

    load, spent, audio_s = real_time_factor(RTF_PHRASES)  # first: the model load is timed cold
    t0 = time.perf_counter()
    examples = labelled_examples(EVALUATION_WORDS, voices, corrected=not args.original_protocol, judge=True)
    elapsed = time.perf_counter() - t0
    ok = [e for e in examples if e.correct]
    bad = [e for e in examples if not e.correct]

    def score(es: list[Example]) -> np.ndarray:
        return CALIBRATION.probability([CALIBRATION.normalised_gop(e.phone, e.llr) for e in es])

    protocol = "original" if args.original_protocol else "default"
    print(
        f"evaluation ({protocol} protocol): {len(EVALUATION_WORDS)} words x {len(voices)} voices "
        f"({', '.join(voices)}), {len(ok)} correct and {len(bad)} substituted phones, {elapsed:.0f} s"
    )
    print(f"AUC calibrated score: {auc(score(ok), score(bad)):.3f}")
    print(f"AUC raw GOP:          {auc([e.gop for e in ok], [e.gop for e in bad]):.3f}")
    judged_ok = [e for e in ok if np.isfinite(e.accuracy)]
    judged_bad = [e for e in bad if np.isfinite(e.accuracy)]
    model_ok = np.array([e.accuracy for e in judged_ok])
    model_bad = np.array([e.accuracy for e in judged_bad])
    bands = PronunciationScorer().assessor.bands
    print(
        f"AUC scoring model (the product's phone score): {auc(model_ok, model_bad):.3f} "
        f"({len(judged_ok)} correct, {len(judged_bad)} substituted judged); correct phones < 60: "
        f"{np.mean(bands.phone_score(model_ok) < 60):.1%}, substituted < 60: {np.mean(bands.phone_score(model_bad) < 60):.0%}"
    )
    for v in voices:
        o = np.array([e.accuracy for e in judged_ok if e.voice == v])
        b = np.array([e.accuracy for e in judged_bad if e.voice == v])
        print(f"  {v:12s} scoring-model AUC {auc(o, b):.3f}")
    for v in voices:
        o = [e for e in ok if e.voice == v]
        b = [e for e in bad if e.voice == v]
        print(f"  {v:12s} AUC {auc(score(o), score(b)):.3f}")
    s_ok = np.rint(100 * score(ok))
    s_bad = np.rint(100 * score(bad))
    print(
        f"correct phones: median score {np.median(s_ok):.0f}, {np.mean(s_ok >= 80):.0%} >= 80, "
        f"{np.mean(s_ok < 60):.1%} < 60 (false alarms)"
    )
    print(f"substituted:    median score {np.median(s_bad):.0f}, {np.mean(s_bad < 60):.0%} < 60")
    like = [CALIBRATION.sounds_like(e.phone, e.llr) for e in bad]  # as the scorer reports it
    same = np.mean([k == e.substitute for k, e in zip(like, bad)])
    cls = np.mean([(k in VOWELS) == (e.substitute in VOWELS) and k != e.phone for k, e in zip(like, bad)])
    print(f"sounds_like names the substitute: {same:.0%}; another phone of its class: {cls:.0%}")
    print(f"model load: {load:.2f} s; scoring {audio_s:.1f} s of audio took {spent:.2f} s: RTF {spent / audio_s:.3f}")
    if args.held_out_voice:
        held_out_voice(examples, voices)


def held_out_voice(examples: list[Example], voices: tuple[str, ...]) -> None:
    """A stricter protocol: calibrate on the calibration words of the *other* voices only."""
    from learnloop.voice.calibration import fit_calibration

    reference: list[tuple[str, str, PhoneGop]] = []
    train = labelled_examples(CALIBRATION_WORDS, voices, seed=11, per_word=2, reference=reference)
    reference += [(v, " ".join(ws), g) for v, ws, g in sentence_reference(voices)]
    scores: list[float] = []
    labels: list[bool] = []
    for v in voices:
        fit = [e for e in train if e.voice != v]
        ref = [g for rv, _, g in reference if rv != v]
        cal = fit_calibration(
            [e.phone for e in fit],
            np.array([e.llr for e in fit]),
            np.array([e.correct for e in fit], dtype=float),
            reference=([g.phone for g in ref], np.array([g.llr for g in ref])),
        )
        test = [e for e in examples if e.voice == v]
        p = cal.probability([cal.normalised_gop(e.phone, e.llr) for e in test])
        y = np.array([e.correct for e in test])
        print(f"  held-out voice {v:12s} AUC {auc(p[y], p[~y]):.3f}")
        scores += list(p)
        labels += list(y)
    p, y = np.array(scores), np.array(labels)
    print(f"AUC with each voice held out of the calibration: {auc(p[y], p[~y]):.3f}")


if __name__ == "__main__":
    main()
