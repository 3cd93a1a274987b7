"""The substitution set's list and the first-language patterns it is drawn from."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import substitution_set

from learnloop.voice.confusions import (
    DELETIONS,
    FIRST_LANGUAGES,
    INSERTIONS,
    L1_PATTERNS,
    distance,
    first_languages_of,
    substitutions,
)
from learnloop.voice.phonemes import PHONES, VOWELS


def test_near_neighbours_differ_in_one_feature_and_classes_are_far_apart() -> None:
    assert distance("IH", "IY") == distance("CH", "SH") == distance("G", "K") == 1
    assert distance("P", "B") == 1 and distance("P", "Z") == 3
    assert distance("IY", "AA") > distance("IY", "IH")
    assert distance("T", "IY") == 4 and distance("T", "T") == 0
    assert all(distance(a, b) == distance(b, a) for a in PHONES for b in PHONES)


def test_patterns_stay_within_a_class_and_name_known_phones() -> None:
    for l1, pairs in L1_PATTERNS.items():
        assert l1 in FIRST_LANGUAGES
        for target, said in pairs:
            assert target in PHONES and said in PHONES and target != said
            assert (target in VOWELS) == (said in VOWELS), (l1, target, said)
    assert {p for _, p, _ in DELETIONS} <= set(PHONES)
    assert {v for _, v, _ in INSERTIONS} <= VOWELS
    assert first_languages_of("V", "W") == {"zh", "hi"}
    assert substitutions("es") <= substitutions()
    with pytest.raises(ValueError, match="unknown first language"):
        substitutions("fr")


def test_the_committed_list_holds_300_pairs_split_by_word() -> None:
    pairs = substitution_set.load_list()
    assert len(pairs) >= 300
    kinds = {p.kind for p in pairs}
    assert kinds == {"sub", "del", "ins"}
    subs = [p for p in pairs if p.kind == "sub"]
    assert any(p.target in VOWELS for p in subs) and any(p.target not in VOWELS for p in subs)
    assert {x for p in pairs for x in p.l1} == set(FIRST_LANGUAGES)
    split_of: dict[str, str] = {}
    for p in pairs:
        assert split_of.setdefault(p.word, p.split) == p.split, p.word  # a word is in one part only
        assert p.split == ("held-out" if substitution_set.held_out(p.word) else "fit")
    assert 0.2 < sum(s == "held-out" for s in split_of.values()) / len(split_of) < 0.45
    assert len(substitution_set.VOICES) >= 4


def test_each_pair_says_the_word_with_exactly_its_edit() -> None:
    for p in substitution_set.load_list():
        if p.kind == "sub":
            assert len(p.said) == len(p.phones)
            assert [i for i, (a, b) in enumerate(zip(p.phones, p.said)) if a != b] == [p.at]
            assert (p.target, p.heard) in substitutions() and p.said[p.at] == p.heard
        elif p.kind == "del":
            assert p.heard == "#" and p.said == (*p.phones[: p.at], *p.phones[p.at + 1 :])
        else:
            added = [v for v in p.said if v in VOWELS]
            assert len(p.said) == len(p.phones) + 1 and len(added) == sum(v in VOWELS for v in p.phones) + 1
        assert p.target == p.phones[p.at]
