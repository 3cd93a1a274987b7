"""The review's weakest covered item read topic by topic is the one the full computation scores highest.

With the catalog-size threshold of :mod:`learnloop.recommend._weakest` set to 0,
:class:`ReviewPolicy` reads each covered topic's least likely success; over
random catalogs, learner histories carried from step to step, eligibility
masks, previous recommendations and coarse predictions and recalls (so that
scores tie often), it picks exactly what :class:`ReferenceReviewPolicy` picks.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop.content import CatalogIndex, compile_catalog
from learnloop.recommend import LearnerView, ReviewPolicy, policies
from learnloop.sim import sample_course
from learnloop.testing.reference_policies import ReferenceReviewPolicy
from learnloop.testing.strategies import content
from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure

_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _catalog(draw: st.DrawFn) -> CatalogIndex:
    if draw(st.booleans()):
        items, catalog = draw(content(max_items=14, max_topics=7))
    else:
        items, catalog = sample_course(
            n_chapters=draw(st.integers(1, 3)),
            topics_per_chapter=draw(st.integers(1, 4)),
            items_per_topic=draw(st.integers(1, 6)),
            with_theory=draw(st.booleans()),
            seed=draw(st.integers(0, 1000)),
        )
    return compile_catalog(catalog, {i.item_id: i for i in items})


def _model(index: CatalogIndex) -> LearnerModel:
    params = ItemParams.from_catalog(
        item_topic=index.item_topic, difficulty=index.difficulty, scorable=index.scorable, is_theory=index.is_theory
    )
    return LearnerModel(TopicStructure.from_arrays(index.topic_parent, index.prerequisite_edges), params)


@_SETTINGS
@given(_catalog(), st.integers(0, 2**32 - 1), st.integers(0, 3))
def test_the_review_picks_what_the_full_computation_picks(index: CatalogIndex, seed: int, min_coverage: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(policies, "MIN_COVERED", 0)  # every catalog is read topic by topic
        _review(index, seed, min_coverage)


def _review(index: CatalogIndex, seed: int, min_coverage: int) -> None:
    fast, reference = ReviewPolicy(min_coverage=min_coverage), ReferenceReviewPolicy(min_coverage=min_coverage)
    model = _model(index)
    rng = np.random.default_rng(seed)
    n = index.n_items
    kept = rng.random(n) < 0.3 + 0.7 * rng.random()
    kept.setflags(write=False)
    state = model.new_state()
    predictions = model.predictions(state)
    previous = None
    for k in range(20):
        # half the events on a few items, so that items gather attempts
        position = int(rng.integers(n if rng.random() < 0.5 else min(n, 3)))
        if rng.random() < 0.5 and previous is not None:
            position = previous  # the item recommended is answered
        kind = str(rng.choice(["attempt", "attempt", "view_theory", "skip"]))
        score = float(rng.choice([0.0, 0.5, 1.0])) if kind == "attempt" and index.scorable[position] else None
        fraction = 1.0 if kind == "view_theory" else None
        event = Event(item=position, kind=kind, timestamp=600.0 * k, score=score, fraction_completed=fraction)
        state = model.update(state, event)
        predictions = model.predictions(state, predictions)
        coarse = int(rng.integers(4))
        p = np.round(predictions.p, 1) if coarse & 1 else predictions.p
        recall = model.recall(state, 600.0 * k + float(rng.choice([0.0, 86400.0, 86400.0 * 60])))
        if coarse & 2:  # (to an integer, or to one decimal with coarse predictions)
            recall = np.round(recall, coarse & 1)
        eligible = kept if rng.random() < 0.6 else rng.random(n) < rng.random()
        ours, theirs = (
            LearnerView(index, p, model.items.a, recall=recall, state=state, predictions=predictions) for _ in range(2)
        )
        rng_ours, rng_theirs = np.random.default_rng(k), np.random.default_rng(k)
        got = fast.select(ours, eligible, previous=previous, rng=rng_ours)
        want = reference.select(theirs, eligible, previous=previous, rng=rng_theirs)
        assert got == want
        previous = None if got is None or rng.random() < 0.2 else got.position
