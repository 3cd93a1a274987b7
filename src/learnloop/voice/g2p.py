"""Offline pronunciations for words missing from the dictionary.

Two steps, both without network or model downloads:

1. *Decomposition*: a word made of dictionary words (``learnloop`` = ``learn`` +
   ``loop``) or of a dictionary word plus a regular suffix (``-s``, ``-ed``,
   ``-ing``, ``-er``, ``-ly``, ``-ness``) is pronounced from its parts.
2. *Letter-to-sound rules*: otherwise an ordered table of English grapheme
   rules (longest match first, with a few context rules for ``c``, ``g``, a
   final silent ``e`` and vowel length) gives a plausible ARPABET string.

This is a fallback: dictionary words (126k in the model's dictionary) never
reach it, and its output for unusual names or loanwords is approximate.

>>> letters_to_sound("blick")
['B', 'L', 'IH', 'K']
>>> letters_to_sound("shome")
['SH', 'OW', 'M']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

__all__ = ["guess_pronunciation", "letters_to_sound"]

# Multi-letter graphemes first; the table is searched longest match first.
_GRAPHEMES: Final = {
    "tch": ["CH"], "dge": ["JH"], "igh": ["AY"], "ough": ["AO"], "augh": ["AO"],
    "sch": ["S", "K"], "th": ["TH"], "sh": ["SH"], "ch": ["CH"], "ph": ["F"],
    "wh": ["W"], "ck": ["K"], "ng": ["NG"], "qu": ["K", "W"], "gh": ["G"],
    "kn": ["N"], "wr": ["R"], "nk": ["NG", "K"], "ee": ["IY"], "ea": ["IY"], "oo": ["UW"],
    "ai": ["EY"], "ay": ["EY"], "ei": ["EY"], "ey": ["EY"], "oa": ["OW"],
    "oe": ["OW"], "ou": ["AW"], "ow": ["OW"], "oi": ["OY"], "oy": ["OY"],
    "au": ["AO"], "aw": ["AO"], "ew": ["UW"], "ue": ["UW"], "ie": ["IY"],
    "ar": ["AA", "R"], "er": ["ER"], "ir": ["ER"], "ur": ["ER"], "or": ["AO", "R"],
    "x": ["K", "S"], "b": ["B"], "c": ["K"], "d": ["D"], "f": ["F"], "g": ["G"],
    "h": ["HH"], "j": ["JH"], "k": ["K"], "l": ["L"], "m": ["M"], "n": ["N"],
    "p": ["P"], "q": ["K"], "r": ["R"], "s": ["S"], "t": ["T"], "v": ["V"],
    "w": ["W"], "y": ["Y"], "z": ["Z"],
    "a": ["AE"], "e": ["EH"], "i": ["IH"], "o": ["AA"], "u": ["AH"],
}  # fmt: skip
_LONG: Final = {"a": ["EY"], "e": ["IY"], "i": ["AY"], "o": ["OW"], "u": ["UW"]}
_VOWEL_LETTERS: Final = frozenset("aeiou")
_MAX_GRAPHEME = max(len(g) for g in _GRAPHEMES)
_SUFFIXES: Final = (
    ("ness", ["N", "AH", "S"]),
    ("ing", ["IH", "NG"]),
    ("ly", ["L", "IY"]),
    ("er", ["ER"]),
    ("ed", ["D"]),
    ("es", ["IH", "Z"]),
    ("s", ["Z"]),
)
_VOICELESS: Final = frozenset({"P", "T", "K", "F", "TH", "S", "SH", "CH"})


def letters_to_sound(word: str) -> list[str]:
    """ARPABET phones for a word by letter-to-sound rules (no dictionary)."""
    w = "".join(ch for ch in word.lower() if ch.isalpha())
    out: list[str] = []
    i = 0
    while i < len(w):
        ch = w[i]
        nxt = w[i + 1] if i + 1 < len(w) else ""
        after = w[i + 2] if i + 2 < len(w) else ""
        # A final silent 'e' after consonant(s), when the word has another vowel.
        if ch == "e" and i == len(w) - 1 and i > 0 and any(c in _VOWEL_LETTERS for c in w[: i - 1]):
            break
        # Soft c and g before e, i, y.
        if ch in "cg" and nxt in ("e", "i", "y") and nxt:
            out.append("S" if ch == "c" else "JH")
            i += 1
            continue
        # Vowel-consonant-e: a long vowel ("make", "home").
        if ch in _VOWEL_LETTERS and nxt and nxt not in _VOWEL_LETTERS and after == "e" and i + 3 == len(w):
            out.extend(_LONG[ch])
            i += 1
            continue
        # y as a vowel after a consonant.
        if ch == "y" and i > 0 and w[i - 1] not in _VOWEL_LETTERS:
            out.extend(["IY"] if i == len(w) - 1 and len(w) > 2 else ["IH"])
            i += 1
            continue
        for size in range(min(_MAX_GRAPHEME, len(w) - i), 0, -1):
            phones = _GRAPHEMES.get(w[i : i + size])
            if phones is not None:
                if (
                    not out
                    or out[-1:] != phones[:1]
                    or phones[0] not in _VOICELESS | {"B", "D", "G", "L", "M", "N", "R", "Z"}
                ):
                    out.extend(phones)
                else:  # a doubled consonant letter is one sound
                    out.extend(phones[1:])
                i += size
                break
        else:  # pragma: no cover - every letter a-z is in the table
            i += 1
    return out


def _suffix_phones(stem: Sequence[str], suffix: str, phones: list[str]) -> list[str]:
    last = stem[-1] if stem else ""
    if suffix == "s":
        if last in {"S", "Z", "SH", "ZH", "CH", "JH"}:
            return ["IH", "Z"]
        return ["S"] if last in _VOICELESS else ["Z"]
    if suffix == "ed":
        if last in {"T", "D"}:
            return ["IH", "D"]
        return ["T"] if last in _VOICELESS else ["D"]
    return phones


def guess_pronunciation(word: str, lookup: Callable[[str], list[str] | None]) -> list[str]:
    """Phones for an out-of-dictionary word, using ``lookup`` for known parts.

    >>> d = {"learn": ["L", "ER", "N"], "loop": ["L", "UW", "P"]}
    >>> guess_pronunciation("learnloops", d.get)
    ['L', 'ER', 'N', 'L', 'UW', 'P', 'S']
    """
    w = word.lower()
    parts = _decompose(w, lookup, depth=0)
    return parts if parts is not None else letters_to_sound(w)


def _decompose(w: str, lookup: Callable[[str], list[str] | None], depth: int) -> list[str] | None:
    known = lookup(w)
    if known is not None:
        return list(known)
    if depth > 3 or len(w) < 2:
        return None
    for suffix, phones in _SUFFIXES:
        stem = w[: -len(suffix)]
        if w.endswith(suffix) and len(stem) >= 3:
            base = lookup(stem) or (lookup(stem + "e") if suffix in ("ed", "ing", "er") else None)
            if base is not None:
                return list(base) + _suffix_phones(base, suffix, phones)
    # Longest known prefix (at least 3 letters) followed by a decomposable rest.
    for cut in range(len(w) - 2, 2, -1):
        head = lookup(w[:cut])
        if head is not None:
            tail = _decompose(w[cut:], lookup, depth + 1)
            if tail is not None:
                return list(head) + tail
    return None
