"""Events kept beside a long history's cached state (``engine/learners/kept.py``): a learner's state
after late events, rewrites, steps and another process's writes equals the state a fresh engine
rebuilds from the store, and a late event of this process replays from the kept events without
reading the learner's stored events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.engine.learners import entries, history, kept, learners
from learnloop.events import Interaction, format_timestamp
from learnloop.sim import sample_course

START = datetime(2025, 3, 1, tzinfo=UTC)
ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=3, items_per_topic=3, with_theory=False)
CID = CATALOG.catalog_id
BULK = 60

# (what, item, seconds from the clock (negative: late), score)
ops = st.lists(
    st.tuples(
        st.sampled_from(["post", "post", "step", "step", "other", "same"]),
        st.integers(0, len(ITEMS) - 1),
        st.integers(-400, 40),
        st.sampled_from([0.0, 1.0]),
    ),
    min_size=1,
    max_size=12,
)


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept, "KEEP_EVENTS", 20)
    monkeypatch.setattr(kept, "FOLD", 4)
    monkeypatch.setattr(learners, "EAGER_EVENTS", 30)
    monkeypatch.setattr(entries, "COLUMNS_RUN", 8)  # (runs of 8 events and more go to the compiled loop at once)


def _stamp(seconds: int) -> str:
    return format_timestamp(START + timedelta(seconds=seconds))


def _event(engine: Engine, item: int, seconds: int, score: float) -> dict[str, Any]:
    item_id = ITEMS[item].item_id
    index = engine.catalog_index(CID)
    topic = index.topic_ids[int(index.item_topic[index.position(item_id)])]
    return {"type": "attempt", "timestamp": _stamp(seconds), "catalog_id": CID, "item_id": item_id,
            "topic_id": topic, "score": score}  # fmt: skip


def _arrays(engine: Engine) -> list[np.ndarray]:
    model = engine.catalog_model(CID)
    state = engine._learners.tracker.state("default", "u", model).state
    return [state.ability, state.memory, state.touched, state.rows, state.sig, state.momentum]


def _entry(engine: Engine) -> Any:
    return engine._learners.tracker._get(("default", "u", CID))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=ops, bulk=st.sampled_from([BULK, 25]))
def test_states_with_kept_events_equal_a_rebuild_from_the_store(
    tmp_path_factory: pytest.TempPathFactory, script: list[tuple[str, int, int, float]], bulk: int
) -> None:
    path = tmp_path_factory.mktemp("kept") / "shared.db"
    with Engine.open(path, seed=1) as engine, Engine.open(path, seed=1) as other:
        engine.upsert_items(ITEMS)
        engine.upsert_catalog(CATALOG)
        clock = 10 * bulk
        engine.upsert_events("u", [_event(engine, k % len(ITEMS), 10 * k, float(k % 3 > 0)) for k in range(bulk)])
        _arrays(engine)
        assert _entry(engine).kept is not None and len(_entry(engine).kept) == bulk
        context = engine.create_session({"user_id": "u", "catalog_id": CID, "mode": {"type": "learn"}, "filter": {}})
        rec = engine.adaptive_step(context).recommendation
        for what, item, offset, score in script:
            clock += 5
            if what == "post":
                engine.upsert_events("u", [_event(engine, item, clock + offset, score)])
            elif what == "same":  # a stored event again, with another score (a rewrite)
                engine.upsert_events("u", [_event(engine, 0, 0, 1.0 - score)])
            elif what == "other":  # another process
                other.upsert_events("u", [_event(other, item, clock + offset, score)])
            else:
                assert rec is not None
                answer = {"type": "attempt", "timestamp": _stamp(clock + offset), "score": score}
                step = engine.adaptive_step(context, [answer | {"recommendation_context": rec.recommendation_context}])
                rec = step.recommendation or engine.adaptive_step(context).recommendation
            with Engine.open(path, seed=1) as fresh:
                for mine, rebuilt in zip(_arrays(engine), _arrays(fresh), strict=True):
                    np.testing.assert_array_equal(mine, rebuilt)
            entry = _entry(engine)
            if entry.kept is not None:
                assert len(entry.kept) == entry.state.n_events


def test_a_late_event_of_this_process_replays_from_the_kept_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Engine.open(tmp_path / "one.db", seed=1) as engine:
        engine.upsert_items(ITEMS)
        engine.upsert_catalog(CATALOG)
        engine.upsert_events("u", [_event(engine, k % len(ITEMS), 10 * k, 1.0) for k in range(BULK)])  # (eager)
        assert _entry(engine).kept is not None
        reads: list[float] = []
        real = history.read
        monkeypatch.setattr(
            "learnloop.engine.learners.tracker.read_history",
            lambda *a, after=-np.inf: reads.append(after) or real(*a, after=after),
        )
        engine.upsert_events("u", [_event(engine, 1, -60, 0.0)])  # dated before all
        status = engine.user_status("u", CID, [{}])
        assert reads == []  # replayed from the kept events
        assert len(_entry(engine).kept) == BULK + 1
        with Engine.open(tmp_path / "one.db", seed=1) as fresh:
            assert fresh.user_status("u", CID, [{}]) == status


@settings(max_examples=60, deadline=None)
@given(
    stored=st.lists(st.tuples(st.integers(0, len(ITEMS) - 1), st.integers(0, 8)), max_size=30),
    group=st.lists(
        st.tuples(st.integers(0, len(ITEMS) - 1), st.integers(0, 9), st.sampled_from([0.0, 1.0])),
        min_size=1,
        max_size=5,
    ),
    after=st.sampled_from([-1, 2, 5]),
)
def test_events_about_to_be_written_merge_into_a_history_as_a_sort_of_both_would_put_them(
    stored: list[tuple[int, int]], group: list[tuple[int, int, float]], after: int
) -> None:
    # the merge (positions by a binary search, the columns inserted into) against a stable sort by time of
    # the stored events less those the group rewrites, then the group's events later than ``after``
    engine = Engine(seed=1)
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    catalog = engine.catalog_model(CID)

    def interaction(item: int, seconds: int, score: float) -> Interaction:
        doc = _event(engine, item, seconds, score)
        return Interaction(
            "attempt", "u", CID, doc["item_id"], doc["topic_id"], START + timedelta(seconds=seconds), score
        )

    keys = {(item, seconds) for item, seconds in stored}  # (one stored event per key)
    base = sorted((interaction(item, seconds, 1.0) for item, seconds in keys), key=lambda i: i.epoch)
    posted = [interaction(*event) for event in group]
    made = history.merged(catalog, history.of_interactions(catalog, base), posted, float(START.timestamp()) + after)
    rewritten = {i.key for i in posted}
    kept_rows = [i for i in base if i.key not in rewritten]
    later = [i for i in posted if i.epoch > float(START.timestamp()) + after]
    expected = sorted(kept_rows + later, key=lambda i: i.epoch)
    assert (made.item_ids, made.stamps) == ([i.item_id for i in expected], [i.stamp for i in expected])
    reference = history.of_interactions(catalog, expected).columns
    for name in ("item", "kind", "ts", "score", "topic", "time_ms", "fraction", "practice"):
        np.testing.assert_array_equal(getattr(made.columns, name), getattr(reference, name))
