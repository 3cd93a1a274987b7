"""GOP ratios and their calibration: shapes, invariants, the shipped tables, the label rules."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import PHRASE

from learnloop.voice import CALIBRATION, Calibration, PronunciationScorer
from learnloop.voice.alignment import align
from learnloop.voice.calibration import fit_calibration, phone_score
from learnloop.voice.gop import SCORING_PHONES, phone_gops
from learnloop.voice.phonemes import PHONES
from learnloop.voice.synthesis import espeak_phonemes, realised_phonemes


def test_gop_ratios_cover_every_candidate(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    utt = scorer._prepare(clips["phrase"])
    variants = [scorer.lexicon.pronunciations(w) for w in PHRASE.split()]
    alignment = align(scorer.model, utt.features, variants)
    assert alignment is not None
    gops = phone_gops(scorer.model, utt.features, alignment)
    assert [g.phone for g in gops] == [p.phone for p in alignment.phones if p.word >= 0]
    for g in gops:
        llr = np.asarray(g.llr)
        assert llr.shape == (len(SCORING_PHONES),)
        assert llr[SCORING_PHONES.index(g.phone)] == 0.0  # the target against itself
        others = np.delete(llr, SCORING_PHONES.index(g.phone))
        assert g.gop == pytest.approx(min(0.0, float(others.min())))
        best = SCORING_PHONES[int(np.argmin(llr))]
        assert g.sounds_like == ("#" if best == "SIL" else best)


def test_shipped_calibration_is_sane() -> None:
    assert CALIBRATION.mean.shape == CALIBRATION.sd.shape == (len(PHONES), len(SCORING_PHONES))
    assert np.all(CALIBRATION.sd > 0)
    assert CALIBRATION.weight > 0  # a larger margin over the competitors means a better phone
    # On correctly said phones the target beats almost every candidate on average.
    own = np.asarray([[SCORING_PHONES.index(p) == c for c in range(len(SCORING_PHONES))] for p in PHONES])
    assert np.all(CALIBRATION.mean[own] == 0.0)
    assert np.median(CALIBRATION.mean[~own]) > 0
    with pytest.raises(ValueError):
        CALIBRATION.mean[0, 0] = 1.0  # read-only tables


def test_calibration_round_trip_and_validation() -> None:
    data = json.loads(json.dumps(CALIBRATION.to_dict()))
    again = Calibration.from_dict(data)
    assert again.intercept == pytest.approx(CALIBRATION.intercept, abs=1e-4)
    assert np.allclose(again.mean, CALIBRATION.mean, atol=1e-4)
    with pytest.raises(ValueError, match="shape"):
        Calibration.from_dict({**data, "mean": [[0.0]]})
    with pytest.raises(ValueError, match="phone set"):
        Calibration.from_dict({**data, "targets": ["AA"]})


def test_pair_normalisation_judges_each_pair_on_its_own_scale() -> None:
    # Correct AA: usually 0.2 nats/frame better than AO (a close pair), 3 better than the rest.
    rng = np.random.default_rng(1)
    n = len(SCORING_PHONES)
    ao = SCORING_PHONES.index("AO")
    good = rng.normal(3.0, 0.3, (300, n))
    good[:, ao] = rng.normal(0.2, 0.1, 300)
    bad = good.copy()
    bad[:, ao] = rng.normal(-0.3, 0.1, 300)  # AO said: AO now fits a little better
    cal = fit_calibration(["AA"] * 600, np.vstack([good, bad]), np.r_[np.ones(300), np.zeros(300)])
    close_call = np.full(n, 3.0)
    close_call[ao] = -0.3
    assert phone_score("AA", close_call, cal) < 20
    typical = np.full(n, 3.0)
    typical[ao] = 0.2
    assert phone_score("AA", typical, cal) > 80
    assert np.mean([phone_score("AA", g, cal) > 80 for g in good]) > 0.9


def test_espeak_realisation_reveals_neutralised_substitutions() -> None:
    # American flapping: a T between vowels is spoken as a flap, which D also becomes.
    assert "t#" in realised_phonemes(espeak_phonemes(["S", "P", "AY", "T", "ER"]))
    # NG before K: "n" is assimilated, so N-for-NG in "bank" is not heard.
    bank = espeak_phonemes(["B", "AE", "NG", "K"])
    assert realised_phonemes(bank) == realised_phonemes(espeak_phonemes(["B", "AE", "N", "K"]))


def test_shared_densities_change_nothing(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    features = scorer._prepare(clips["phrase"]).features
    senones = scorer.model.phone_senones[:40].reshape(-1)
    cache: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    first = scorer.model.senone_loglik(features, senones[:30], cache=cache)
    again = scorer.model.senone_loglik(features, senones, cache=cache)
    plain = scorer.model.senone_loglik(features, senones)
    assert cache  # filled by the first call, reused by the second
    assert np.array_equal(again, plain)
    assert np.array_equal(first, plain[:, :30])
