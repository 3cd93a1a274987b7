"""The learner model's shortcuts give exactly what the plain computations give.

An update reads and writes only the rows its events touch: its state is the
dense computation's over every topic and item (kept here as the reference),
and so are the beliefs and the recall computed from it.
The status over a mask counts it once per mask and sums credits as counts when
no theory item was met: its figures are those of the plain computation (kept
here as the reference).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop.tracing import Event, ItemParams, LearnerModel, LearnerState, TopicStructure
from learnloop.tracing._gating import readiness
from learnloop.tracing.ability import update_ability, update_additive
from learnloop.tracing.forgetting import Memory, as_epoch_seconds, recall_probability
from learnloop.tracing.predictions import topic_sums
from learnloop.tracing.state import (
    ATT,
    DIFF,
    FRAC,
    LAPSE,
    LAST,
    REV,
    SCORE,
    SKIP,
    STAB,
    TIME,
    TS,
    frozen_array,
    with_blank_rows,
)
from learnloop.tracing.status import Status, item_credit

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- the reference: every topic's row in a dense table, numpy scalars ----------------------


def _dense_update_many(model: LearnerModel, state: LearnerState, events: list[Event]) -> LearnerState:
    ability = state._ability_table()
    momentum = state.momentum.tolist()
    memory = state._memory_table()
    n = state.n_items
    positions = [e.item for e in events if isinstance(e.item, (int, np.integer)) and 0 <= e.item < n]
    touched, rows, sig, slots = with_blank_rows(state, positions)
    n_events = state.n_events
    for event in events:
        if _dense_apply(model, ability, memory, rows, sig, slots, event, momentum):
            n_events += 1
    return LearnerState.make(
        ability,
        memory,
        frozen_array(touched),
        frozen_array(rows),
        frozen_array(sig),
        n_items=n,
        n_events=n_events,
        momentum=np.array(momentum),
        ability_blank=state.ability_blank,
    )


def _dense_apply(model, ability, memory, rows, sig, slots, event, momentum) -> bool:  # type: ignore[no-untyped-def]
    problems = model._validate(event)
    if problems:
        raise ValueError("; ".join(problems))
    i = int(event.item)
    ts = as_epoch_seconds(event.timestamp)
    signature = model.signature(event)
    slot = slots[i]
    row = rows[slot]
    if row[TS] == ts and sig[slot] == signature:
        return False
    row[TIME] += max(0, int(event.time_spent_ms or 0))
    row[TS] = ts if math.isnan(row[TS]) else max(row[TS], ts)
    sig[slot] = signature
    topic = model._item_topic[i] if event.topic is None else event.topic
    score = None
    if event.kind == "view_theory":
        frac = 1.0 if event.fraction_completed is None else float(event.fraction_completed)
        row[FRAC] = max(row[FRAC], frac)
    elif event.kind == "skip":
        row[SKIP] += 1.0
        score = model.skip_score
    else:
        row[ATT] += 1.0
        if model._scorable[i]:
            score = float(event.score)
            row[SCORE] = score
    if score is not None:
        _dense_ability(model, ability, topic, model._b[i], model._a[i], score, event.practice, momentum)
        mem = None
        mrow = memory[topic]
        if not math.isnan(mrow[STAB]):
            mem = Memory(float(mrow[STAB]), float(mrow[DIFF]), float(mrow[LAST]), int(mrow[REV]), int(mrow[LAPSE]))
        new = model.memory_model.review(mem, score=score, timestamp=ts)
        mrow[:] = (new.stability, new.difficulty, new.last_review, new.reviews, new.lapses)
    return True


def _dense_belief(model, ability, node):  # type: ignore[no-untyped-def]
    if ability[node, 2] > 0.0 or node == ability.shape[0] - 1:
        return float(ability[node, 0]), float(ability[node, 1])
    for level, anc in enumerate(model._chains[node][1:], start=1):
        if ability[anc, 2] > 0.0 or anc == ability.shape[0] - 1:
            return float(ability[anc, 0]), float(ability[anc, 1]) + model.topic_var * level
    raise AssertionError


def _dense_readiness(model, ability, topic) -> float:  # type: ignore[no-untyped-def]
    """The share of the practice gain reaching ``topic``, from the dense table's beliefs of its requirements."""
    required = model.topics.requires(topic).tolist()
    if model._gating_tables is None or not required:
        return 1.0
    if model.hierarchy == "additive":
        means = [sum(float(ability[n, 0]) for n in model._chains[p]) for p in required]
    else:
        means = [_dense_belief(model, ability, p)[0] for p in required]
    tables = model._gating_tables
    margins = np.asarray(means) - tables.mean_b[topic, : len(required)]
    return float(readiness(model._gating, margins, tables.weight[topic, : len(required)]))


def _dense_ability(model, ability, topic, b, a, score, practice, momentum) -> None:  # type: ignore[no-untyped-def]
    ready = _dense_readiness(model, ability, topic) if practice else 1.0
    novelty = model._nov[topic]
    if novelty and ability[topic, 2] <= 0.0:
        b = b + novelty
    if model.hierarchy == "additive":
        chain = model._chains[topic]
        means = [float(ability[n, 0]) for n in chain]
        variances = [float(ability[n, 1]) for n in chain]
        fast = model.momentum_var > 0.0
        if fast:
            means.append(model.momentum_decay * momentum[0])
            variances.append(model.momentum_decay**2 * momentum[1] + model.momentum_var - model.drift)
        update_additive(means, variances, b=b, score=score, a=a, drift=model.drift)
        if fast:
            momentum[0], momentum[1] = means.pop(), variances.pop()
        for n, m, v in zip(chain, means, variances, strict=True):
            ability[n, 0], ability[n, 1], ability[n, 2] = m, v, ability[n, 2] + 1.0
    else:
        targets = [(topic, 1.0)] + [(node, model.parent_weight) for node in model._chains[topic][1:]]
        targets.extend((succ, model.prerequisite_weight) for succ in model._succ[topic])
        priors = [_dense_belief(model, ability, node) for node, _ in targets]
        for (node, weight), (m, v) in zip(targets, priors, strict=True):
            if weight <= 0.0:
                continue
            m2, v2 = update_ability(m, v, b=b, score=score, a=a, weight=weight, drift=model.drift)
            ability[node, 0] = m2
            ability[node, 1] = v2
            ability[node, 2] += weight
    if practice:
        g, f = model._gain[topic], model._fail[topic]
        ability[topic, 0] += (g if f == g else score * g + (1.0 - score) * f) * ready


def _plain_beliefs(model: LearnerModel, state: LearnerState) -> tuple[np.ndarray, np.ndarray]:
    chains = model.topics.chains
    table = state.ability
    if model.hierarchy == "additive":
        return model.topic_beliefs(state)  # (one computation only)
    informed = table[chains, 2] > 0.0
    informed[:, -1] = True
    level = informed.argmax(axis=1)
    node = chains[np.arange(chains.shape[0]), level]
    mean = table[node, 0]
    var = table[node, 1] + model.topic_var * np.minimum(level, model.topics.depth + 1)
    if model._has_novelty:
        mean = mean - model.novelty * (table[:-1, 2] <= 0.0)
    return mean, np.sqrt(var)


# -- the comparison ----------------------------------------------------------------------------


def _assert_same(a: LearnerState, b: LearnerState) -> None:
    assert a.n_events == b.n_events and a.n_items == b.n_items and a.n_topics == b.n_topics
    for x, y in zip(a.arrays, b.arrays, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
        assert not x.flags.writeable
    assert a.ability_blank.tobytes() == b.ability_blank.tobytes()
    assert a.to_bytes() == b.to_bytes()


_OPTIONS = [
    {},
    {"prerequisite_weight": 0.0, "parent_weight": 0.5},
    {"novelty": 0.7, "practice_gain": 0.1, "failure_gain": -0.05, "skip_score": 0.0},
    {"hierarchy": "additive"},
    {"hierarchy": "additive", "momentum_var": 0.8, "momentum_decay": 0.6, "novelty": 0.3, "skip_score": 0.2},
    {"prerequisite_gating": 1.5, "practice_gain": 0.2, "failure_gain": 0.05, "novelty": 0.4},
    {"hierarchy": "additive", "prerequisite_gating": 2.0, "practice_gain": 0.1, "momentum_var": 0.5},
]


@st.composite
def _case(draw: st.DrawFn) -> tuple[LearnerModel, list[list[Event]]]:
    n_topics = draw(st.integers(1, 7))
    parent = [draw(st.integers(-1, t - 1)) if t else -1 for t in range(n_topics)]
    edges = draw(st.lists(st.tuples(st.integers(0, n_topics - 1), st.integers(0, n_topics - 1)), max_size=4))
    n_items = draw(st.integers(1, 25))
    topic = draw(st.lists(st.integers(0, n_topics - 1), min_size=n_items, max_size=n_items))
    difficulty = draw(st.lists(st.floats(0.05, 0.95), min_size=n_items, max_size=n_items))
    scorable = draw(st.lists(st.booleans(), min_size=n_items, max_size=n_items))
    items = ItemParams.from_catalog(
        item_topic=topic, difficulty=difficulty, scorable=scorable, is_theory=[not s for s in scorable]
    )
    options = draw(st.sampled_from(_OPTIONS))
    model = LearnerModel(TopicStructure.from_arrays(parent, [(a, b) for a, b in edges if a != b]), items, **options)
    calls: list[list[Event]] = []
    for _ in range(draw(st.integers(1, 12))):
        call = []
        for _ in range(draw(st.integers(0, 4))):
            item = draw(st.integers(0, n_items - 1))
            kind = draw(st.sampled_from(["attempt", "attempt", "skip", "view_theory"]))
            score = draw(st.sampled_from([0.0, 1.0, 0.5, 0.85])) if kind == "attempt" and scorable[item] else None
            fraction = draw(st.sampled_from([None, 0.3, 1.0])) if kind == "view_theory" else None
            call.append(
                Event(
                    item=item,
                    kind=kind,
                    timestamp=float(draw(st.integers(0, 20)) * 3600),  # repeats, out of order, duplicates
                    score=score,
                    time_spent_ms=draw(st.sampled_from([0, 1500])),
                    fraction_completed=fraction,
                    practice=draw(st.booleans()),
                )
            )
        calls.append(call)
    return model, calls


@_SETTINGS
@given(_case())
def test_an_update_gives_the_dense_computations_state(case: tuple[LearnerModel, list[list[Event]]]) -> None:
    model, calls = case
    state = reference = model.new_state()
    for events in calls:
        state = model.update_many(state, events)
        reference = _dense_update_many(model, reference, events)
        _assert_same(state, reference)
        mean, sd = model.topic_beliefs(state)
        plain_mean, plain_sd = _plain_beliefs(model, state)
        assert mean.tobytes() == plain_mean.tobytes() and sd.tobytes() == plain_sd.tobytes()
        for at in (0.0, 5e4, 1e6):  # the recall of the topics reviewed, NaN for the others
            memory = state.memory
            dense = recall_probability(memory[:, STAB], (at - memory[:, LAST]) / 86400.0)
            assert model.recall(state, at).tobytes() == dense.tobytes()
    # and the whole history at once
    everything = [e for events in calls for e in events]
    _assert_same(
        model.update_many(model.new_state(), everything), _dense_update_many(model, model.new_state(), everything)
    )


def test_a_state_from_a_stored_document_updates_like_the_dense_computation() -> None:
    topics = TopicStructure.from_arrays([-1, 0, 0, 1], [(1, 2)])
    items = ItemParams.from_catalog(
        item_topic=[1, 1, 2, 3, 0], difficulty=[0.3, 0.6, 0.5, 0.4, 0.5], scorable=[True] * 4 + [False],
        is_theory=[False] * 4 + [True],
    )  # fmt: skip
    model = LearnerModel(topics, items, novelty=0.4)
    events = [Event(item=k % 5, kind="attempt", score=float(k % 2), timestamp=60.0 * k) for k in range(9)]
    restored = LearnerState.from_dict(model.update_many(model.new_state(), events).to_dict())
    more = [Event(item=3, kind="attempt", score=1.0, timestamp=1e4), Event(item=4, kind="view_theory", timestamp=2e4)]
    _assert_same(model.update_many(restored, more), _dense_update_many(model, restored, more))


def test_the_comparison_sees_a_difference() -> None:
    topics = TopicStructure.from_arrays([-1, 0])
    items = ItemParams.from_catalog(
        item_topic=[0, 1], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False] * 2
    )
    model = LearnerModel(topics, items)
    state = model.update(model.new_state(), Event(item=0, kind="attempt", score=1.0, timestamp=0.0))
    other = model.update(model.new_state(), Event(item=0, kind="attempt", score=0.0, timestamp=0.0))
    with pytest.raises(AssertionError):
        _assert_same(state, other)


def test_merged_rows_drop_blank_rows_and_keep_the_order() -> None:
    from learnloop.tracing._apply import Rows, merged

    keys = frozen_array(np.array([1, 4], dtype=np.intp))
    rows = frozen_array(np.array([[1.0, 2.0], [3.0, 4.0]]))
    table = Rows(keys, rows, (0.0, 0.0))
    assert table[2] == [0.0, 0.0] and table[4] == [3.0, 4.0]
    same = merged(table)
    assert same[0] is keys and same[1].tolist() == rows.tolist() and not same[1].flags.writeable
    table[1][:] = [0.0, 0.0]
    table[3] = [5.0, math.nan]
    new_keys, new_rows = merged(table)
    assert new_keys.tolist() == [3, 4] and new_keys.dtype == np.intp
    assert np.array_equal(new_rows, [[5.0, math.nan], [3.0, 4.0]], equal_nan=True)
    assert not new_keys.flags.writeable and not new_rows.flags.writeable


def _plain_status(model: LearnerModel, state: LearnerState, mask: np.ndarray, p: np.ndarray) -> Status:
    m = np.asarray(mask, dtype=bool)
    n = int(np.count_nonzero(m))
    scorable = model.items.scorable if m.all() else m & model.items.scorable
    n_scorable = int(np.count_nonzero(scorable))
    prof = float(topic_sums(model.runs, p, scorable).sum()) / n_scorable if n_scorable else None
    in_mask = m[state.touched]
    met, rows = state.touched[in_mask], state.rows[in_mask]
    credit = item_credit(rows[:, ATT], rows[:, FRAC], model.items.is_theory[met])
    prog = float(credit.sum()) / n if n else 0.0
    skill = prof if prof is not None else (float(np.dot(p, m)) / n if n else 0.0)
    last = float(rows[:, TS].max()) if rows.shape[0] else -np.inf
    return Status(
        proficiency=prof,
        progress=prog,
        time_spent_ms=int(rows[:, TIME].sum()),
        last_interaction_timestamp=None if last == -np.inf else last,
        skill_level=skill,
        display_skill=min(max(skill, 0.0), 1.0) * math.sqrt(min(max(prog, 0.0), 1.0)),
    )


@_SETTINGS
@given(_case(), st.integers(0, 2**32 - 1))
def test_the_status_gives_the_plain_computations_figures(
    case: tuple[LearnerModel, list[list[Event]]], seed: int
) -> None:
    model, calls = case
    rng = np.random.default_rng(seed)
    n = model.items.n_items
    masks = [np.ones(n, dtype=bool), rng.random(n) < 0.6, ~model.items.scorable, np.zeros(n, dtype=bool)]
    for mask in masks[:3]:
        mask.setflags(write=False)  # read-only masks are counted once
    masks.append(rng.random(n) < 0.4)  # and a writable one each time
    state = model.new_state()
    predictions = model.predictions(state)
    for events in calls:
        state = model.update_many(state, events)
        predictions = model.predictions(state, predictions)
        for mask in masks:
            plain = _plain_status(model, state, mask, model.predict(state))
            assert model.status(state, mask, predictions=predictions) == plain
            assert model.status(state, mask) == plain
            assert model.status(state, mask.copy()) == plain
