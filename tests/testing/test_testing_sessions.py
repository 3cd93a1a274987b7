"""Recommendation invariants, checked the way a user of learnloop would check them.

Only the public surface is used: ``learnloop.Engine``, ``learnloop.sim`` and
the strategies and checks of ``learnloop.testing``. Each property runs on the
in-memory store and on SQLite.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.content import compile_catalog, compile_filter
from learnloop.sim import SimClock, sample_course
from learnloop.testing import (
    answers,
    assert_session_invariants,
    content,
    events,
    learners,
    matching_filters,
    play_session,
    session_specs,
)

_files = itertools.count()


def _examples(n: int) -> settings:
    return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(params=["memory", "sqlite"])
def new_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Engine]:
    """A factory of loaded engines on the store under test (one fresh engine per example)."""

    def make(items: Any, catalog: Any, **kwargs: Any) -> Engine:
        if request.param == "memory":
            engine = Engine(**kwargs)
        else:
            engine = Engine.open(tmp_path / f"e{next(_files)}.db", **kwargs)
            request.addfinalizer(engine.close)
        engine.upsert_items(items)
        engine.upsert_catalog(catalog)
        return engine

    return make


@st.composite
def scripted_sessions(draw: st.DrawFn) -> tuple[Any, ...]:
    items, catalog = draw(content())
    return items, catalog, draw(session_specs(catalog, items)), draw(answers(min_size=2, max_size=10))


@_examples(40)
@given(scripted_sessions())
def test_invariants_hold_for_any_spec_and_answer_sequence(new_engine: Callable[..., Engine], drawn: Any) -> None:
    items, catalog, spec, script = drawn
    engine = new_engine(items, catalog, seed=3, clock=SimClock())
    run = play_session(engine, spec, script)
    assert_session_invariants(run)
    # the session was really played: a step per answer, or it ran out of items
    assert len(run.steps) == len(script) + 1 or run.steps[-1].recommendation is None


COURSE = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=4)


@_examples(30)
@given(session_specs(COURSE[1], COURSE[0]), answers(min_size=5, max_size=25))
def test_invariants_hold_on_a_course_with_many_scorable_items(
    new_engine: Callable[..., Engine], spec: Any, script: Any
) -> None:
    engine = new_engine(*COURSE, seed=3, clock=SimClock())
    assert_session_invariants(play_session(engine, spec, script))


@st.composite
def learner_sessions(draw: st.DrawFn) -> tuple[Any, ...]:
    items, catalog = draw(content(max_items=12))
    return items, catalog, draw(session_specs(catalog, items, max_interactions=30))


@_examples(25)
@given(learner_sessions(), learners())
def test_invariants_hold_for_simulated_learners(new_engine: Callable[..., Engine], drawn: Any, learner: Any) -> None:
    items, catalog, spec = drawn
    engine = new_engine(items, catalog, seed=11, clock=SimClock())
    run = play_session(engine, spec, learner=learner, steps=15)
    assert_session_invariants(run)


@_examples(15)
@given(learner_sessions(), learners())
def test_same_seed_same_learner_same_recommendations(
    new_engine: Callable[..., Engine], drawn: Any, learner: Any
) -> None:
    items, catalog, spec = drawn
    first, second = (
        play_session(new_engine(items, catalog, seed=5, clock=SimClock()), spec, learner=learner, steps=10)
        for _ in range(2)
    )
    assert [s.recommendation and s.recommendation.item_id for s in first.steps] == [
        s.recommendation and s.recommendation.item_id for s in second.steps
    ]
    assert [s.user_status for s in first.steps] == [s.user_status for s in second.steps]


@st.composite
def content_and_filter(draw: st.DrawFn) -> tuple[Any, ...]:
    items, catalog = draw(content())
    return items, catalog, draw(matching_filters(catalog, items))


@settings(max_examples=60, deadline=None)  # a whole catalog each: 60 cover its shapes
@given(content_and_filter())
def test_matching_filters_always_match_an_item(drawn: Any) -> None:
    items, catalog, flt = drawn
    index = compile_catalog(catalog, {i.item_id: i for i in items})
    assert compile_filter(index, flt).any()


@st.composite
def event_streams(draw: st.DrawFn, duplicates: bool) -> tuple[Any, ...]:
    items, catalog = draw(content())
    return items, catalog, draw(events(catalog, items, duplicates=duplicates))


@_examples(30)
@given(event_streams(duplicates=False))
def test_drawn_events_are_accepted_and_each_is_new(new_engine: Callable[..., Engine], drawn: Any) -> None:
    items, catalog, stream = drawn
    engine = new_engine(items, catalog, seed=1)
    assert engine.upsert_events("u1", stream) == len(stream)
    assert engine.upsert_events("u1", stream) == 0  # the same events again change nothing
    status = engine.user_status("u1", catalog.catalog_id, [None])[0]
    assert 0.0 <= status.progress <= 1.0
    if stream:
        assert status.last_interaction_timestamp is not None


@_examples(30)
@given(event_streams(duplicates=True))
def test_repeated_event_keys_count_once(new_engine: Callable[..., Engine], drawn: Any) -> None:
    items, catalog, stream = drawn
    engine = new_engine(items, catalog, seed=1)
    keys = set()
    for event in stream:
        keys.add((event.item_id, event.timestamp))
    new = sum(engine.upsert_events("u1", [event]) for event in stream)
    assert new == len(keys)
