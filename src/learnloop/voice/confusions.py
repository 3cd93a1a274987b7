"""Which phones a learner says in place of which: articulatory features and first-language patterns.

Two things describe how close a wrong phone is to the target, and both feed the
learned ``sounds_like`` (:mod:`learnloop.voice.saidas`):

- **articulatory features** (:data:`FEATURES`): place, manner and voicing of a
  consonant; height, backness, rounding and glide of a vowel. :func:`distance`
  counts the features two phones of a class differ in (a near neighbour differs
  in one: ``IH``/``IY`` in tenseness, ``CH``/``SH`` in manner, ``G``/``K`` in
  voicing);
- **first-language patterns** (:data:`L1_PATTERNS`): substitutions, deletions and
  insertions commonly described for speakers of Mandarin (``zh``), Spanish
  (``es``), Hindi (``hi``) and Arabic (``ar``) learning English (e.g. Swan & Smith,
  *Learner English*, 2nd ed., 2001; the lists are short and conservative: the
  best-known patterns, not an inventory).

The substitution benchmark (``benchmarks/substitution_set.py``) draws its minimal
pairs from these patterns.

>>> distance("IH", "IY"), distance("CH", "SH"), distance("G", "K")
(1, 1, 1)
>>> ("IH", "IY") in substitutions("zh")
True
>>> sorted(first_languages_of("V", "W"))
['hi', 'zh']
"""

from __future__ import annotations

from typing import Final

from learnloop.voice.phonemes import VOWELS

__all__ = [
    "DELETIONS",
    "FEATURES",
    "FIRST_LANGUAGES",
    "INSERTIONS",
    "L1_PATTERNS",
    "distance",
    "first_languages_of",
    "substitutions",
]

#: articulatory features: consonants (place, manner, voiced), vowels (height, backness, rounded, glide)
FEATURES: Final[dict[str, tuple[str, ...]]] = {
    "P": ("bilabial", "stop", "-"), "B": ("bilabial", "stop", "+"), "M": ("bilabial", "nasal", "+"),
    "F": ("labiodental", "fricative", "-"), "V": ("labiodental", "fricative", "+"),
    "TH": ("dental", "fricative", "-"), "DH": ("dental", "fricative", "+"),
    "T": ("alveolar", "stop", "-"), "D": ("alveolar", "stop", "+"), "N": ("alveolar", "nasal", "+"),
    "S": ("alveolar", "fricative", "-"), "Z": ("alveolar", "fricative", "+"),
    "L": ("alveolar", "lateral", "+"), "R": ("postalveolar", "approximant", "+"),
    "SH": ("postalveolar", "fricative", "-"), "ZH": ("postalveolar", "fricative", "+"),
    "CH": ("postalveolar", "affricate", "-"), "JH": ("postalveolar", "affricate", "+"),
    "Y": ("palatal", "approximant", "+"), "W": ("labiovelar", "approximant", "+"),
    "K": ("velar", "stop", "-"), "G": ("velar", "stop", "+"), "NG": ("velar", "nasal", "+"),
    "HH": ("glottal", "fricative", "-"),
    "IY": ("high", "front", "-", "-"), "IH": ("near-high", "front", "-", "-"),
    "EY": ("mid", "front", "-", "+"), "EH": ("open-mid", "front", "-", "-"),
    "AE": ("near-low", "front", "-", "-"), "AA": ("low", "back", "-", "-"),
    "AO": ("open-mid", "back", "+", "-"), "OW": ("mid", "back", "+", "+"),
    "UH": ("near-high", "back", "+", "-"), "UW": ("high", "back", "+", "-"),
    "AH": ("open-mid", "central", "-", "-"), "ER": ("open-mid", "central", "-", "r"),
    "AY": ("low", "front", "-", "+"), "AW": ("low", "back", "+", "+"), "OY": ("open-mid", "back", "+", "+"),
}  # fmt: skip


def distance(a: str, b: str) -> int:
    """How many articulatory features ``a`` and ``b`` differ in (4 across vowel and consonant).

    Heights are ordered, so ``IY``/``EH`` (two steps) count 2 for height.
    """
    if a == b:
        return 0
    fa, fb = FEATURES[a], FEATURES[b]
    if (a in VOWELS) != (b in VOWELS):
        return 4
    out = sum(x != y for x, y in zip(fa, fb, strict=True))
    if a in VOWELS:
        out += max(0, abs(_HEIGHT.index(fa[0]) - _HEIGHT.index(fb[0])) - 1)
    return out


_HEIGHT: Final = ("high", "near-high", "mid", "open-mid", "near-low", "low")

FIRST_LANGUAGES: Final = ("zh", "es", "hi", "ar")

#: (target, said) substitutions by first language
L1_PATTERNS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "zh": (
        ("IH", "IY"), ("IY", "IH"), ("AE", "EH"), ("EH", "AE"), ("UH", "UW"), ("UW", "UH"), ("AE", "AA"),
        ("AH", "AA"), ("ER", "AA"), ("EY", "EH"), ("OW", "AO"),
        ("V", "W"), ("W", "V"), ("TH", "S"), ("TH", "F"), ("DH", "D"), ("DH", "Z"), ("N", "L"), ("L", "N"),
        ("R", "L"), ("L", "R"), ("Z", "S"), ("D", "T"), ("B", "P"), ("G", "K"), ("NG", "N"), ("N", "NG"),
        ("SH", "S"), ("ZH", "SH"), ("JH", "CH"), ("V", "F"),
    ),
    "es": (
        ("IH", "IY"), ("IY", "IH"), ("UH", "UW"), ("AE", "EH"), ("AE", "AA"), ("AH", "AA"), ("AH", "OW"),
        ("ER", "EH"), ("EY", "EH"),
        ("V", "B"), ("B", "V"), ("SH", "CH"), ("CH", "SH"), ("Z", "S"), ("JH", "Y"), ("Y", "JH"),
        ("DH", "D"), ("TH", "T"), ("TH", "S"), ("M", "N"), ("NG", "N"), ("ZH", "SH"), ("HH", "K"),
        ("D", "DH"), ("S", "Z"),
    ),
    "hi": (
        ("AE", "EH"), ("OW", "AO"), ("EY", "EH"), ("AO", "AA"), ("UH", "UW"), ("IH", "IY"), ("ER", "AA"),
        ("V", "W"), ("W", "V"), ("TH", "T"), ("DH", "D"), ("Z", "JH"), ("F", "P"), ("ZH", "JH"),
        ("S", "SH"), ("SH", "S"), ("T", "D"), ("P", "B"),
    ),
    "ar": (
        ("EH", "IH"), ("IH", "EH"), ("OW", "AO"), ("AO", "OW"), ("UH", "UW"), ("AE", "EH"), ("AA", "AE"),
        ("EY", "IY"), ("IH", "IY"),
        ("P", "B"), ("B", "P"), ("V", "F"), ("F", "V"), ("CH", "SH"), ("G", "K"), ("G", "JH"), ("ZH", "JH"),
        ("TH", "S"), ("DH", "Z"), ("NG", "N"), ("K", "G"),
    ),
}  # fmt: skip

#: (first language, phone): a phone such learners commonly drop, and where (``final``: word-final)
DELETIONS: Final[tuple[tuple[str, str, str], ...]] = (
    ("zh", "T", "final"), ("zh", "D", "final"), ("zh", "K", "final"), ("zh", "L", "final"),
    ("zh", "R", "final"), ("zh", "Z", "final"), ("zh", "V", "final"),
    ("es", "S", "final"), ("es", "T", "final"), ("es", "D", "final"),
    ("hi", "HH", "initial"), ("ar", "HH", "initial"), ("ar", "T", "final"), ("zh", "N", "final"),
)  # fmt: skip

#: (first language, vowel, where): a vowel such learners commonly add — ``final``: after a word-final
#: consonant; ``prothesis``: before a word-initial S + consonant; ``cluster``: inside a word-initial cluster
INSERTIONS: Final[tuple[tuple[str, str, str], ...]] = (
    ("zh", "AH", "final"),
    ("es", "EH", "prothesis"),
    ("hi", "IH", "prothesis"),
    ("ar", "IH", "cluster"),
    ("ar", "IH", "final"),
    ("zh", "ER", "final"),
)


def substitutions(first_language: str | None = None) -> frozenset[tuple[str, str]]:
    """The (target, said) pairs of one first language, or of all of them (``None``)."""
    if first_language is None:
        return frozenset(pair for pairs in L1_PATTERNS.values() for pair in pairs)
    if first_language not in L1_PATTERNS:
        raise ValueError(f"unknown first language {first_language!r}: one of {', '.join(FIRST_LANGUAGES)}")
    return frozenset(L1_PATTERNS[first_language])


def first_languages_of(target: str, said: str) -> frozenset[str]:
    """The first languages whose patterns hold ``target`` said as ``said``."""
    return frozenset(l1 for l1, pairs in L1_PATTERNS.items() if (target, said) in pairs)
