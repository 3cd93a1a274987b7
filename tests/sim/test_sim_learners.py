"""Simulated learners and data generators: determinism and ground-truth behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import learnloop.sim
from learnloop.sim import SimulatedLearner, generate_bkt, generate_irt

PARENT = [-1, 0, 0]
ITEM_TOPIC = [1, 1, 2, 2]
B = [0.0, 0.5, 0.0, 1.0]
DAY = 86400.0


def make(seed: int = 0, **kw: float) -> SimulatedLearner:
    return SimulatedLearner(topic_parent=PARENT, item_topic=ITEM_TOPIC, b=B, prerequisites=[(1, 2)], seed=seed, **kw)


def test_exports() -> None:
    exported = learnloop.sim.__all__
    assert exported == sorted(exported)
    assert {"BKTData", "IRTData", "SimulatedLearner", "generate_bkt", "generate_irt"} <= set(exported)
    assert all(hasattr(learnloop.sim, name) for name in exported)


def test_same_seed_same_learner_and_answers() -> None:
    one, two = make(7), make(7)
    assert [one.respond(i % 4, i * 60.0) for i in range(30)] == [two.respond(i % 4, i * 60.0) for i in range(30)]
    assert make(8).overall != make(7).overall


def test_practice_raises_and_time_lowers_ability() -> None:
    learner = make(1, guess=0.0, slip=0.0)
    before = learner.ability(1, 0.0)
    for k in range(10):
        learner.respond(0, k * 60.0)
    trained = learner.ability(1, 600.0)
    assert trained > before + 1.0
    assert before < learner.ability(1, 600.0 + 60 * DAY) < trained


def test_prerequisite_shortfall_lowers_ability() -> None:
    weak = make(2, prerequisite_penalty=0.0)
    penalised = make(2, prerequisite_penalty=1.0)
    pre_short = max(0.0, 0.0 - weak.ability(1, 0.0))
    assert penalised.ability(2, 0.0) == pytest.approx(weak.ability(2, 0.0) - pre_short)


def test_guess_and_slip_bound_probabilities() -> None:
    learner = make(3, guess=0.2, slip=0.1)
    learner.base_ability[:] = [-50.0, -50.0, -50.0]
    assert learner.p_correct(0, 0.0) == pytest.approx(0.2)
    learner.base_ability[:] = [50.0, 50.0, 50.0]
    assert learner.p_correct(0, 0.0) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="guess"):
        make(guess=0.6, slip=0.5)


@given(seed=st.integers(0, 10_000), item=st.integers(0, 3), at=st.floats(0, 1e9))
def test_answers_are_valid_scores(seed: int, item: int, at: float) -> None:
    learner = make(seed, fractional=True)
    assert 0.0 <= learner.respond(item, at) <= 1.0
    event = make(seed).attempt_event(item, at)
    assert event.kind == "attempt" and event.score in (0.0, 1.0)


def test_theory_view_teaches_a_little() -> None:
    learner = make(4)
    before = learner.ability(2, 0.0)
    learner.view_theory(2, 0.0, fraction=1.0)
    assert learner.ability(2, 0.0) > before


def test_irt_generator_truth_and_determinism() -> None:
    one, two = generate_irt(50, 20, model="2pl", seed=5), generate_irt(50, 20, model="2pl", seed=5)
    np.testing.assert_array_equal(one.score, two.score)
    assert one.n_persons == 50 and one.n_items == 20 and not np.all(one.a == 1.0)
    sparse = generate_irt(100, 50, density=0.3, fractional=0.5, seed=6)
    assert 0.2 < sparse.score.size / 5000 < 0.4
    assert np.any((sparse.score > 0) & (sparse.score < 1))
    with pytest.raises(ValueError, match="model"):
        generate_irt(model="3pl")


def test_bkt_generator_matches_its_parameters() -> None:
    truth = np.array([[0.4, 0.2, 0.25, 0.1]])
    data = generate_bkt(20_000, 1, 3, params=truth, seed=9)
    first = data.correct.reshape(3, -1)[0]
    # P(first answer correct) = prior (1 - slip) + (1 - prior) guess = 0.36 + 0.15 = 0.51
    assert first.mean() == pytest.approx(0.51, abs=0.01)
    again = generate_bkt(20_000, 1, 3, params=truth, seed=9)
    np.testing.assert_array_equal(data.correct, again.correct)
    assert data.sequences().obs.shape == (3, 20_000)
