"""The scorer listens: espeak-ng speech, said right, said wrong, said slowly, re-encoded."""

from __future__ import annotations

import threading

import numpy as np
from conftest import OTHER, PHRASE

from learnloop.voice import PhraseScore, PronunciationScorer


def phones(result: PhraseScore) -> list[tuple[str, int, str]]:
    return [(p.phoneme, p.score, p.sounds_like) for w in result.word_scores for p in w.phoneme_scores]


def test_correct_phrase_scores_high(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    result = scorer.score(clips["phrase"], PHRASE)
    scores = [s for _, s, _ in phones(result)]
    assert result.overall_score >= 70
    assert np.median(scores) >= 80
    assert min(scores) >= 25, phones(result)
    assert all(w.is_matched for w in result.word_scores)
    # Word boundaries are in order, in milliseconds within the clip.
    bounds = [(w.start_ms, w.end_ms) for w in result.word_scores]
    assert all(a < b for a, b in bounds)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(bounds, bounds[1:]))
    assert bounds[-1][1] < 3000


def test_substituted_phone_scores_lower_and_names_a_substitute(
    scorer: PronunciationScorer, clips: dict[str, bytes]
) -> None:
    good = scorer.score(clips["phrase"], PHRASE).word_scores[3]
    bad = scorer.score(clips["substituted"], PHRASE).word_scores[3]
    assert good.word == bad.word == "tomorrow"
    aa_good = good.phoneme_scores[3]
    aa_bad = bad.phoneme_scores[3]
    assert aa_good.phoneme == aa_bad.phoneme == "AA"
    assert aa_good.score >= 70
    assert aa_bad.score <= aa_good.score - 40
    # A plausible substitute: the close front vowel IY that was said, or a neighbour of it.
    assert aa_bad.sounds_like in {"IY", "IH", "EY", "Y"}
    assert aa_bad.sounds_like_ipa in {"i", "ɪ", "eɪ", "j"}


def test_spoken_phrase_outscores_another_phrase(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    right = scorer.score(clips["phrase"], PHRASE)
    wrong = scorer.score(clips["other"], PHRASE)
    assert right.overall_score >= wrong.overall_score + 25
    assert sum(not w.is_matched for w in wrong.word_scores) >= 3


def test_multichoice_picks_the_spoken_candidate(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    best = scorer.multichoice(clips["other"], [PHRASE, OTHER, "good morning everyone"])
    assert best.target_phrase == OTHER


def test_fluency_flags_slow_speech(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    normal = scorer.score(clips["phrase"], PHRASE, fluency=True).assessment
    slow = scorer.score(clips["slow"], PHRASE, fluency=True).assessment
    assert normal is not None and slow is not None
    assert "slow" not in [e.keyword for e in normal.fluency[1]]
    assert "slow" in [e.keyword for e in slow.fluency[1]]
    assert slow.fluency[0] < normal.fluency[0]
    assert [e.keyword for e in normal.content[1]] == ["success"]


def test_mp3_and_webm_score_like_wav(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    wav = scorer.score(clips["phrase"], PHRASE)
    for fmt in ("mp3", "webm"):
        other = scorer.score(clips[f"phrase.{fmt}"], PHRASE)
        assert abs(other.overall_score - wav.overall_score) <= 5, fmt
        diffs = [abs(a.score - b.score) for a, b in zip(wav.word_scores, other.word_scores)]
        assert max(diffs) <= 12, (fmt, diffs)


def test_scoring_is_deterministic_and_thread_safe(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    expected = scorer.score(clips["phrase"], PHRASE).to_dict()
    results: list[dict[str, object]] = []

    def work() -> None:
        results.append(PronunciationScorer().score(clips["phrase"], PHRASE).to_dict())

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 3
    assert PronunciationScorer().model is scorer.model  # loaded once, shared


def test_numpy_samples_are_accepted(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    from learnloop.voice.audio import decode_audio

    samples, _ = decode_audio(clips["phrase"])
    as_float = scorer.score(samples / 32768.0, PHRASE)
    as_int = scorer.score(samples.astype(np.int16), PHRASE)
    assert as_float.to_dict() == as_int.to_dict()
