"""The assessment's most informative items read topic by topic equal those of the full computation.

:func:`~learnloop.recommend._informative.most_informative` either gives the
``k`` most informative positions of the pool in the order of the full
computation (``np.argpartition`` then a stable sort over every position), or
None (ties, too few topics), and :class:`AssessPolicy` then picks, with the
same draws, what :class:`ReferenceAssessPolicy` picks over states carried from
step to step.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop.content import CatalogIndex, compile_catalog
from learnloop.recommend import AssessPolicy, LearnerView, _informative, policies
from learnloop.sim import sample_course
from learnloop.testing.reference_policies import ReferenceAssessPolicy
from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure

_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _catalog(draw: st.DrawFn) -> CatalogIndex:
    items, catalog = sample_course(
        n_chapters=draw(st.integers(1, 3)),
        topics_per_chapter=draw(st.integers(1, 4)),
        items_per_topic=draw(st.integers(1, 6)),
        with_theory=draw(st.booleans()),
        seed=draw(st.integers(0, 1000)),
    )
    return compile_catalog(catalog, {i.item_id: i for i in items})


def _full(view: LearnerView, pool: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k most informative positions of the pool as the full computation orders them."""
    positions = np.flatnonzero(pool)
    info = view.information_at(positions)
    best = np.argpartition(-info, k - 1)[:k]
    best = best[np.argsort(-info[best], kind="stable")]
    return positions[best], info[best]


def _view(index: CatalogIndex, p: np.ndarray, a: np.ndarray) -> LearnerView:
    return LearnerView(
        index,
        p,
        a,
        np.zeros(index.n_items),
        np.zeros(index.n_items),
        np.zeros(index.n_items),
        recall=np.zeros(index.n_topics),
    )


@_SETTINGS
@given(_catalog(), st.integers(0, 2**32 - 1), st.integers(1, 6), st.sampled_from([0, 0, 1, 2]))
def test_the_most_informative_items_are_those_of_the_full_computation(
    index: CatalogIndex, seed: int, k: int, decimals: int
) -> None:
    rng = np.random.default_rng(seed)
    n = index.n_items
    p = rng.random(n)
    if decimals:  # coarse predictions: ties are frequent
        p = np.round(p, decimals)
    a = rng.choice([1.0, 0.5, 2.0], n) if rng.random() < 0.5 else np.ones(n)
    view = _view(index, p, a)
    pool = rng.random(n) < 0.5 + 0.5 * rng.random()
    found = _informative.most_informative(view, pool, k)
    if found is None:
        return
    assert np.count_nonzero(pool) > k
    positions, info = _full(view, pool, k)
    assert found[0].tolist() == positions.tolist()
    assert found[1].tobytes() == info.tobytes()


def test_ties_and_small_pools_are_left_to_the_full_computation() -> None:
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=4, items_per_topic=5, with_theory=False)
    index = compile_catalog(catalog, {i.item_id: i for i in items})
    n = index.n_items
    a = np.ones(n)
    spread = _view(index, np.linspace(0.01, 0.49, n), a)  # information rises with the position
    found = _informative.most_informative(spread, np.ones(n, dtype=bool), 3)
    assert found is not None
    assert found[0].tolist() == [n - 1, n - 2, n - 3]
    tied = _view(index, np.full(n, 0.3), a)
    assert _informative.most_informative(tied, np.ones(n, dtype=bool), 3) is None
    one_topic = np.zeros(n, dtype=bool)
    one_topic[:3] = True
    assert _informative.most_informative(spread, one_topic, 3) is None


def _model(index: CatalogIndex) -> LearnerModel:
    params = ItemParams.from_catalog(
        item_topic=index.item_topic, difficulty=index.difficulty, scorable=index.scorable, is_theory=index.is_theory
    )
    return LearnerModel(TopicStructure.from_arrays(index.topic_parent, index.prerequisite_edges), params)


@_SETTINGS
@given(_catalog(), st.integers(0, 2**32 - 1), st.integers(1, 6), st.sampled_from([0.0, 0.02, 0.5]))
def test_the_assessment_picks_what_the_full_computation_picks(
    index: CatalogIndex, seed: int, top_k: int, tolerance: float
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(policies, "MIN_POOL", 0)  # every pool is read topic by topic
        _assess(index, seed, top_k, tolerance)


def _assess(index: CatalogIndex, seed: int, top_k: int, tolerance: float) -> None:
    fast, reference = (
        AssessPolicy(top_k=top_k, tolerance=tolerance),
        ReferenceAssessPolicy(top_k=top_k, tolerance=tolerance),
    )
    model = _model(index)
    rng = np.random.default_rng(seed)
    n = index.n_items
    eligible = rng.random(n) < 0.3 + 0.7 * rng.random()
    eligible.setflags(write=False)
    administered = np.zeros(n, dtype=bool)
    state = model.new_state()
    predictions = model.predictions(state)
    previous = None
    for k in range(12):
        step_seed = int(rng.integers(2**32))
        rng_ours, rng_theirs = np.random.default_rng(step_seed), np.random.default_rng(step_seed)
        ours, theirs = (
            LearnerView(index, predictions.p, model.items.a, recall=recall, state=state, predictions=predictions)
            for recall in (model.recall(state, 0.0), model.recall(state, 0.0))
        )
        got = fast.select(ours, eligible, previous=previous, rng=rng_ours, administered=administered)
        want = reference.select(theirs, eligible, previous=previous, rng=rng_theirs, administered=administered)
        assert got == want
        assert rng_ours.bit_generator.state == rng_theirs.bit_generator.state
        a, p = model.items.a, predictions.p
        assert ours.information.tobytes() == (a * a * p * (1.0 - p)).tobytes()  # (carried from state to state)
        if got is None:
            break
        previous = got.position
        administered = administered.copy()
        administered[got.position] = True
        score = float(rng.choice([0.0, 1.0])) if index.scorable[got.position] else None
        state = model.update(state, Event(item=got.position, kind="attempt", timestamp=60.0 * k, score=score))
        predictions = model.predictions(state, predictions)
