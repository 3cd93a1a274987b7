"""Test speech from the espeak-ng synthesiser, including deliberate mispronunciations.

The calibration script, the benchmark and the tests need labelled speech: a
phrase said correctly, and the same phrase with one phone replaced.  espeak-ng
(a system package, ``apt-get install espeak-ng``) reads text, or phonemes
written between ``[[`` and ``]]``; :func:`espeak_phonemes` writes an ARPABET
pronunciation in espeak-ng's phoneme mnemonics so that one phone can be
swapped for another.

Synthesised speech is not learner speech: it is clean, regular and speaks the
dictionary pronunciation exactly; it serves to check that the scorer hears
the difference between phones, not to stand for real learners.

>>> espeak_phonemes(["HH", "AH", "L", "OW"])
"[[h@l'oU]]"
>>> espeak_phonemes(["K", "AE", "T"])
"[[k'at]]"
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from typing import Final

from learnloop.voice.phonemes import VOWELS

__all__ = [
    "ESPEAK_PHONEMES",
    "EspeakMissingError",
    "default_stress",
    "espeak_phonemes",
    "realised_phonemes",
    "synthesize",
]

ESPEAK_PHONEMES: Final = {
    "AA": "A:", "AE": "a", "AH": "V", "AO": "O:", "AW": "aU", "AY": "aI",
    "EH": "E", "ER": "3:", "EY": "eI", "IH": "I", "IY": "i:", "OW": "oU",
    "OY": "OI", "UH": "U", "UW": "u:", "B": "b", "CH": "tS", "D": "d",
    "DH": "D", "F": "f", "G": "g", "HH": "h", "JH": "dZ", "K": "k", "L": "l",
    "M": "m", "N": "n", "NG": "N", "P": "p", "R": "r", "S": "s", "SH": "S",
    "T": "t", "TH": "T", "V": "v", "W": "w", "Y": "j", "Z": "z", "ZH": "Z",
}  # fmt: skip


class EspeakMissingError(RuntimeError):
    """espeak-ng is not installed (``apt-get install espeak-ng``)."""


def default_stress(phones: Sequence[str]) -> int:
    """Which vowel (counting vowels from 0) :func:`espeak_phonemes` stresses by default.

    The second vowel when the first is ``AH`` (``about``), else the first.

    >>> default_stress(["AH", "B", "AW", "T"]), default_stress(["K", "AE", "T"])
    (1, 0)
    """
    vowels = [p for p in phones if p in VOWELS]
    return 1 if len(vowels) >= 2 and vowels[0] == "AH" else 0


def espeak_phonemes(phones: Sequence[str], *, stress: int | None = None) -> str:
    """ARPABET phones as an espeak-ng phoneme string, stress on vowel ``stress``.

    ``stress`` counts vowels from 0 and defaults to :func:`default_stress`.
    Unstressed ``AH`` is written as schwa.  To say a word with one phone
    replaced, pass the stress of the dictionary pronunciation, so that only
    that phone changes.
    """
    vowel_positions = [i for i, p in enumerate(phones) if p in VOWELS]
    if stress is None:
        stress = default_stress(phones)
    stress_at = vowel_positions[stress] if vowel_positions else -1
    out = []
    for i, p in enumerate(phones):
        if i == stress_at:
            out.append("'")
        if p == "AH" and i != stress_at:
            out.append("@")
        else:
            out.append(ESPEAK_PHONEMES[p])
    return "[[" + "".join(out) + "]]"


def synthesize(text: str, *, voice: str = "en-us", speed: int = 160, pitch: int = 50) -> bytes:
    """WAV bytes of espeak-ng saying ``text`` (which may hold ``[[phonemes]]``)."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise EspeakMissingError("espeak-ng is not installed: apt-get install espeak-ng")
    result = subprocess.run(
        [exe, "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text],
        capture_output=True,
        check=False,
        timeout=60,
    )
    if result.returncode != 0 or not result.stdout:
        raise RuntimeError(f"espeak-ng failed for {text!r}: {result.stderr.decode(errors='replace')}")
    return _fix_stream_header(result.stdout)


def realised_phonemes(text: str, *, voice: str = "en-us") -> str:
    """The phonemes espeak-ng actually speaks for ``text``, after its own rules.

    espeak-ng rewrites some phonemes in context, as American speakers do: a
    ``t`` between vowels becomes the flap ``t#``, unstressed final ``I``
    becomes ``i``, ``n`` before ``k`` becomes ``N``.  Comparing these strings
    tells whether a deliberate substitution is really heard.

    >>> realised_phonemes("[[sp'aIt3]]")
    "sp'aIt#3"
    """
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise EspeakMissingError("espeak-ng is not installed: apt-get install espeak-ng")
    result = subprocess.run(
        [exe, "-v", voice, "-q", "-X", text], capture_output=True, check=False, timeout=60, text=True
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"espeak-ng failed for {text!r}: {result.stderr}")
    return lines[-1].strip()


def _fix_stream_header(wav: bytes) -> bytes:
    """espeak-ng writes sizes of 0x7fffffff when streaming; set the real ones."""
    if len(wav) < 44 or wav[:4] != b"RIFF":
        return wav
    data_at = wav.find(b"data", 12)
    if data_at < 0:
        return wav
    total = len(wav)
    riff_size = (total - 8).to_bytes(4, "little")
    data_size = (total - data_at - 8).to_bytes(4, "little")
    return wav[:4] + riff_size + wav[8 : data_at + 4] + data_size + wav[data_at + 8 :]
