"""Whether the audio holds speech at all, judged from the acoustic model's own evidence.

A forced alignment always finds a path: given a tone, a hum, a constant signal or
noise, it still places every phone of the phrase somewhere. The scoring model then
reads evidence unlike any it learned from and can call it good speech (a 200 Hz
square wave scored 87 for "hello world"). Two things in the evidence give such
audio away:

- **the phones do not beat silence.** Each aligned phone's GOP ratios include
  one against the silence model (``llr[SIL]``: per frame, how much better the
  target explains its stretch of audio than silence does). Under batch CMN a
  stationary signal looks like the model's background, and noise like breath or
  room noise: in real learners' speech the median over an utterance's phones is
  4 nats per frame (0.5 % of the speechocean762 train utterances are below 0.97);
  in non-speech it is near 0 or below;
- **the alignment squeezes the phrase.** When nothing in the audio resembles the
  phones, the optional silences take the audio and the words get the least time
  the HMMs allow (3 frames a phone). A median train utterance has 8 % of its
  phones at that minimum, the most squeezed one 68 %.

A phrase is *not heard* when both hold: the median silence ratio is below
:data:`SILENCE_MARGIN` and at least :data:`SQUEEZED_SHARE` of the phones last the
minimum. Either alone would be weaker: real speech that is quiet or muffled can
fit silence nearly as well as its phones, and fast speech has many short phones,
but real speech rarely has both. The thresholds come from real speech alone, the
speechocean762 train split (``benchmarks/bench_voice_nonspeech.py``): the margin
is the 1 % quantile of its utterances' median ratio (1.26, rounded down to 1.25),
and the share the lowest (of 0.4, 0.5, 0.6, 0.7) that leaves at most one in 500
utterances of every speaker fold unheard (one of the 2,500 is: a sentence the
experts scored 2 of 10).

Audio that is not heard is scored like silence: every word is unmatched and
scores 0, every phone scores 0 and sounds like ``#`` (no phoneme detected), and
the overall score is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from learnloop.voice.evidence import Evidence
from learnloop.voice.gop import SCORING_PHONES

__all__ = ["MIN_PHONE_FRAMES", "SILENCE_MARGIN", "SQUEEZED_SHARE", "SpeechEvidence", "heard", "speech_evidence"]

MIN_PHONE_FRAMES: Final = 3
"""The shortest phone the alignment allows (3 HMM states, no skips), in 10 ms frames."""
SILENCE_MARGIN: Final = 1.25
"""Below this median ratio of the phones against silence (nats per frame), the phones do not beat silence."""
SQUEEZED_SHARE: Final = 0.6
"""At or above this share of phones at :data:`MIN_PHONE_FRAMES`, the alignment squeezed the phrase."""

_SIL: Final = SCORING_PHONES.index("SIL")


@dataclass(frozen=True, slots=True)
class SpeechEvidence:
    """The two statistics of :func:`heard`: ``over_silence`` is the median over the aligned
    phones of their ratio against silence, ``squeezed`` the share of them at the minimum length."""

    over_silence: float
    squeezed: float

    @property
    def heard(self) -> bool:
        return not (self.over_silence < SILENCE_MARGIN and self.squeezed >= SQUEEZED_SHARE)


def speech_evidence(ev: Evidence) -> SpeechEvidence:
    """The speech statistics of ``ev`` (an alignment with no phone is neither: ``-inf`` and 1)."""
    if not ev.gops:
        return SpeechEvidence(-np.inf, 1.0)
    over = np.array([g.llr[_SIL] for g in ev.gops], dtype=np.float64)
    frames = np.array([g.end - g.start for g in ev.gops])
    return SpeechEvidence(float(np.median(over)), float(np.mean(frames <= MIN_PHONE_FRAMES)))


def heard(ev: Evidence) -> bool:
    """Whether the audio of ``ev`` holds speech that its phrase could be scored on (see the module)."""
    return speech_evidence(ev).heard
