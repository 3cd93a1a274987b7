"""IRT primitives, ability estimation and item calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from calltrace import calls as _calls
from hypothesis import given
from hypothesis import strategies as st

from learnloop.sim import generate_irt
from learnloop.tracing import (
    b_to_difficulty,
    calibrate,
    difficulty_to_b,
    estimate_ability,
    expected_p_correct,
    fisher_information,
    p_correct,
)
from learnloop.tracing import calibration as calibration_module


def test_cold_start_difficulty_maps_to_failure_probability_of_average_learner() -> None:
    b = difficulty_to_b([0.33, 0.5, 0.66, float("nan")])
    # an average learner (theta = 0) fails with probability d
    np.testing.assert_allclose(1.0 - p_correct(0.0, b), [0.33, 0.5, 0.66, 0.5])
    np.testing.assert_allclose(b_to_difficulty(b), [0.33, 0.5, 0.66, 0.5])


def test_extreme_difficulties_are_clipped() -> None:
    b = difficulty_to_b([0.0, 1.0])
    assert np.all(np.isfinite(b)) and b[0] == -6.0 and b[1] == 6.0


@given(
    theta=st.floats(-50, 50),
    b=st.floats(-50, 50),
    a=st.floats(0.01, 10),
    var=st.floats(0, 100),
)
def test_probabilities_stay_in_unit_interval(theta: float, b: float, a: float, var: float) -> None:
    for p in (p_correct(theta, b, a), expected_p_correct(theta, var, b, a)):
        assert 0.0 <= float(p) <= 1.0
    assert 0.0 <= float(fisher_information(theta, b, a)) <= a * a / 4 + 1e-12


def test_fisher_information_peaks_at_difficulty() -> None:
    b = np.linspace(-3, 3, 61)
    info = fisher_information(0.5, b, 1.7)
    assert b[np.argmax(info)] == pytest.approx(0.5)
    assert info.max() == pytest.approx(1.7**2 / 4)


def test_p_correct_over_ten_thousand_items_is_one_vectorised_pass() -> None:
    # no Python-level work per item: 10,000 items make the same calls as 10 (whole-array numpy
    # operations); its time over 10,000 items is in benchmarks/bench_tracing.py
    b = np.random.default_rng(0).normal(size=10_000)
    few = _calls(lambda: p_correct(0.3, b[:10]))
    many = _calls(lambda: p_correct(0.3, b))
    assert many == few and len(many) < 20, many
    p = p_correct(0.3, b)
    assert p.dtype == np.float64 and p.shape == (10_000,)
    np.testing.assert_allclose(p, [1 / (1 + math.exp(x - 0.3)) for x in b], rtol=1e-12)


@pytest.mark.parametrize("method", ["eap", "map"])
def test_ability_estimate_is_finite_for_extreme_patterns(method: str) -> None:
    b = np.linspace(-2, 2, 20)
    hi = estimate_ability(b, np.ones(20), method=method)
    lo = estimate_ability(b, np.zeros(20), method=method)
    assert math.isfinite(hi.theta) and math.isfinite(lo.theta)
    assert lo.theta < -1.0 < 1.0 < hi.theta
    assert 0 < hi.se < 1 and 0 < lo.se < 1


def test_eap_and_map_agree_and_recover_ability() -> None:
    rng = np.random.default_rng(5)
    b = rng.normal(size=60)
    errors = []
    for theta in np.linspace(-2, 2, 9):
        scores = (rng.random(60) < p_correct(theta, b)).astype(float)
        eap = estimate_ability(b, scores, method="eap")
        map_ = estimate_ability(b, scores, method="map")
        assert eap.theta == pytest.approx(map_.theta, abs=0.1)
        errors.append(eap.theta - theta)
    assert np.sqrt(np.mean(np.square(errors))) < 0.45


def test_estimate_ability_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="scores"):
        estimate_ability([0.0], [1.5])
    with pytest.raises(ValueError, match="method"):
        estimate_ability([0.0], [1.0], method="mle")  # type: ignore[arg-type]


# -- calibration ---------------------------------------------------------------


def test_rasch_calibration_recovers_difficulty_and_ability() -> None:
    data = generate_irt(500, 100, seed=11)
    fit = calibrate(data.person, data.item, data.score)
    assert fit.converged and not fit.interrupted
    assert np.corrcoef(fit.b, data.b)[0, 1] >= 0.95
    assert np.sqrt(np.mean((fit.theta - data.theta) ** 2)) <= 0.35


def test_2pl_calibration_recovers_parameters() -> None:
    data = generate_irt(500, 100, model="2pl", seed=12)
    fit = calibrate(data.person, data.item, data.score, model="2pl")
    assert np.corrcoef(fit.b, data.b)[0, 1] >= 0.95
    assert np.corrcoef(fit.a, data.a)[0, 1] >= 0.8
    assert np.sqrt(np.mean((fit.theta - data.theta) ** 2)) <= 0.35


def test_calibration_with_sparse_fractional_scores() -> None:
    data = generate_irt(500, 100, density=0.4, fractional=0.3, seed=13)
    fit = calibrate(data.person, data.item, data.score)
    assert np.corrcoef(fit.b, data.b)[0, 1] >= 0.95


def test_prior_keeps_unanswered_and_sparse_items_at_cold_start() -> None:
    data = generate_irt(300, 20, seed=14)
    cold = np.zeros(22)
    cold[20], cold[21] = 1.2, -0.7  # items 20, 21: 20 never answered, 21 answered twice
    person = np.concatenate([data.person, [0, 1]])
    item = np.concatenate([data.item, [21, 21]])
    score = np.concatenate([data.score, [1.0, 0.0]])
    fit = calibrate(person, item, score, n_items=22, b_prior_mean=cold, b_prior_sd=0.5)
    assert fit.b[20] == pytest.approx(1.2, abs=1e-4)
    assert abs(fit.b[21] - (-0.7)) < 0.3


def test_calibration_does_not_mutate_and_is_deterministic() -> None:
    data = generate_irt(100, 20, seed=15)
    before = (data.person.copy(), data.item.copy(), data.score.copy())
    one = calibrate(data.person, data.item, data.score, model="2pl")
    two = calibrate(data.person, data.item, data.score, model="2pl")
    for x, y in zip(before, (data.person, data.item, data.score), strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(one.b, two.b)
    np.testing.assert_array_equal(one.theta, two.theta)


def test_calibration_interrupt_returns_last_complete_iteration(monkeypatch: pytest.MonkeyPatch) -> None:
    data = generate_irt(200, 30, seed=16)
    real = calibration_module.minimize
    calls = {"n": 0}

    def flaky(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(calibration_module, "minimize", flaky)
    fit = calibrate(data.person, data.item, data.score, progress=True)
    assert fit.interrupted and not fit.converged and fit.n_iter == 2
    assert np.all(np.isfinite(fit.b)) and np.all(np.isfinite(fit.theta))


def test_calibration_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="scores must lie") as err:
        calibrate([0], [0], [2.0], model="3pl")  # type: ignore[arg-type]
    assert "model" in str(err.value)


def test_calibration_estimates_the_ability_spread_and_no_longer_compresses_difficulties() -> None:
    rng = np.random.default_rng(3)
    n_persons, n_items = 1500, 40
    theta = rng.normal(0.0, 2.0, n_persons)
    b = rng.normal(0.0, 1.0, n_items)
    person = np.repeat(np.arange(n_persons), n_items)
    item = np.tile(np.arange(n_items), n_persons)
    score = (rng.random(person.size) < 1.0 / (1.0 + np.exp(-(theta[person] - b[item])))).astype(float)
    fixed = calibrate(person, item, score)
    free = calibrate(person, item, score, ability_sd=None)
    assert fixed.ability_sd == 1.0 and free.ability_sd == pytest.approx(2.0, abs=0.15)
    # with the spread fixed at 1 the difficulties shrink toward 0; estimated, they keep their scale
    assert np.polyfit(b, fixed.b, 1)[0] < 0.9 < np.polyfit(b, free.b, 1)[0]
    assert np.sqrt(np.mean((free.theta - theta) ** 2)) < np.sqrt(np.mean((fixed.theta - theta) ** 2))
    with pytest.raises(ValueError, match="Rasch model only"):
        calibrate(person, item, score, model="2pl", ability_sd=None)
