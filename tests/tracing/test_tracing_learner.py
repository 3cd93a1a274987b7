"""The joined learner state: update/predict, topic graph, dedupe, serialisation, calibration."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.sim import SimulatedLearner
from learnloop.tracing import (
    Event,
    ItemParams,
    LearnerModel,
    LearnerState,
    TopicStructure,
    b_to_difficulty,
    expected_calibration_error,
    update_ability,
)

# topics: 0 root, 1 and 2 children of 0; 3 root with child 4; 2 requires 1
PARENT = [-1, 0, 0, -1, 3]
PREREQ = [(1, 2)]
ITEM_TOPIC = [1, 1, 2, 2, 4, 4, 1]
DIFFICULTY = [0.5, 0.7, 0.5, float("nan"), 0.3, 0.5, 0.5]
SCORABLE = [True, True, True, True, True, False, False]
THEORY = [False, False, False, False, False, False, True]
T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)


@pytest.fixture
def model() -> LearnerModel:
    topics = TopicStructure.from_arrays(PARENT, PREREQ)
    items = ItemParams.from_catalog(item_topic=ITEM_TOPIC, difficulty=DIFFICULTY, scorable=SCORABLE, is_theory=THEORY)
    return LearnerModel(topics, items, drift=0.0)


def attempt(item: int, score: float | None, minutes: float = 0.0) -> Event:
    return Event(item=item, kind="attempt", score=score, timestamp=T0 + timedelta(minutes=minutes), time_spent_ms=1000)


def test_fresh_state_predicts_cold_start(model: LearnerModel) -> None:
    p = model.predict(model.new_state())
    # theta ~ N(0, 1 + 0.3 * levels): at b = 0 exactly one half, harder items lower
    assert p[0] == pytest.approx(0.5) and p[1] < 0.5 < p[4]


def test_golden_update_through_the_learner_model(model: LearnerModel) -> None:
    state = model.update(model.new_state(), attempt(0, 1.0))
    # topic 1 had no evidence: prior borrowed from the overall node N(0, 1) widened by 2 levels * 0.3
    m, v = update_ability(0.0, 1.6, b=0.0, score=1.0)
    assert state.ability[1, 0] == pytest.approx(m) and state.ability[1, 1] == pytest.approx(v)
    # the overall node itself is updated from N(0, 1)
    m_all, v_all = update_ability(0.0, 1.0, b=0.0, score=1.0)
    assert state.ability[-1, 0] == pytest.approx(m_all) and state.ability[-1, 1] == pytest.approx(v_all)


def test_evidence_informs_parent_successor_and_overall(model: LearnerModel) -> None:
    s0 = model.new_state()
    s1 = model.update(s0, attempt(0, 1.0))
    mean0, sd0 = model.topic_beliefs(s0)
    mean1, sd1 = model.topic_beliefs(s1)
    assert mean1[1] > mean1[0] > mean0[0]  # the topic, then its parent
    assert mean1[2] > mean0[2]  # topic 2 depends on topic 1
    assert mean1[4] > mean0[4]  # another root's topic learns from the overall node
    assert mean1[2] - mean0[2] < mean1[1] - mean0[1]
    assert sd1[1] < sd0[1]


def test_new_topic_starts_from_parent(model: LearnerModel) -> None:
    state = model.new_state()
    for k in range(6):
        state = model.update(state, attempt(2, 0.0, k))  # topic 2 (child of 0) fails
    mean, _ = model.topic_beliefs(state)
    assert mean[0] < -0.5 and mean[1] < -0.3 and mean[1] > mean[0] - 1e-9


def test_update_does_not_mutate_and_is_deterministic(model: LearnerModel) -> None:
    s0 = model.new_state()
    before = s0.to_bytes()
    events = [attempt(i % 5, float(i % 2), i) for i in range(12)]
    s1 = model.update_many(s0, events)
    assert s0.to_bytes() == before
    assert model.update_many(s0, events).to_bytes() == s1.to_bytes()
    with pytest.raises(ValueError):
        s1.ability[0, 0] = 3.0  # states are read-only


def test_single_updates_equal_batch(model: LearnerModel) -> None:
    events = [attempt(i % 5, float(i % 3 > 0), i) for i in range(10)]
    state = model.new_state()
    for e in events:
        state = model.update(state, e)
    np.testing.assert_array_equal(state.ability, model.update_many(model.new_state(), events).ability)


def test_exact_duplicate_changes_nothing_and_latest_version_wins(model: LearnerModel) -> None:
    state = model.update(model.new_state(), attempt(0, 1.0))
    again = model.update(state, attempt(0, 1.0))
    assert again.to_bytes() == state.to_bytes()
    # an overwrite of the same key: replay keeps only the latest version
    history = [attempt(0, 1.0), attempt(1, 0.0, 1), attempt(0, 0.0)]
    replayed = model.replay(history)
    expected = model.update_many(model.new_state(), [attempt(0, 0.0), attempt(1, 0.0, 1)])
    np.testing.assert_array_equal(replayed.ability, expected.ability)
    assert replayed.attempts[0] == 1 and replayed.n_events == 2
    # replay is order independent
    assert model.replay(history[::-1][1:] + [history[2]]).to_bytes() == replayed.to_bytes()


def test_bookkeeping_and_status(model: LearnerModel) -> None:
    events = [
        attempt(0, 1.0),
        attempt(0, 0.5, 1),
        Event(item=1, kind="skip", timestamp=T0 + timedelta(minutes=2)),
        Event(
            item=6, kind="view_theory", fraction_completed=0.4, time_spent_ms=500, timestamp=T0 + timedelta(minutes=3)
        ),
        Event(
            item=6, kind="view_theory", fraction_completed=0.2, time_spent_ms=500, timestamp=T0 + timedelta(minutes=4)
        ),
        attempt(5, None, 5),  # non-scorable exercise: counts for progress, no evidence
    ]
    state = model.update_many(model.new_state(), events)
    assert state.attempts.tolist() == [2, 0, 0, 0, 0, 1, 0]
    assert state.last_score[0] == 0.5 and math.isnan(state.last_score[1])
    assert state.max_fraction[6] == 0.4
    everything = np.ones(7, bool)
    status = model.status(state, everything)
    assert status.progress == pytest.approx((1 + 1 + 0.4) / 7)
    assert status.time_spent_ms == 2000 + 1000 + 1000
    assert status.last_interaction_timestamp == pytest.approx((T0 + timedelta(minutes=5)).timestamp())
    assert status.proficiency is not None and 0 < status.proficiency < 1
    assert status.display_skill <= status.skill_level
    only_theory = np.zeros(7, bool)
    only_theory[6] = True
    assert model.status(state, only_theory).proficiency is None


def test_scorable_attempt_without_score_is_rejected(model: LearnerModel) -> None:
    with pytest.raises(ValueError, match="needs a score"):
        model.update(model.new_state(), attempt(0, None))
    with pytest.raises(ValueError, match="out of range") as err:
        model.update(model.new_state(), Event(item=99, kind="attempt", score=2.0, timestamp=0.0))
    assert "score must lie" in str(err.value)


def test_recall_decays_with_time(model: LearnerModel) -> None:
    state = model.update(model.new_state(), attempt(0, 1.0))
    r_now = model.recall(state, T0)
    r_later = model.recall(state, T0 + timedelta(days=30))
    assert r_now[1] == pytest.approx(1.0) and 0 < r_later[1] < 0.9
    assert np.isnan(r_now[3])
    assert state.memory_of(1) is not None and state.memory_of(3) is None


def test_serialisation_round_trips(model: LearnerModel) -> None:
    state = model.update_many(model.new_state(), [attempt(i % 5, float(i % 2), i) for i in range(8)])
    via_json = LearnerState.from_dict(json.loads(json.dumps(state.to_dict())))
    via_bytes = LearnerState.from_bytes(state.to_bytes())
    for other in (via_json, via_bytes):
        for name in ("ability", "memory", "items", "signature"):
            np.testing.assert_array_equal(getattr(other, name), getattr(state, name))
        assert other.n_events == state.n_events
        np.testing.assert_array_equal(model.predict(other), model.predict(state))


def test_remap_carries_state_to_changed_catalog(model: LearnerModel) -> None:
    state = model.update(model.new_state(), attempt(0, 1.0))
    moved = state.remap(item_map=[3, -1, 0, 1, 2, 4, 5], n_items=8, topic_map=[0, 1, 2, 3, 4], n_topics=6)
    assert moved.attempts[3] == 1 and moved.items.shape == (8, 6) and moved.ability.shape == (7, 3)
    np.testing.assert_array_equal(moved.ability[-1], state.ability[-1])


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 6), st.sampled_from(["attempt", "skip", "view_theory"]), st.floats(0, 1), st.floats(0, 1e7)
        ),
        max_size=30,
    )
)
def test_no_nan_for_any_event_sequence(events: list[tuple[int, str, float, float]]) -> None:
    topics = TopicStructure.from_arrays(PARENT, PREREQ)
    items = ItemParams.from_catalog(item_topic=ITEM_TOPIC, difficulty=DIFFICULTY, scorable=SCORABLE, is_theory=THEORY)
    model = LearnerModel(topics, items)
    state = model.new_state()
    for item, kind, score, ts in events:
        state = model.update(state, Event(item=item, kind=kind, score=score, fraction_completed=score, timestamp=ts))  # type: ignore[arg-type]
    p = model.predict(state)
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert np.all(np.isfinite(state.ability)) and np.all(state.ability[:, 1] > 0)


def test_topic_structure_validation() -> None:
    with pytest.raises(ValueError, match="invalid parent") as err:
        TopicStructure.from_arrays([-1, 5, 1], prerequisites=[(0, 9)])
    assert "prerequisite" in str(err.value)
    with pytest.raises(ValueError, match="cycle"):
        TopicStructure.from_arrays([1, 0])


def test_online_predictions_are_calibrated_on_simulated_learners() -> None:
    rng = np.random.default_rng(0)
    n = 300
    item_topic = rng.integers(2, 6, n)
    b = rng.normal(0.0, 1.0, n)
    parent = [-1, -1, 0, 0, 1, 1]
    topics = TopicStructure.from_arrays(parent, [(2, 3)])
    items = ItemParams.from_catalog(
        item_topic=item_topic, difficulty=b_to_difficulty(b), scorable=np.ones(n, bool), is_theory=np.zeros(n, bool)
    )
    model = LearnerModel(topics, items)
    ys, ps = [], []
    for seed in range(250):
        learner = SimulatedLearner(
            topic_parent=parent, item_topic=item_topic, b=b, seed=seed, learn_rate=0.0, guess=0.0, slip=0.0
        )
        state = model.new_state()
        for k, item in enumerate(rng.integers(0, n, 40).tolist()):
            ps.append(float(model.predict(state, [item])[0]))
            event = learner.attempt_event(item, k * 600.0)
            ys.append(event.score)
            state = model.update(state, event)
    assert expected_calibration_error(ys, ps) <= 0.03


def test_additive_hierarchy_sums_the_chain_and_shares_evidence_with_the_general_ability() -> None:
    topics = TopicStructure.from_arrays([-1, 0, 0])
    items = ItemParams.from_catalog(item_topic=[1, 1, 2], difficulty=[0.5] * 3, scorable=[True] * 3,
                                    is_theory=[False] * 3)  # fmt: skip
    model = LearnerModel(topics, items, hierarchy="additive", topic_var=0.3, prior_var=1.0)
    state = model.new_state()
    mean, sd = model.topic_beliefs(state)
    # a leaf topic's ability: overall + chapter deviation + its own: N(0, 1 + 0.3 + 0.3)
    assert mean.tolist() == [0.0, 0.0, 0.0] and sd[1] == pytest.approx(np.sqrt(1.6))
    for k in range(3):
        state = model.update(state, Event(item=0, kind="attempt", score=1.0, timestamp=float(k)))
    mean, sd = model.topic_beliefs(state)
    ability = state.ability
    assert mean[1] == pytest.approx(ability[3, 0] + ability[0, 0] + ability[1, 0])
    # the general ability and the shared chapter moved, so the sibling topic rose too, less than topic 1
    assert mean[1] > mean[2] > 0.0 and ability[3, 0] > 0.0
    with pytest.raises(ValueError, match="hierarchy must be"):
        LearnerModel(topics, items, hierarchy="flat")
