"""The policies read the eligible positions topic by topic and pick exactly what a full computation picks.

Over random catalogs (random topic forests and prerequisites, sample courses),
random learner histories, eligibility masks (cached read-only masks reused
from step to step, and fresh writable ones), previous recommendations,
administered items and policy settings, each policy's pick (position, reason
keyword, description), its draws from the generator, and the session after the
step equal those of the reference policies of
:mod:`learnloop.testing.reference_policies`, which compute every figure over
all positions.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop.content import CatalogIndex, compile_catalog
from learnloop.recommend import AssessPolicy, LearnerView, LearnPolicy, Policy, ReviewPolicy, SessionSpec, SessionState
from learnloop.recommend.candidates import Candidates, mask_topics, without
from learnloop.recommend.policies import _closest
from learnloop.recommend.step import eligible_positions, session_step
from learnloop.recommend.view import topic_exercises
from learnloop.sim import sample_course
from learnloop.testing.reference_policies import (
    ReferenceAssessPolicy,
    ReferenceLearnPolicy,
    ReferenceReviewPolicy,
    reference_mastered,
    reference_topic_figures,
)
from learnloop.testing.reference_policies import _closest as reference_closest
from learnloop.testing.strategies import content
from learnloop.tracing import Event, ItemParams, LearnerModel, LearnerState, TopicStructure
from learnloop.tracing.predictions import Predictions

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
T0 = datetime(2025, 1, 1, tzinfo=UTC)


@st.composite
def _catalog(draw: st.DrawFn) -> CatalogIndex:
    if draw(st.booleans()):
        items, catalog = draw(content(max_items=14, max_topics=7))
    else:
        items, catalog = sample_course(
            n_chapters=draw(st.integers(1, 3)),
            topics_per_chapter=draw(st.integers(1, 3)),
            items_per_topic=draw(st.integers(1, 5)),
            with_theory=draw(st.booleans()),
            seed=draw(st.integers(0, 1000)),
        )
    return compile_catalog(catalog, {i.item_id: i for i in items})


@st.composite
def _learn_policies(draw: st.DrawFn) -> LearnPolicy:
    if draw(st.integers(0, 3)) == 0:  # every practised topic mastered and due for re-insertion
        return LearnPolicy(mastery_threshold=0.0, min_attempts=0, retention_threshold=1.01, exploration=0.0)
    return LearnPolicy(
        target_success=draw(st.sampled_from([0.5, 0.7, 0.9])),
        mastery_threshold=draw(st.sampled_from([0.0, 0.3, 0.6, 0.8, 1.01])),
        min_attempts=draw(st.integers(0, 3)),
        streak=draw(st.integers(0, 2)),
        retention_threshold=draw(st.sampled_from([0.0, 0.5, 0.9, 1.01])),
        exploration=draw(st.sampled_from([0.0, 0.05, 0.5, 1.0])),
        theory_first=draw(st.booleans()),
    )


_POLICIES = st.one_of(
    _learn_policies().map(lambda p: (p, ReferenceLearnPolicy(**_fields(p)))),
    st.sampled_from([None, 0.3, 0.9, 0.999]).map(
        lambda r: (ReviewPolicy(desired_retention=r), ReferenceReviewPolicy(desired_retention=r))
    ),
    st.tuples(st.integers(1, 6), st.sampled_from([0.0, 0.02, 0.5])).map(
        lambda kt: (AssessPolicy(top_k=kt[0], tolerance=kt[1]), ReferenceAssessPolicy(top_k=kt[0], tolerance=kt[1]))
    ),
)


def _fields(policy: LearnPolicy) -> dict[str, object]:
    names = ("target_success", "mastery_threshold", "min_attempts", "streak", "retention_threshold", "exploration")
    return {n: getattr(policy, n) for n in (*names, "theory_first")}


def _model(index: CatalogIndex) -> LearnerModel:
    params = ItemParams.from_catalog(
        item_topic=index.item_topic, difficulty=index.difficulty, scorable=index.scorable, is_theory=index.is_theory
    )
    return LearnerModel(TopicStructure.from_arrays(index.topic_parent, index.prerequisite_edges), params)


def _event(index: CatalogIndex, rng: np.random.Generator, k: int) -> Event:
    # (half the events on a few items, so that items gather many attempts)
    position = int(rng.integers(index.n_items if rng.random() < 0.5 else min(index.n_items, 3)))
    kind = str(rng.choice(["attempt", "attempt", "attempt", "view_theory", "skip"]))
    score = float(rng.choice([0.0, 0.5, 1.0, 1.0])) if kind == "attempt" and index.scorable[position] else None
    fraction = float(rng.choice([0.4, 1.0])) if kind == "view_theory" else None
    return Event(item=position, kind=kind, timestamp=600.0 * k, score=score, fraction_completed=fraction)


def _views(
    index: CatalogIndex,
    model: LearnerModel,
    state: LearnerState,
    predictions: Predictions,
    now: float,
    failed: int | None,
    coarse: int = 0,
    gating: float | None = None,
) -> tuple[LearnerView, LearnerView]:
    """Two views of the same learner (one for each policy: a view keeps what it computed);
    ``coarse`` rounds the predictions (1) to one decimal, the recall (2) to an integer, or both (3)
    (the recall then to one decimal), so that ties are frequent."""
    p, recall = predictions.p, model.recall(state, now)
    if coarse & 1:
        p = np.round(p, 1)
    if coarse & 2:
        recall = np.round(recall, coarse & 1)

    def one() -> LearnerView:
        return LearnerView(
            index=index,
            p_correct=p,
            discrimination=model.items.a,
            recall=recall,
            last_failed=failed,
            state=state,
            predictions=predictions,
            due_at_of=lambda r: model.due_at(state, r),
            prerequisite_gating=gating,
        )

    return one(), one()


def _read_only(mask: np.ndarray) -> np.ndarray:
    mask.setflags(write=False)
    return mask


@_SETTINGS
@given(_catalog(), _POLICIES, st.integers(0, 2**32 - 1))
def test_the_policies_pick_what_the_full_computation_picks(
    index: CatalogIndex, policies: tuple[Policy, Policy], seed: int
) -> None:
    fast, reference = policies
    model = _model(index)
    rng = np.random.default_rng(seed)
    n = index.n_items
    kept = _read_only(rng.random(n) < rng.random())  # one cached mask object, read at every step
    state = model.new_state()
    predictions = model.predictions(state)
    failed: int | None = None
    for k in range(14):
        event = _event(index, rng, k)
        state = model.update(state, event)
        predictions = model.predictions(state, predictions)
        if event.kind == "attempt" and event.score is not None:
            failed = event.item if event.score < 0.5 else None
        now = 600.0 * k + float(rng.choice([0.0, 3600.0, 86400.0 * 30]))
        # learn mode's ways: progression (gating not fitted or strong; a lower bar at 1.0) and spread (weak gating)
        gating = (None, 0.0, 0.5, 1.0, 2.0)[int(rng.integers(5))]
        ours, theirs = _views(index, model, state, predictions, now, failed, coarse=int(rng.integers(4)), gating=gating)
        choice = int(rng.integers(4))
        if choice == 0:
            eligible = kept
        elif choice == 1:
            eligible = rng.random(n) < rng.random()  # a writable mask, changed after the pick
        elif choice == 2:
            eligible = _read_only(np.ones(n, dtype=bool))
        else:
            eligible = _read_only(np.zeros(n, dtype=bool))
        previous = None if rng.random() < 0.2 else int(rng.integers(n))
        administered = rng.random(n) < rng.random() if rng.random() < 0.7 else None
        step_seed = int(rng.integers(2**32))
        rng_ours, rng_theirs = np.random.default_rng(step_seed), np.random.default_rng(step_seed)
        got = fast.select(ours, eligible, previous=previous, rng=rng_ours, administered=administered)
        want = reference.select(theirs, eligible, previous=previous, rng=rng_theirs, administered=administered)
        assert got == want
        assert rng_ours.bit_generator.state == rng_theirs.bit_generator.state
        if eligible.flags.writeable and n > 1:
            eligible[int(rng.integers(n))] ^= True  # a writable mask may change between steps
        a, p = model.items.a, ours.p_correct
        assert np.array_equal(ours.information, a * a * p * (1.0 - p))
        figures = reference_topic_figures(theirs)
        assert np.array_equal(ours.topic_attempts, figures[0])
        count = topic_exercises(index).scorable_count
        want_skill = np.where(count > 0, figures[1] / np.maximum(count, 1.0), np.nan)
        assert np.array_equal(ours.topic_skill, want_skill, equal_nan=True)
        if isinstance(fast, LearnPolicy):
            for threshold, attempts, streak in ((fast.mastery_threshold, fast.min_attempts, fast.streak), (0.5, 1, 2)):
                assert np.array_equal(
                    ours.mastered(threshold=threshold, min_attempts=attempts, streak=streak),
                    reference_mastered(theirs, threshold=threshold, min_attempts=attempts, streak=streak),
                )


def _old_eligible(session: SessionState, mask: np.ndarray, constraint_masks: list[np.ndarray]) -> np.ndarray:
    eligible = mask.copy()
    for constraint, cmask, used in zip(session.spec.constraints or (), constraint_masks, session.constraint_counts):
        if used + 1 > math.floor(constraint.value):
            eligible &= ~cmask
    return eligible


@_SETTINGS
@given(_catalog(), _POLICIES, st.integers(0, 2**32 - 1), st.lists(st.sampled_from([0.0, 1.0, 2.5, 4.0]), max_size=3))
def test_sessions_step_as_with_the_full_computation(
    index: CatalogIndex, policies: tuple[Policy, Policy], seed: int, limits: list[float]
) -> None:
    fast, reference = policies
    model = _model(index)
    rng = np.random.default_rng(seed)
    n = index.n_items
    mask = _read_only(rng.random(n) < 0.5 + 0.5 * rng.random())
    constraint_masks = [_read_only(rng.random(n) < rng.random()) for _ in limits]
    spec = SessionSpec.model_validate(
        {
            "user_id": "u",
            "catalog_id": "c",
            "mode": {"type": fast.name},
            "filter": {},
            "constraints": [{"type": "max_recommendations", "value": v, "filter": {}} for v in limits] or None,
        }
    )
    ours = theirs = SessionState(session_id="s" * 24, spec=spec, started_at=T0, constraint_counts=(0,) * len(limits))
    state = model.new_state()
    predictions = model.predictions(state)
    for k in range(10):
        event = _event(index, rng, k)
        state = model.update(state, event)
        predictions = model.predictions(state, predictions)
        failed = event.item if event.kind == "attempt" and event.score == 0.0 else None
        view_ours, view_theirs = _views(index, model, state, predictions, 600.0 * k, failed, coarse=k % 4)
        assert np.array_equal(
            eligible_positions(ours, mask, constraint_masks), _old_eligible(ours, mask, constraint_masks)
        )
        step_seed = int(rng.integers(2**32))
        pick_ours, after_ours = session_step(
            ours, view_ours, mask, constraint_masks, fast, np.random.default_rng(step_seed)
        )
        pick_theirs, after_theirs = session_step(
            theirs, view_theirs, mask, constraint_masks, reference, np.random.default_rng(step_seed)
        )
        assert pick_ours == pick_theirs
        assert after_ours == after_theirs
        if pick_ours is not None and fast.name == "assess":
            item = index.item_ids[pick_ours.position]
            after_ours = after_theirs = replace(after_ours, assessed=(*after_ours.assessed, item))
        ours, theirs = after_ours, after_theirs


class _Index:
    """What :class:`Candidates` reads of a compiled catalog, with topics in any order over the positions."""

    def __init__(self, item_topic: np.ndarray, is_theory: np.ndarray, n_topics: int) -> None:
        self.item_topic, self.is_theory, self.n_topics = item_topic, is_theory, n_topics
        self.scorable = ~is_theory
        self.n_items = item_topic.size
        self._derived: dict[str, object] = {}

    def derived(self, name: str, make):  # type: ignore[no-untyped-def]
        if name not in self._derived:
            self._derived[name] = make(self)
        return self._derived[name]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda n_topics: st.lists(
            st.tuples(st.integers(0, n_topics - 1), st.booleans(), st.booleans()), min_size=1
        ).map(lambda rows: (n_topics, rows))
    ),
    st.booleans(),
    st.booleans(),
    st.integers(0, 100),
)
def test_candidates_read_per_topic_equal_the_mask_without_the_previous_position(
    drawn: tuple[int, list[tuple[int, bool, bool]]], in_order: bool, read_only: bool, previous: int
) -> None:
    n_topics, rows = drawn
    if in_order:
        rows = sorted(rows, key=lambda r: r[0])
    item_topic = np.array([r[0] for r in rows], dtype=np.intp)
    index = _Index(item_topic, np.array([r[1] for r in rows]), n_topics)
    eligible = np.array([r[2] for r in rows])
    eligible.setflags(write=not read_only)
    before = previous if previous < index.n_items else None
    for _ in range(2):  # (the second time from the figures kept for a read-only mask)
        candidates = Candidates(index, eligible, before)  # type: ignore[arg-type]
        full = without(eligible, before)
        assert np.array_equal(candidates.mask(), full)
        assert [p in candidates for p in range(index.n_items)] == full.tolist()
        for t in range(n_topics):
            mine = full & (item_topic == t)
            assert candidates.count[t] == np.count_nonzero(mine)
            assert candidates.exercises[t] == np.count_nonzero(mine & ~index.is_theory)
            assert candidates.first[t] == (np.flatnonzero(mine)[0] if mine.any() else index.n_items)
            assert candidates.in_topic(t).tolist() == np.flatnonzero(mine).tolist()
        topics = np.flatnonzero(candidates.count > 0)
        assert candidates.in_topics(topics).tolist() == np.flatnonzero(full).tolist()
        figures = mask_topics(index, eligible)  # type: ignore[arg-type]
        assert np.array_equal(figures.exercise_mask, eligible & ~index.is_theory)
        assert np.array_equal(figures.scorable_mask, eligible & index.scorable)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_catalog(), st.integers(0, 2**32 - 1))
def test_the_closest_item_reads_attempts_at_the_items_met_as_the_full_computation(
    index: CatalogIndex, seed: int
) -> None:
    model = _model(index)
    rng = np.random.default_rng(seed)
    state = model.new_state()
    predictions = model.predictions(state)
    for k in range(40):
        state = model.update(state, _event(index, rng, k))
    predictions = model.predictions(state, predictions)
    ours, theirs = _views(index, model, state, predictions, 0.0, None, coarse=int(rng.integers(4)))
    for _ in range(5):
        mask = rng.random(index.n_items) < rng.random()
        if not mask.any():
            continue
        target = float(rng.choice([0.0, 0.5, 0.7, 1.0]))
        assert _closest(ours, np.flatnonzero(mask), target) == reference_closest(theirs, mask, target)
