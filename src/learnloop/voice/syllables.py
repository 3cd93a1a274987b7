"""Syllabification of ARPABET phone strings by the maximal onset principle.

Every vowel is a nucleus.  The consonants between two nuclei go to the next
syllable as far as they form a legal English onset (the longest legal suffix of
the cluster); the rest close the previous syllable.

>>> syllabify("EH K S T R AH".split())
[['EH', 'K'], ['S', 'T', 'R', 'AH']]
>>> syllabify("HH AH L OW".split())
[['HH', 'AH'], ['L', 'OW']]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from learnloop.voice.phonemes import CONSONANTS, VOWELS

__all__ = ["LEGAL_ONSETS", "syllabify"]

_SINGLE = {(c,) for c in CONSONANTS - {"NG"}}
_CLUSTERS = """
P R, P L, B R, B L, T R, D R, K R, K L, G R, G L, F R, F L, TH R, SH R,
S P, S T, S K, S M, S N, S L, S W, S F,
T W, D W, K W, G W, TH W, HH W,
P Y, B Y, F Y, V Y, M Y, K Y, G Y, HH Y, N Y, L Y,
S P R, S P L, S T R, S K R, S K W, S K L, S P Y, S K Y, S M Y
"""
LEGAL_ONSETS: Final = frozenset(
    _SINGLE | {tuple(c.split()) for c in _CLUSTERS.replace("\n", " ").split(",") if c.strip()}
)


def syllabify(phones: Sequence[str]) -> list[list[str]]:
    """Split one word's phones into syllables (lists of phones).

    A word without a vowel is one syllable.

    >>> syllabify("S T R EH NG K TH S".split())
    [['S', 'T', 'R', 'EH', 'NG', 'K', 'TH', 'S']]
    >>> syllabify("AE T L AE N T IH K".split())
    [['AE', 'T'], ['L', 'AE', 'N'], ['T', 'IH', 'K']]
    """
    phones = list(phones)
    nuclei = [i for i, p in enumerate(phones) if p in VOWELS]
    if len(nuclei) <= 1:
        return [phones] if phones else []
    bounds = [0]
    for left, right in zip(nuclei, nuclei[1:]):
        cluster = phones[left + 1 : right]
        split = len(cluster)  # consonants that go to the next syllable start at left+1+split
        for k in range(len(cluster) + 1):
            if k == len(cluster) or tuple(cluster[k:]) in LEGAL_ONSETS:
                split = k
                break
        bounds.append(left + 1 + split)
    bounds.append(len(phones))
    return [phones[a:b] for a, b in zip(bounds, bounds[1:])]
