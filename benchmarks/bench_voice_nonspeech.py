"""Audio without speech against real learners' speech: the speech check of ``learnloop.voice.speech``.

    python benchmarks/bench_voice_nonspeech.py SO762_DIR [--product 300]

Non-speech (synthesised here, seeded, 16 kHz wav through ``PronunciationScorer``'s own
path): pure tones, square and sawtooth waves, a constant (DC) signal, click trains,
mains hum with harmonics, white, pink and brown noise at two levels, a chord, a
melody, a frequency sweep, noise shaped like the long-term spectrum of a train
utterance, and a train utterance played backwards; each 1 s and 3 s long, at two
levels, scored against four phrases. Real speech: speechocean762's **train** split
only (its cached evidence against the corpus' phones, ``_so762``); the test split is
not read.

Printed:

- for a grid of the two thresholds (median ratio of the phones against silence,
  share of phones at the 3-frame minimum), the real train utterances judged not
  heard, per speaker fold, and the share of non-speech caught. The choice uses the
  real speech only: the silence margin is the 1 % quantile of the train
  utterances' median ratio (rounded down to the grid's 0.25; the quantile of each
  fold is printed: it varies, from 0.7 to 2.2, because the fold of a speaker with
  muffled recordings has most of the low ones), below which the phones of 99 % of real
  learners do not fall; the squeezed share is then the lowest of the grid that
  leaves at most one in 500 real utterances of every speaker fold unheard. The
  non-speech figures show what each choice catches; they do not choose;
- the overall scores of every non-speech family before (``speech_gate=False``) and
  after (the shipped check), the highest over phrases, lengths and levels;
- with ``--product N``: the first N train utterances scored through
  ``PronunciationScorer.score`` with the dictionary's pronunciations (the product
  path), how many are judged not heard.

Data: ``benchmarks/_so762.py`` (speechocean762, Zhang et al. 2021, CC BY 4.0).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import sys
import wave
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _so762

from learnloop.voice import PronunciationScorer
from learnloop.voice.assessment import default_assessor
from learnloop.voice.audio import AudioError
from learnloop.voice.speech import SILENCE_MARGIN, SQUEEZED_SHARE, speech_evidence

SR = 16000
PHRASES = ("hello world", "how are you", "thank you very much", "the quick brown fox jumps over the lazy dog")
MARGINS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
SHARES = (0.4, 0.5, 0.6, 0.7)
MAX_UNHEARD_PER_FOLD = 1 / 500


def wav(x: np.ndarray) -> bytes:
    pcm = np.clip(np.rint(x), -32768, 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)


def _coloured(rng: np.random.Generator, n: int, alpha: float) -> np.ndarray:
    f = np.fft.rfftfreq(n, 1 / SR)
    f[0] = f[1]
    x = np.fft.irfft(np.fft.rfft(rng.normal(size=n)) / f ** (alpha / 2), n)
    return x / np.abs(x).max()


def signals(seconds: float, speech: np.ndarray, seed: int = 0) -> dict[str, np.ndarray]:
    """Non-speech signals at half of full scale (``speech``: a train utterance, for the last two)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    n, a = len(t), 0.5 * 32767
    out: dict[str, np.ndarray] = {}
    for f in (100, 200, 440, 1000):
        out[f"sine {f} Hz"] = a * np.sin(2 * np.pi * f * t)
    for f in (100, 200, 440):
        out[f"square {f} Hz"] = a * np.sign(np.sin(2 * np.pi * f * t))
        out[f"sawtooth {f} Hz"] = a * (2 * ((f * t) % 1) - 1)
    out["constant (DC)"] = np.full(n, a)
    for rate in (5, 50):
        clicks = np.zeros(n)
        clicks[:: SR // rate] = 30000
        out[f"clicks {rate}/s"] = clicks
    for f in (50, 60):
        out[f"hum {f} Hz + harmonics"] = sum(a / k * np.sin(2 * np.pi * f * k * t) for k in range(1, 8)) / 2
    for level in (0.03, 0.3):
        out[f"white noise {level}"] = level * 32767 * rng.normal(size=n) / 3
        out[f"pink noise {level}"] = level * 32767 * _coloured(rng, n, 1)
        out[f"brown noise {level}"] = level * 32767 * _coloured(rng, n, 2)
    chord = sum(np.sin(2 * np.pi * f * t) for f in (261.6, 329.6, 392.0)) / 3
    out["chord"] = a * chord * (0.6 + 0.4 * np.sin(2 * np.pi * 2 * t))
    notes = np.concatenate([np.sin(2 * np.pi * f * t[: n // 4]) for f in (262, 330, 392, 523)])
    out["melody"] = a * np.pad(notes, (0, n - len(notes)))
    out["sweep 200-1000 Hz"] = a * np.sin(2 * np.pi * (200 * t + 400 / seconds * t**2))
    shape = np.abs(np.fft.rfft(speech, n))
    noise = np.fft.irfft(np.fft.rfft(rng.normal(size=n)) * shape, n)
    out["speech-shaped noise"] = 0.3 * 32767 * noise / np.abs(noise).max() * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))
    out["speech played backwards"] = (
        speech[::-1][:n] if len(speech) >= n else np.pad(speech[::-1], (0, n - len(speech)))
    )
    return out


def non_speech(scorer: PronunciationScorer, speech: np.ndarray) -> list[tuple[str, float, float, int, int]]:
    """(family, over_silence, squeezed, score without the check, score with it) per example."""
    ungated = dataclasses.replace(default_assessor(), speech_gate=False)
    rows = []
    for seconds in (1.0, 3.0):
        for level in (1.0, 1.8):
            for name, x in signals(seconds, speech).items():
                audio = wav(level * x)
                for phrase in PHRASES:
                    try:
                        ev = scorer.evidence(audio, phrase)
                    except AudioError:
                        continue  # refused (narrow-band): never scored
                    se = speech_evidence(ev)
                    before = ungated.judge(ev).overall_score
                    after = scorer.score(audio, phrase).overall_score
                    rows.append((name, se.over_silence, se.squeezed, before, after))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--product", type=int, default=0, help="train utterances scored through the product path")
    args = ap.parse_args()
    evs = _so762.evidences(args.root, "train")
    utts = list(evs)
    folds = _so762.speaker_folds(args.root, "train", utts)
    real = [speech_evidence(evs[u]) for u in utts]  # type: ignore[arg-type]
    r_sil = np.array([s.over_silence for s in real])
    r_sq = np.array([s.squeezed for s in real])
    print(
        f"train split: {len(utts)} utterances (corpus phones); median ratio against silence: "
        f"0.5 % quantile {np.quantile(r_sil, 0.005):.2f}, median {np.median(r_sil):.2f}; share of phones at the "
        f"minimum: median {np.median(r_sq):.2f}, 99.5 % quantile {np.quantile(r_sq, 0.995):.2f}, max {r_sq.max():.2f}"
    )
    scorer = PronunciationScorer()
    paths = _so762.wav_paths(args.root, "train")
    rows = non_speech(scorer, read_wav(paths[utts[0]]))
    n_sil = np.array([r[1] for r in rows])
    n_sq = np.array([r[2] for r in rows])
    before = np.array([r[3] for r in rows])
    print(f"non-speech: {len(rows)} examples, {np.mean(before >= 40):.0%} of them scoring 40 or more without the check")
    q1 = [float(np.quantile(r_sil[folds == k], 0.01)) for k in range(5)]
    chosen_margin = np.floor(np.quantile(r_sil, 0.01) / 0.25) * 0.25
    print(
        f"1 % quantile of the median ratio against silence: {np.quantile(r_sil, 0.01):.2f} "
        f"(per fold {', '.join(f'{v:.2f}' for v in q1)}): silence margin {chosen_margin:g}"
    )
    print()
    print(
        "| silence margin | squeezed share | real unheard (per fold) | non-speech caught | non-speech scoring 40+ not caught |"
    )
    print("|---|---|---|---|---|")
    chosen_share = None
    for margin in MARGINS:
        for share in SHARES:
            unheard = (r_sil < margin) & (r_sq >= share)
            per = [int(unheard[folds == k].sum()) for k in range(5)]
            ok = all(unheard[folds == k].mean() <= MAX_UNHEARD_PER_FOLD for k in range(5))
            caught = (n_sil < margin) & (n_sq >= share)
            print(
                f"| {margin} | {share} | {unheard.sum()} ({', '.join(map(str, per))}){'' if ok else ' ✗'} "
                f"| {caught.mean():.1%} | {int(np.sum(~caught & (before >= 40)))} |"
            )
            if ok and margin == chosen_margin and chosen_share is None:
                chosen_share = share
    print(
        f"\nchosen: silence margin {chosen_margin:g}, squeezed share {chosen_share} "
        f"(shipped: {SILENCE_MARGIN}, {SQUEEZED_SHARE})"
    )
    print()
    print("| non-speech (highest overall score over 4 phrases, 1 s and 3 s, 2 levels) | before | after |")
    print("|---|---|---|")
    for name in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == name]
        print(f"| {name} | {max(r[3] for r in mine)} | {max(r[4] for r in mine)} |")
    after = np.array([r[4] for r in rows])
    print(
        f"| all {len(rows)}: mean / scoring 40 or more | {before.mean():.1f} / {np.mean(before >= 40):.1%} "
        f"| {after.mean():.1f} / {np.mean(after >= 40):.1%} |"
    )
    if args.product:
        texts = _so762.transcripts(args.root, "train")
        unheard_ids = []
        for u in utts[: args.product]:
            ev = scorer.evidence(paths[u].read_bytes(), texts[u])
            if not speech_evidence(ev).heard:
                unheard_ids.append(u)
        print(
            f"\nproduct path (dictionary pronunciations), first {args.product} train utterances: "
            f"{len(unheard_ids)} judged not heard {unheard_ids}"
        )


if __name__ == "__main__":
    main()
