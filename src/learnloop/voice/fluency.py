"""Fluency assessment (beta) from the forced alignment.

Measures, all from the alignment of the target phrase:

- *articulation rate*: syllables per second of speaking time (pauses excluded);
  below 3.0 is ``slow`` (conversational English is about 4 to 6);
- *unfilled pauses*: silences of 300 ms or more between words;
- *hesitations*: phones held for over 300 ms and three times the median phone;
- *uneven articulation rate*: per-word rates varying by a coefficient of
  variation above 0.5 (phrases of three words or more);
- *missing words*: words the scorer does not think were attempted;
- *additional sounds*: 200 ms or more of speech-like frames outside the words.

The thresholds are documented constants chosen from the literature on speech
rate and pauses, not fitted; the sub-scores start at 100 and lose points per
problem (see :func:`assess`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

from learnloop.voice.alignment import Alignment
from learnloop.voice.results import Assessment, Explanation

__all__ = ["assess"]

FRAME_MS: Final = 10
SLOW_SYLLABLES_PER_SECOND: Final = 3.0
PAUSE_MS: Final = 300
HESITATION_MS: Final = 300
UNEVEN_CV: Final = 0.5
EXTRA_SOUND_MS: Final = 200

_TEXT: Final = {
    "success": "Well done: no problems were found.",
    "needs_pronunciation_improvement": "Some sounds were not pronounced clearly; practise the low-scoring sounds.",
    "slow": "The speech was slow ({rate:.1f} syllables per second); aim for a steadier, quicker pace.",
    "unfilled_pauses": "There were {n} long silent pause(s) between words.",
    "hesitations": "There were {n} hesitation(s): sounds held much longer than the rest.",
    "uneven_articulation_rate": "The pace changed a lot from word to word.",
    "additional_sounds": "Sounds were heard that are not part of the phrase.",
    "missing_words": "{n} word(s) of the phrase did not seem to be said: {words}.",
}


def _explain(keyword: str, **values: object) -> Explanation:
    return Explanation(keyword, _TEXT[keyword].format(**values))


def assess(
    alignment: Alignment | None,
    *,
    words: Sequence[str],
    matched: Sequence[bool],
    syllables_per_word: Sequence[int],
    pronunciation_score: int,
    speech_frames: np.ndarray,
) -> Assessment:
    """The assessment dictionary for one utterance.

    ``speech_frames`` flags frames where some phone is far likelier than
    silence; those inside silence segments count as additional sounds.
    """
    fluency: list[Explanation] = []
    content: list[Explanation] = []
    measures: dict[str, float] = {}
    fluency_score = 100
    if alignment is None:
        fluency_score = 0
        rate = 0.0
    else:
        word_spans: dict[int, list[int]] = {}
        phone_ms = []
        for seg in alignment.phones:
            if seg.word >= 0:
                span = word_spans.setdefault(seg.word, [seg.start, seg.end])
                span[0] = min(span[0], seg.start)
                span[1] = max(span[1], seg.end)
                phone_ms.append(seg.frames * FRAME_MS)
        speaking_ms = sum((b - a) * FRAME_MS for a, b in word_spans.values())
        n_syll = sum(syllables_per_word)
        rate = n_syll / (speaking_ms / 1000.0) if speaking_ms else 0.0
        first = min((a for a, _ in word_spans.values()), default=0)
        last = max((b for _, b in word_spans.values()), default=0)
        pauses = [
            seg for seg in alignment.phones
            if seg.word < 0 and seg.start > first and seg.end < last and seg.frames * FRAME_MS >= PAUSE_MS
        ]  # fmt: skip
        median = float(np.median(phone_ms)) if phone_ms else 0.0
        holds = [ms for ms in phone_ms if ms > HESITATION_MS and ms > 3 * median]
        word_rates = [
            syllables_per_word[w] / ((b - a) * FRAME_MS / 1000.0) for w, (a, b) in word_spans.items() if b > a
        ]
        cv = float(np.std(word_rates) / np.mean(word_rates)) if len(word_rates) >= 3 else 0.0
        measures.update(articulation_rate=rate, pauses=len(pauses), hesitations=len(holds), rate_variation=cv)
        if rate < SLOW_SYLLABLES_PER_SECOND:
            fluency.append(_explain("slow", rate=rate))
            fluency_score -= int(round(min(40.0, 40.0 * (SLOW_SYLLABLES_PER_SECOND - rate) / 1.5)))
        if pauses:
            fluency.append(_explain("unfilled_pauses", n=len(pauses)))
            fluency_score -= 10 * len(pauses)
        if holds:
            fluency.append(_explain("hesitations", n=len(holds)))
            fluency_score -= 10 * len(holds)
        if cv > UNEVEN_CV:
            fluency.append(_explain("uneven_articulation_rate"))
            fluency_score -= 10
    if pronunciation_score < 80:
        fluency.append(_explain("needs_pronunciation_improvement"))
    fluency_score = max(0, min(100, fluency_score))
    if not fluency:
        fluency.append(_explain("success"))

    missing = [w for w, ok in zip(words, matched) if not ok]
    content_score = int(round(100 * (1 - len(missing) / max(1, len(words)))))
    if alignment is not None:
        extra = 0
        run = 0
        for seg in alignment.phones:
            if seg.word >= 0:
                continue
            flags = speech_frames[seg.start : seg.end]
            run = 0
            for f in flags:
                run = run + 1 if f else 0
                extra = max(extra, run)
        if extra * FRAME_MS >= EXTRA_SOUND_MS:
            content.append(_explain("additional_sounds"))
            content_score = max(0, content_score - 20)
        measures["additional_sound_ms"] = float(extra * FRAME_MS)
    if missing:
        content.append(_explain("missing_words", n=len(missing), words=", ".join(missing)))
    if not content:
        content.append(_explain("success"))

    pron = [_explain("success" if pronunciation_score >= 80 else "needs_pronunciation_improvement")]
    overall = int(round((fluency_score + content_score + pronunciation_score) / 3))
    return Assessment(
        overall_score=overall,
        fluency=(fluency_score, tuple(fluency)),
        content=(content_score, tuple(content)),
        pronunciation=(pronunciation_score, tuple(pron)),
        measures=measures,
    )
