"""Every policy honours one contract, and the pure session step is pinned by golden cases."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.recommend import AssessPolicy, LearnPolicy, Policy, ReviewPolicy, SessionSpec, SessionState
from learnloop.recommend.baselines import FixedOrderPolicy, RandomPolicy
from learnloop.recommend.step import eligible_positions, session_step
from learnloop.sim import sample_course

POLICIES: list[Policy] = [LearnPolicy(), ReviewPolicy(), AssessPolicy(), RandomPolicy(), FixedOrderPolicy()]
T0 = datetime(2025, 1, 1, tzinfo=UTC)

_ENGINE = Engine(seed=0)
_ITEMS, _CATALOG = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=4)
_ENGINE.upsert_items(_ITEMS)
_ENGINE.upsert_catalog(_CATALOG)
CID = _CATALOG.catalog_id
INDEX = _ENGINE.catalog_index(CID)
N = INDEX.n_items


def test_every_policy_has_the_same_select_signature() -> None:
    base = inspect.signature(Policy.select)
    for policy in POLICIES:
        assert inspect.signature(type(policy).select) == base, type(policy).__name__


_answers = st.lists(st.tuples(st.integers(0, N - 1), st.sampled_from([0.0, 0.5, 1.0])), max_size=25)


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: type(p).__name__)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=_answers,
    eligible=st.lists(st.booleans(), min_size=N, max_size=N),
    previous=st.none() | st.integers(0, N - 1),
    administered=st.lists(st.booleans(), min_size=N, max_size=N),
    seed=st.integers(0, 2**32 - 1),
    user=st.integers(0, 10**9),
)
def test_a_pick_is_eligible_and_none_only_on_an_empty_mask_or_when_the_policy_passes(
    policy: Policy,
    history: list[tuple[int, float]],
    eligible: list[bool],
    previous: int | None,
    administered: list[bool],
    seed: int,
    user: int,
) -> None:
    user_id = f"u{user}"
    _ENGINE.upsert_events(
        user_id,
        [
            {
                "type": "attempt",
                "timestamp": format_timestamp(T0 + timedelta(minutes=k)),
                "catalog_id": CID,
                "item_id": INDEX.item_ids[p],
                "topic_id": INDEX.topic_ids[INDEX.item_topic[p]],
                "score": s,
            }
            for k, (p, s) in enumerate(history)
        ],
    )
    view = _ENGINE.learner_view(user_id, CID)
    mask = np.asarray(eligible, dtype=bool)
    pick = policy.select(
        view,
        mask,
        previous=previous,
        rng=np.random.default_rng(seed),
        administered=np.asarray(administered, dtype=bool),
    )
    if not mask.any():
        assert pick is None
    elif pick is None:  # (review passes when nothing eligible is due)
        assert policy.passes
    else:
        assert 0 <= pick.position < N and mask[pick.position]
        assert pick.keyword and pick.description
    empty = policy.select(view, np.zeros(N, dtype=bool), previous=previous, rng=np.random.default_rng(seed))
    assert empty is None


# -- golden cases of the pure step --------------------------------------------------------------
def _session(**kwargs: object) -> SessionState:
    spec = SessionSpec.model_validate(
        {"user_id": "u", "catalog_id": CID, "mode": {"type": "learn"}, "filter": {}, **kwargs}
    )
    return SessionState(
        session_id="ab" * 12, spec=spec, started_at=T0, constraint_counts=(0,) * len(spec.constraints or ())
    )


def test_golden_first_step_of_a_new_learner_opens_the_first_topic_with_its_theory() -> None:
    view = _ENGINE.learner_view("golden-new", CID)
    session = _session()
    pick, after = session_step(session, view, np.ones(N, dtype=bool), (), LearnPolicy(), np.random.default_rng(0))
    assert pick is not None
    assert (INDEX.item_ids[pick.position], pick.keyword) == ("ch1-t1-theory", "content_progression")
    assert pick.description == "starting topic 'ch1-t1' with its theory"
    assert after.recommendation_count == 1
    assert (after.last_item, after.last_topic) == (
        INDEX.item_ids[pick.position],
        INDEX.topic_ids[INDEX.item_topic[pick.position]],
    )
    assert session.recommendation_count == 0  # the input is not changed


def test_golden_a_used_up_constraint_removes_its_items_and_counts_only_its_own() -> None:
    first_topic = INDEX.topic_ids[0]
    session = _session(
        constraints=[{"type": "max_recommendations", "value": 1, "filter": {"include_topic_ids": [first_topic]}}]
    )
    view = _ENGINE.learner_view("golden-new", CID)
    topic_mask = _ENGINE.filter_mask(CID, {"include_topic_ids": [first_topic]})
    everything = np.ones(N, dtype=bool)
    pick, after = session_step(session, view, everything, [topic_mask], LearnPolicy(), np.random.default_rng(0))
    assert pick is not None and topic_mask[pick.position]
    assert after.constraint_counts == (1,)
    # the constraint is used up: its items are no longer eligible, the rest still are
    assert not (eligible_positions(after, everything, [topic_mask]) & topic_mask).any()
    pick2, after2 = session_step(after, view, everything, [topic_mask], LearnPolicy(), np.random.default_rng(0))
    assert pick2 is not None and not topic_mask[pick2.position]
    assert after2.constraint_counts == (1,) and after2.recommendation_count == 2


def test_golden_nothing_eligible_gives_no_pick_and_the_same_session() -> None:
    session = _session()
    view = _ENGINE.learner_view("golden-new", CID)
    pick, after = session_step(session, view, np.zeros(N, dtype=bool), (), AssessPolicy(), np.random.default_rng(0))
    assert pick is None and after is session


def test_golden_assessment_never_repeats_an_assessed_item_while_others_remain() -> None:
    view = _ENGINE.learner_view("golden-new", CID)
    session = _session(mode={"type": "assess"})
    given: list[str] = []
    for _ in range(6):
        pick, session = session_step(
            session, view, np.ones(N, dtype=bool), (), AssessPolicy(), np.random.default_rng(1)
        )
        assert pick is not None
        given.append(INDEX.item_ids[pick.position])
        session = type(session)(
            **{**{f: getattr(session, f) for f in session.__slots__}, "assessed": (*session.assessed, given[-1])}
        )
    assert len(set(given)) == len(given)


def test_a_policy_that_picks_outside_the_mask_is_refused() -> None:
    class Rogue(Policy):
        name = "rogue"

        def select(self, view, eligible, *, previous, rng, administered=None):  # type: ignore[no-untyped-def]
            from learnloop.recommend import Pick

            return Pick(int(np.flatnonzero(~eligible)[0]), "exploration", "outside")

    mask = np.ones(N, dtype=bool)
    mask[0] = False
    with pytest.raises(ValueError, match="not eligible"):
        session_step(_session(), _ENGINE.learner_view("x", CID), mask, (), Rogue(), np.random.default_rng(0))
