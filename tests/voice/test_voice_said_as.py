"""The learned ``sounds_like``: what a phone was said as, chosen among its candidates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import PHRASE

from learnloop.voice import PronunciationScorer
from learnloop.voice.assessment import default_assessor
from learnloop.voice.calibration import CALIBRATION
from learnloop.voice.gop import SCORING_PHONES
from learnloop.voice.phonemes import PHONES, VOWELS
from learnloop.voice.saidas import FEATURE_NAMES, SaidAs, candidate_features, candidates, fit_said_as


def typical(phone: str) -> np.ndarray:
    """The ratios of a correctly said ``phone``: the calibration's mean of every pair."""
    return CALIBRATION.mean[PHONES.index(phone)].copy()


def test_candidates_are_the_phone_itself_its_class_and_silence() -> None:
    for phone in PHONES:
        names = candidates(phone)
        assert names[0] == phone and names[-1] == "#" and len(set(names)) == len(names)
        if phone in VOWELS:
            assert {"IY", "UW"} - {phone} <= set(names) and "K" not in names
        elif phone not in {"L", "R", "W", "Y"}:
            assert "AA" not in names
        block = candidate_features(phone, typical(phone), 8)
        assert block.shape == (len(names), len(FEATURE_NAMES))


def test_fitting_recovers_a_planted_choice() -> None:
    rng = np.random.default_rng(1)
    blocks, labels = [], []
    for _ in range(400):
        block = rng.normal(size=(6, len(FEATURE_NAMES)))
        scores = 2.0 * block[:, 0] - 1.0 * block[:, 4]
        said = int(np.argmax(scores))
        blocks.append(block)
        labels.append(said if rng.random() < 0.9 else -1 if said else 0)
    model = fit_said_as(blocks, labels, ridge=0.1)
    assert model.weights[0] > 0 > model.weights[4]
    hits = [int(np.argmax(b @ model.weights)) == int(np.argmax(2.0 * b[:, 0] - b[:, 4])) for b in blocks]
    assert np.mean(hits) > 0.9


def test_the_shipped_choice_names_the_phone_that_fits_far_better() -> None:
    model = default_assessor().said_as_model
    assert model is not None
    for target, said in (("IH", "IY"), ("CH", "SH"), ("G", "K"), ("V", "W")):
        llr = typical(target)
        llr[SCORING_PHONES.index(said)] = -4.0  # the substitute fits 4 nats per frame better
        assert model.other(target, llr, 9) == said
        assert model.probabilities(target, llr, 9).sum() == pytest.approx(1.0)


def test_a_phone_that_silence_explains_was_not_said() -> None:
    model = default_assessor().said_as_model
    assert model is not None
    llr = typical("T")
    llr[SCORING_PHONES.index("SIL")] = -5.0
    assert model.other("T", llr, 3) == "#"


def test_the_choice_round_trips_and_refuses_other_features() -> None:
    model = default_assessor().said_as_model
    assert model is not None
    again = SaidAs.from_dict(model.to_dict())
    assert np.allclose(again.weights, model.weights, atol=1e-6)
    with pytest.raises(ValueError, match="features"):
        SaidAs.from_dict({"features": ["fit"], "weights": [1.0]})


def test_the_reporting_threshold_round_trips_and_is_checked() -> None:
    weights = np.ones(len(FEATURE_NAMES))
    assert SaidAs.from_dict(SaidAs(weights, 0.7).to_dict()).report_above == 0.7
    assert SaidAs.from_dict(SaidAs(weights).to_dict()).report_above is None
    with pytest.raises(ValueError, match="report_above"):
        SaidAs.from_dict({**SaidAs(weights).to_dict(), "report_above": 1.5})


def test_sounds_like_names_another_phone_above_the_retry_band_only_when_the_choice_is_confident(
    scorer: PronunciationScorer, clips: dict[str, bytes]
) -> None:
    shipped = default_assessor()
    assert shipped.said_as_model is not None
    ev = scorer.evidence(clips["substituted"], PHRASE)
    judgement = shipped.judge(ev)
    said = shipped.said_as(ev)
    phones = [g.phone for g in ev.gops]
    scores = judgement.phone_scores
    weights = shipped.said_as_model.weights
    # only below 60: the learned choice is named exactly where the phone scores in the retry band
    strict = dataclasses.replace(shipped, said_as_model=SaidAs(weights, None)).sounds_like(ev, judgement)
    assert [s != p for s, p in zip(strict, phones, strict=True)] == [bool(v < 60) for v in scores]
    # from any probability: every phone is named as the learned choice, whatever its score
    eager = dataclasses.replace(shipped, said_as_model=SaidAs(weights, 1e-9)).sounds_like(ev, judgement)
    assert list(eager) == list(said)
    # as shipped: every phone in the retry band names another phone, and a phone above it names
    # another only when the choice gives that phone at least the threshold
    above = shipped.said_as_model.report_above
    for g, s, other, v in zip(ev.gops, shipped.sounds_like(ev, judgement), said, scores, strict=True):
        p = shipped.said_as_model.other_and_probability(g.phone, g.llr, g.end - g.start)[1]
        named = v < 60 or (above is not None and p >= above)
        assert s == (other if named else g.phone)
