"""The ARPABET phone set of the en-us model, its IPA symbols and a respelling.

Phones are the 39 two-letter ARPABET symbols of the CMU dictionary, without
stress digits (the model's dictionary carries none).  IPA follows General
American; ``AH`` and ``ER`` are written as the reduced vowels ``ə`` and ``ɚ``
in words of more than one syllable and as ``ʌ`` and ``ɝ`` otherwise.

>>> to_ipa(["HH", "AH", "L", "OW"])
['h', 'ə', 'l', 'oʊ']
>>> to_ipa(["K", "AH", "T"])
['k', 'ʌ', 't']
>>> respell(["HH", "AH"]), respell(["L", "OW"])
('huh', 'loh')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["CONSONANTS", "IPA", "PHONES", "VOWELS", "is_vowel", "respell", "to_ipa"]

VOWELS: Final = frozenset("AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW".split())
CONSONANTS: Final = frozenset("B CH D DH F G HH JH K L M N NG P R S SH T TH V W Y Z ZH".split())
PHONES: Final = tuple(sorted(VOWELS | CONSONANTS))

IPA: Final = {
    "AA": "ɑ", "AE": "æ", "AH": "ʌ", "AO": "ɔ", "AW": "aʊ", "AY": "aɪ",
    "B": "b", "CH": "tʃ", "D": "d", "DH": "ð", "EH": "ɛ", "ER": "ɝ",
    "EY": "eɪ", "F": "f", "G": "ɡ", "HH": "h", "IH": "ɪ", "IY": "i",
    "JH": "dʒ", "K": "k", "L": "l", "M": "m", "N": "n", "NG": "ŋ",
    "OW": "oʊ", "OY": "ɔɪ", "P": "p", "R": "ɹ", "S": "s", "SH": "ʃ",
    "T": "t", "TH": "θ", "UH": "ʊ", "UW": "u", "V": "v", "W": "w",
    "Y": "j", "Z": "z", "ZH": "ʒ",
}  # fmt: skip
_REDUCED: Final = {"AH": "ə", "ER": "ɚ"}

_RESPELL: Final = {
    "AA": "ah", "AE": "a", "AH": "uh", "AO": "aw", "AW": "ow", "AY": "eye",
    "EH": "eh", "ER": "ur", "EY": "ay", "IH": "ih", "IY": "ee", "OW": "oh",
    "OY": "oy", "UH": "uu", "UW": "oo", "B": "b", "CH": "ch", "D": "d",
    "DH": "dh", "F": "f", "G": "g", "HH": "h", "JH": "j", "K": "k", "L": "l",
    "M": "m", "N": "n", "NG": "ng", "P": "p", "R": "r", "S": "s", "SH": "sh",
    "T": "t", "TH": "th", "V": "v", "W": "w", "Y": "y", "Z": "z", "ZH": "zh",
}  # fmt: skip
# A vowel spelled with a leading vowel letter after a consonant reads better shortened.
_AFTER_CONSONANT: Final = {"AY": "y"}


def is_vowel(phone: str) -> bool:
    """Whether an ARPABET phone is a vowel (a syllable nucleus)."""
    return phone in VOWELS


def to_ipa(phones: Sequence[str]) -> list[str]:
    """IPA for each phone of one word (context decides the reduced vowels)."""
    polysyllabic = sum(p in VOWELS for p in phones) > 1
    out = []
    for p in phones:
        if polysyllabic and p in _REDUCED:
            out.append(_REDUCED[p])
        else:
            out.append(IPA.get(p, "#"))
    return out


def respell(phones: Sequence[str]) -> str:
    """A readable respelling of a syllable, e.g. ``['L', 'OW']`` -> ``'loh'``.

    >>> respell(["T", "AY", "M"])
    'tym'
    """
    parts = []
    previous_consonant = False
    for p in phones:
        if previous_consonant and p in _AFTER_CONSONANT:
            parts.append(_AFTER_CONSONANT[p])
        else:
            parts.append(_RESPELL.get(p, p.lower()))
        previous_consonant = p in CONSONANTS
    return "".join(parts)
