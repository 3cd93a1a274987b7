"""What the acoustic model says about one utterance of a phrase, before any scoring model.

:class:`Evidence` is the input of every score: the chosen pronunciation of each
word, the forced alignment, the GOP of every aligned phone and how well each
word's phones explain its stretch of audio. Researchers fitting their own
scoring model read it through :meth:`PronunciationScorer.evidence
<learnloop.voice.PronunciationScorer.evidence>`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learnloop.voice.alignment import Alignment
from learnloop.voice.gop import PhoneGop

__all__ = ["Evidence"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """The acoustic evidence of one utterance against one phrase.

    ``pronunciations``: the chosen pronunciation of each word (ARPABET, no stress);
    ``alignment``: the forced alignment (None when the audio is too short for the
    phrase); ``gops``: one :class:`~learnloop.voice.gop.PhoneGop` per aligned phone,
    in time order; ``word_match``: per word, the per-frame log-likelihood ratio of
    its phones against a free phone loop (about 0: the word's phones fit best;
    ``-inf``: not aligned); ``speech_frames``: 10 ms frames where some phone beats
    silence; ``n_frames``: all frames, the added quiet at both ends included;
    ``speech``: which frames those are (None when not kept).
    """

    pronunciations: tuple[tuple[str, ...], ...]
    alignment: Alignment | None
    gops: tuple[PhoneGop, ...]
    word_match: tuple[float, ...]
    speech_frames: int
    n_frames: int
    speech: np.ndarray | None = None

    def word_gops(self, word: int) -> list[PhoneGop]:
        """The GOPs of one word's phones, in order."""
        return [g for g in self.gops if g.word == word]
