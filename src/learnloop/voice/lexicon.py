"""Words of a target phrase and their pronunciations.

The dictionary is the CMU pronouncing dictionary shipped with the en-us model
(``cmudict-en-us.dict``, about 126k words with pronunciation variants written
``word(2)``), read once on first use.  Words it lacks are pronounced by
:mod:`learnloop.voice.g2p`; numbers written with digits are spelled out.

>>> [t.text for t in tokenize("Hello, world! It's 7.")]
['Hello', 'world', "It's", '7']
>>> [(t.text, t.key) for t in tokenize("Café, naïve!")]
[('Café', 'cafe'), ('naïve', 'naive')]
>>> t = tokenize("Hello, world!")[1]
>>> (t.start, t.end, t.key)
(7, 11, 'world')
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from learnloop.voice.g2p import guess_pronunciation
from learnloop.voice.phonemes import PHONES

__all__ = ["Lexicon", "Token", "number_words", "tokenize"]

# words are found on the phrase with each letter (of any script, accents included) written "a" and each
# ASCII digit "0": runs of letters and digits, with inner apostrophes followed by letters
_TOKEN = re.compile(r"[a0]+(?:['’]a+)*")
# letters that Unicode does not decompose into a base letter and marks
_SPELLED = str.maketrans({"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "đ": "d", "ð": "d", "þ": "th", "ł": "l", "ı": "i"})
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789'")
_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


@dataclass(frozen=True, slots=True)
class Token:
    """One word of a phrase: its text, inclusive character span and lookup key."""

    text: str
    start: int
    end: int

    @property
    def key(self) -> str:
        """The word in lower-case ASCII, accents dropped (``Café`` -> ``cafe``), to look up and pronounce."""
        folded = unicodedata.normalize("NFKD", self.text.lower().replace("’", "'").translate(_SPELLED))
        return "".join(ch for ch in folded if ch in _KEY_CHARS)


def tokenize(phrase: str) -> list[Token]:
    """Split a phrase into words (letters, digits and inner apostrophes).

    A word is kept whole with its accented letters; one with no letter or
    digit of the English alphabet once its accents are dropped (e.g. in
    another script) is left out.
    """
    shape = "".join(_shape(ch) for ch in phrase)
    tokens = (Token(phrase[m.start() : m.end()], m.start(), m.end() - 1) for m in _TOKEN.finditer(shape))
    return [t for t in tokens if any(ch != "'" for ch in t.key)]


def _shape(ch: str) -> str:
    if ch.isalpha() or unicodedata.category(ch).startswith("M"):
        return "a"
    if "0" <= ch <= "9":
        return "0"
    return ch if ch in "'’" else " "


def number_words(n: int) -> list[str]:
    """English words for a non-negative integer below one billion, digit by digit above.

    >>> number_words(1984)
    ['one', 'thousand', 'nine', 'hundred', 'eighty', 'four']
    """
    if n < 0 or n >= 10**9:
        return [_ONES[int(d)] for d in str(abs(n))]
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10]] + (number_words(n % 10) if n % 10 else [])
    for size, name in ((10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            rest = n % size
            return number_words(n // size) + [name] + (number_words(rest) if rest else [])
    raise AssertionError("unreachable")  # pragma: no cover


class Lexicon:
    """Pronunciations from a CMU-format dictionary file (loaded lazily, thread-safe).

    >>> lex = Lexicon.from_entries({"tomato": [["T", "AH", "M", "EY", "T", "OW"]]})
    >>> lex.pronunciations("Tomato")
    [('T', 'AH', 'M', 'EY', 'T', 'OW')]
    >>> lex.in_dictionary("tomatoes")
    False
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self._path = Path(path) if path is not None else None
        self._entries: dict[str, list[tuple[str, ...]]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_entries(cls, entries: dict[str, list[list[str]]]) -> Lexicon:
        lex = cls()
        lex._entries = {w.lower(): [tuple(p) for p in prons] for w, prons in entries.items()}
        return lex

    def _load(self) -> dict[str, list[tuple[str, ...]]]:
        entries = self._entries
        if entries is not None:
            return entries
        with self._lock:
            if self._entries is None:
                path = self._path
                if path is None:
                    from learnloop.voice.acoustic import default_model_dir

                    path = default_model_dir().parent / "cmudict-en-us.dict"
                self._entries = _read_dict(path)
            return self._entries

    def in_dictionary(self, word: str) -> bool:
        return word.lower() in self._load()

    def pronunciations(self, word: str) -> list[tuple[str, ...]]:
        """All pronunciations of a word: dictionary variants, or one guessed one."""
        entries = self._load()
        key = word.lower().replace("’", "'")
        if key in entries:
            return list(entries[key])
        if key.isdigit():
            phones: list[str] = []
            for part in number_words(int(key)):
                phones.extend(self.pronunciations(part)[0])
            return [tuple(phones)]

        if not any(ch in "aeiouy" for ch in key) and key.isalpha():  # an acronym: spell it
            phones = []
            for letter in key:
                phones.extend(entries[letter][0] if letter in entries else guess_pronunciation(letter, lambda _w: None))
            return [tuple(phones)]

        def lookup(w: str) -> list[str] | None:
            found = entries.get(w)
            return list(found[0]) if found else None

        return [tuple(guess_pronunciation(key, lookup))]


def _read_dict(path: Path) -> dict[str, list[tuple[str, ...]]]:
    valid = set(PHONES)
    entries: dict[str, list[tuple[str, ...]]] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) < 2 or line.startswith(";;;"):
                continue
            word = parts[0].lower()
            if word.endswith(")") and "(" in word:
                word = word[: word.index("(")]
            phones = tuple(p.rstrip("012") for p in parts[1:])
            if "#" in phones:
                phones = phones[: phones.index("#")]
            if phones and all(p in valid for p in phones):
                entries.setdefault(word, []).append(phones)
    return entries
