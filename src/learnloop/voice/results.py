"""Result objects of the scorer, serialised in the shapes of the voice API.

>>> p = PhonemeScore("K", "k", "K", "k", 97)
>>> p.to_dict()
{'phoneme': 'K', 'phoneme_ipa': 'k', 'sounds_like': 'K', 'sounds_like_ipa': 'k', 'score': 97}
>>> p.to_dict(grade=True)["score_grade"]
'A'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from learnloop.voice.calibration import score_band

__all__ = ["Assessment", "Explanation", "PhonemeScore", "PhraseScore", "SyllableScore", "WordScore"]


@dataclass(frozen=True, slots=True)
class PhonemeScore:
    phoneme: str
    phoneme_ipa: str
    sounds_like: str
    sounds_like_ipa: str
    score: int

    def to_dict(self, *, grade: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "phoneme": self.phoneme,
            "phoneme_ipa": self.phoneme_ipa,
            "sounds_like": self.sounds_like,
            "sounds_like_ipa": self.sounds_like_ipa,
            "score": self.score,
        }
        if grade:
            out["score_grade"] = score_band(self.score)
        return out


@dataclass(frozen=True, slots=True)
class SyllableScore:
    syllable: str
    syllable_ipa: str
    score: int
    phoneme_scores: tuple[PhonemeScore, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "syllable": self.syllable,
            "syllable_ipa": self.syllable_ipa,
            "score": self.score,
            "phoneme_scores": [p.to_dict(grade=True) for p in self.phoneme_scores],
        }


@dataclass(frozen=True, slots=True)
class WordScore:
    word: str
    is_matched: bool
    start_ms: int
    end_ms: int
    start: int
    end: int
    score: int
    phoneme_scores: tuple[PhonemeScore, ...]
    syllable_scores: tuple[SyllableScore, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "word": self.word,
            "is_matched": self.is_matched,
            "boundaries": {"start_ms": self.start_ms, "end_ms": self.end_ms},
            "indices": {"start": self.start, "end": self.end},
            "score": self.score,
            "phoneme_scores": [p.to_dict() for p in self.phoneme_scores],
            "syllable_scores": [s.to_dict() for s in self.syllable_scores],
        }


@dataclass(frozen=True, slots=True)
class Explanation:
    keyword: str
    description: str

    def to_dict(self) -> dict[str, str]:
        return {"keyword": self.keyword, "description": self.description}


@dataclass(frozen=True, slots=True)
class Assessment:
    """The fluency endpoint's assessment dictionary (scores 0..100 with explanations)."""

    overall_score: int
    fluency: tuple[int, tuple[Explanation, ...]]
    content: tuple[int, tuple[Explanation, ...]]
    pronunciation: tuple[int, tuple[Explanation, ...]]
    measures: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def part(value: tuple[int, tuple[Explanation, ...]]) -> dict[str, Any]:
            return {"score": value[0], "explanation": [e.to_dict() for e in value[1]]}

        return {
            "overall_score": self.overall_score,
            "fluency": part(self.fluency),
            "content": part(self.content),
            "pronunciation": part(self.pronunciation),
        }


@dataclass(frozen=True, slots=True)
class PhraseScore:
    target_phrase: str
    overall_score: int
    word_scores: tuple[WordScore, ...]
    assessment: Assessment | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "target_phrase": self.target_phrase,
            "overall_score": self.overall_score,
            "word_scores": [w.to_dict() for w in self.word_scores],
        }
        if self.assessment is not None:
            out["assessment"] = self.assessment.to_dict()
        return out
