"""Phonetics on word lists with known answers: syllables, IPA, respelling, G2P."""

from __future__ import annotations

import pytest

from learnloop.voice.g2p import guess_pronunciation, letters_to_sound
from learnloop.voice.lexicon import Lexicon, number_words, tokenize
from learnloop.voice.phonemes import IPA, PHONES, respell, to_ipa
from learnloop.voice.syllables import syllabify


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon()


# word -> syllables by the maximal onset principle (dictionary pronunciation).
SYLLABLES = {
    "hello": ["HH AH", "L OW"],
    "water": ["W AO", "T ER"],
    "extra": ["EH K", "S T R AH"],
    "window": ["W IH N", "D OW"],
    "monkey": ["M AH NG", "K IY"],
    "atlantic": ["AH T", "L AE N", "T IH K"],
    "banana": ["B AH", "N AE", "N AH"],
    "instrument": ["IH N", "S T R AH", "M AH N T"],
    "strengths": ["S T R EH NG K TH S"],
    "complete": ["K AH M", "P L IY T"],
    "elephant": ["EH", "L AH", "F AH N T"],
    "computer": ["K AH M", "P Y UW", "T ER"],
}

# word -> IPA (General American, reduced vowels in polysyllables).
IPA_WORDS = {
    "cat": "kæt",
    "think": "θɪŋk",
    "judge": "dʒʌdʒ",
    "measure": "mɛʒɚ",
    "church": "tʃɝtʃ",
    "yellow": "jɛloʊ",
    "about": "əbaʊt",
    "boy": "bɔɪ",
    "father": "fɑðɚ",
    "ring": "ɹɪŋ",
    "shoe": "ʃu",
    "good": "ɡʊd",
}


@pytest.mark.parametrize("word", sorted(SYLLABLES))
def test_syllables_follow_maximal_onset(lexicon: Lexicon, word: str) -> None:
    phones = lexicon.pronunciations(word)[0]
    assert [" ".join(s) for s in syllabify(phones)] == SYLLABLES[word]


@pytest.mark.parametrize("word", sorted(IPA_WORDS))
def test_ipa_of_known_words(lexicon: Lexicon, word: str) -> None:
    assert "".join(to_ipa(lexicon.pronunciations(word)[0])) == IPA_WORDS[word]


def test_every_phone_has_ipa_and_respelling() -> None:
    assert len(PHONES) == 39
    for p in PHONES:
        assert IPA[p] and respell([p])


def test_syllables_cover_all_phones_in_order() -> None:
    phones = "K AA N S T AH T UW SH AH N".split()
    assert sum(syllabify(phones), []) == phones
    assert syllabify([]) == []
    assert syllabify(["S", "T"]) == [["S", "T"]]


def test_respellings() -> None:
    assert respell(["K", "AE", "T"]) == "kat"
    assert respell(["SH", "IY"]) == "shee"
    assert respell(["AY"]) == "eye"


def test_pronunciation_variants_and_oov(lexicon: Lexicon) -> None:
    assert ("DH", "AH") in lexicon.pronunciations("the")
    assert len(lexicon.pronunciations("the")) >= 2
    assert lexicon.pronunciations("learnloop") == [("L", "ER", "N", "L", "UW", "P")]
    assert lexicon.pronunciations("42") == [tuple("F AO R T IY T UW".split())]
    assert lexicon.pronunciations("zxq")[0][:2] == ("Z", "IY")


def test_letters_to_sound_rules() -> None:
    assert letters_to_sound("shop") == ["SH", "AA", "P"]
    assert letters_to_sound("cake") == ["K", "EY", "K"]
    assert letters_to_sound("city") == ["S", "IH", "T", "IY"]
    assert letters_to_sound("thinking") == ["TH", "IH", "NG", "K", "IH", "NG"]
    known = {"rain": ["R", "EY", "N"], "bow": ["B", "OW"]}
    assert guess_pronunciation("rainbows", known.get) == ["R", "EY", "N", "B", "OW", "Z"]


def test_tokens_and_numbers() -> None:
    tokens = tokenize("  Don't stop, 2 go!")
    assert [(t.text, t.start, t.end) for t in tokens] == [
        ("Don't", 2, 6),
        ("stop", 8, 11),
        ("2", 14, 14),
        ("go", 16, 17),
    ]
    accented = tokenize("Zoë’s résumé, straße cafe\u0301 x² 1'2 你好")
    assert [(t.text, t.start, t.end, t.key) for t in accented] == [
        ("Zoë’s", 0, 4, "zoe's"),
        ("résumé", 6, 11, "resume"),
        ("straße", 14, 19, "strasse"),
        ("cafe\u0301", 21, 25, "cafe"),
        ("x", 27, 27, "x"),
        ("1", 30, 30, "1"),
        ("2", 32, 32, "2"),
    ]
    assert number_words(0) == ["zero"]
    assert number_words(115) == ["one", "hundred", "fifteen"]
    assert number_words(2_000_001) == ["two", "million", "one"]
