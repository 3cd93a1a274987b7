"""The step's incremental computation gives exactly what computing everything again gives.

Predictions carried from a learner's previous state (recomputing only the
topics whose belief changed), topic figures read off the items met, and the
engine's cache of predictions: over random catalogs, histories and sessions,
every prediction, status figure and recommendation equals the one computed
from scratch, bit for bit.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.content import compile_catalog
from learnloop.events import format_timestamp
from learnloop.recommend import AssessPolicy, LearnerView, LearnPolicy, ReviewPolicy
from learnloop.sim import SimClock, learner_for, sample_course
from learnloop.testing.strategies import content
from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure
from learnloop.tracing.predictions import Predictions, topic_sums

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _model_and_events(draw: st.DrawFn) -> tuple[LearnerModel, list[Event]]:
    n_topics = draw(st.integers(1, 7))
    parent = [draw(st.integers(-1, t - 1)) if t else -1 for t in range(n_topics)]
    edges = draw(st.lists(st.tuples(st.integers(0, n_topics - 1), st.integers(0, n_topics - 1)), max_size=4))
    edges = [(a, b) for a, b in edges if a != b]
    n_items = draw(st.integers(1, 30))
    topic = draw(st.lists(st.integers(0, n_topics - 1), min_size=n_items, max_size=n_items))
    difficulty = draw(st.lists(st.floats(0.05, 0.95), min_size=n_items, max_size=n_items))
    scorable = draw(st.lists(st.booleans(), min_size=n_items, max_size=n_items))
    items = ItemParams.from_catalog(
        item_topic=topic, difficulty=difficulty, scorable=scorable, is_theory=[not s for s in scorable]
    )
    options = draw(
        st.sampled_from(
            [{}, {"hierarchy": "additive"}, {"novelty": 0.7, "practice_gain": 0.1}, {"prerequisite_weight": 0.0}]
        )
    )
    model = LearnerModel(TopicStructure.from_arrays(parent, edges), items, **options)
    events = []
    for k in range(draw(st.integers(1, 25))):
        item = draw(st.integers(0, n_items - 1))
        kind = draw(st.sampled_from(["attempt", "attempt", "skip", "view_theory"]))
        score = draw(st.sampled_from([0.0, 1.0, 0.5])) if kind == "attempt" and scorable[item] else None
        fraction = draw(st.sampled_from([0.3, 1.0])) if kind == "view_theory" else None
        events.append(Event(item=item, kind=kind, timestamp=float(k * 60), score=score, fraction_completed=fraction))
    return model, events


@_SETTINGS
@given(_model_and_events(), st.integers(0, 2**32 - 1))
def test_carried_predictions_and_sums_equal_a_full_computation(
    case: tuple[LearnerModel, list[Event]], seed: int
) -> None:
    model, events = case
    rng = np.random.default_rng(seed)
    mask = rng.random(model.items.n_items) < 0.7
    mask.setflags(write=False)
    weights = [model.items.scorable, mask]
    state = model.new_state()
    carried = model.predictions(state)
    for w in weights:
        carried.sums(w)
    for event in events:
        state = model.update(state, event)
        carried = model.predictions(state, carried)
        fresh = model.predictions(state)
        assert np.array_equal(carried.p, fresh.p)
        assert np.array_equal(carried.p, model.predict(state))
        for w in weights:
            assert np.array_equal(carried.sums(w), fresh.sums(w))
            assert np.array_equal(carried.sums(w), topic_sums(model.runs, model.predict(state), w))
        via_carried = model.status(state, mask, predictions=carried)
        via_full = model.status(state, mask, p_correct=model.predict(state))
        assert via_carried == via_full


def _view(index, model: LearnerModel, state, predictions: Predictions | None) -> LearnerView:
    p = model.predict(state) if predictions is None else predictions.p
    return LearnerView(
        index=index,
        p_correct=p,
        discrimination=model.items.a,
        attempts=state.attempts.astype(np.int64),
        last_score=state.last_score,
        viewed=state.max_fraction,
        recall=model.recall(state, 10_000.0),
        last_seen=state.last_timestamp,
        state=None if predictions is None else state,
        predictions=predictions,
    )


@_SETTINGS
@given(content(max_items=12, max_topics=6), st.integers(0, 2**32 - 1))
def test_views_read_off_the_items_met_equal_views_over_every_item(drawn, seed: int) -> None:
    items, catalog = drawn
    index = compile_catalog(catalog, {i.item_id: i for i in items})
    params = ItemParams.from_catalog(
        item_topic=index.item_topic, difficulty=index.difficulty, scorable=index.scorable, is_theory=index.is_theory
    )
    model = LearnerModel(TopicStructure.from_arrays(index.topic_parent, index.prerequisite_edges), params)
    rng = np.random.default_rng(seed)
    state = model.new_state()
    carried = model.predictions(state)
    policies = [LearnPolicy(streak=2), ReviewPolicy(), AssessPolicy()]
    for k in range(12):
        position = int(rng.integers(index.n_items))
        kind = "attempt" if index.scorable[position] else str(rng.choice(["view_theory", "attempt", "skip"]))
        score = float(rng.random() < 0.6) if kind == "attempt" and index.scorable[position] else None
        state = model.update(state, Event(item=position, kind=kind, timestamp=60.0 * k, score=score))
        carried = model.predictions(state, carried)
        fast, full = _view(index, model, state, carried), _view(index, model, state, None)
        assert np.array_equal(fast.topic_attempts, full.topic_attempts)
        for mask in (rng.random(index.n_items) < 0.5, np.ones(index.n_items, dtype=bool)):
            assert fast.attempted_count(mask) == full.attempted_count(mask)
        assert np.array_equal(fast.topic_skill, full.topic_skill, equal_nan=True)
        for streak in (0, 1, 2):
            assert np.array_equal(fast.streaks(length=streak), full.streaks(length=streak))
            assert np.array_equal(
                fast.mastered(threshold=0.6, min_attempts=1, streak=streak),
                full.mastered(threshold=0.6, min_attempts=1, streak=streak),
            )
        eligible = rng.random(index.n_items) < 0.8
        for policy in policies:
            a = policy.select(fast, eligible, previous=None, rng=np.random.default_rng(k))
            b = policy.select(full, eligible, previous=None, rng=np.random.default_rng(k))
            assert a == b


def _full_engine(engine: Engine) -> Engine:
    """The engine computing every prediction and topic figure from scratch at each step."""
    learners = engine._learners
    plain_view = learners.view

    def fresh(app, user_id, model, entry, keep=True):
        return model.model.predictions(entry.state)

    def view(model, entry, predictions):
        out = plain_view(model, entry, predictions)
        return LearnerView(
            index=out.index,
            p_correct=out.p_correct,
            discrimination=out.discrimination,
            attempts=out.attempts,
            last_score=out.last_score,
            viewed=out.viewed,
            recall=out.recall,
            last_seen=out.last_seen,
            last_failed=out.last_failed,
        )

    learners.predictions = fresh  # type: ignore[method-assign]
    learners.view = view  # type: ignore[method-assign]
    return engine


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 2**16),
    st.sampled_from(["learn", "review", "assess"]),
    st.sampled_from([{}, {"include_topic_ids": ["ch1"]}, {"include_content_types": ["exercise"]}]),
)
def test_incremental_and_full_engines_recommend_and_report_the_same(seed: int, mode: str, flt: dict) -> None:
    items, catalog = sample_course(n_chapters=4, topics_per_chapter=4, items_per_topic=5)
    runs = []
    for full in (False, True):
        clock = SimClock()
        engine = Engine(seed=seed, clock=clock)
        if full:
            _full_engine(engine)
        engine.upsert_items(items)
        engine.upsert_catalog(catalog)
        index = engine.catalog_model(catalog.catalog_id).index
        learner = learner_for(index, seed=seed)
        # a history over most topics, so that an answer changes the beliefs of a few topics only
        rng = np.random.default_rng(seed)
        engine.upsert_events(
            "u",
            [
                {
                    "type": "attempt",
                    "item_id": index.item_ids[int(p)],
                    "catalog_id": catalog.catalog_id,
                    "timestamp": format_timestamp(clock.advance(30)),
                    "score": float(rng.random() < 0.6),
                }
                for p in rng.choice(np.flatnonzero(index.scorable), size=60)
            ],
        )
        context = engine.create_session(
            {"user_id": "u", "catalog_id": catalog.catalog_id, "mode": {"type": mode}, "filter": flt}
        )
        trace = []
        events: list[dict] = []
        for _ in range(25):
            step = engine.adaptive_step(context, events)
            status = step.user_status
            trace.append((step.recommendation, status, step.session_status))
            if step.recommendation is None:
                break
            rec = step.recommendation
            position = engine.catalog_model(catalog.catalog_id).index.position(rec.item_id, rec.topic_id)
            score = learner.respond(position, clock()) if position is not None else 1.0
            events = [
                {
                    "type": "attempt",
                    "timestamp": format_timestamp(clock.advance(40)),
                    "recommendation_context": rec.recommendation_context,
                    "score": float(score),
                }
            ]
        statuses = engine.user_status("u", catalog.catalog_id, [{}, flt])
        runs.append((trace, statuses))
    (fast_trace, fast_status), (full_trace, full_status) = runs
    assert len(fast_trace) == len(full_trace)
    for (rec_a, st_a, ss_a), (rec_b, st_b, ss_b) in zip(fast_trace, full_trace, strict=True):
        assert (rec_a is None) == (rec_b is None)
        if rec_a is not None:
            assert (rec_a.item_id, rec_a.topic_id, rec_a.reason) == (rec_b.item_id, rec_b.topic_id, rec_b.reason)
        assert st_a == st_b
        assert ss_a == ss_b
    assert fast_status == full_status
