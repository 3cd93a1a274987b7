"""The learned ``sounds_like``: what a phone was said as, chosen among its candidates."""

from __future__ import annotations

import numpy as np
import pytest

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
