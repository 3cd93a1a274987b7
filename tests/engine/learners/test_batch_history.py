"""A posted batch's events as a history made from its columns (:func:`history.of_batch`, what a bulk
import applies at once) against the two other ways to the same history: the events made interactions
(:func:`history.of_interactions`, in time order) and the events read back from the store once written
(:func:`history.read`), on the memory and the SQLite store, over random batches with repeated keys,
several catalogs, shared timestamps, optional fields and timestamps in and out of the canonical form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.content import CatalogIndex
from learnloop.engine.learners import history
from learnloop.engine.learners.batch import EventBatch
from learnloop.engine.learners.plans import plan_batch
from learnloop.events import format_timestamp
from learnloop.store import MemoryStore, SQLiteStore

START = datetime(2025, 3, 1, tzinfo=UTC)
ITEMS = [
    *({"item_id": f"q{k}", "display_name": f"Q{k}", "scorable": True, "difficulty": 0.1 + 0.2 * k} for k in range(5)),
    {"item_id": "th0", "display_name": "Theory", "scorable": False},
]
CATALOGS = [
    {
        "catalog_id": "c1",
        "display_name": "One",
        "topics": [
            {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": i} for i in ("q0", "q1", "th0")]},
            {"topic_id": "b", "display_name": "B", "item_refs": [{"item_id": i} for i in ("q1", "q2", "q3")]},
        ],
    },
    {
        "catalog_id": "c2",
        "display_name": "Two",
        "topics": [{"topic_id": "x", "display_name": "X", "item_refs": [{"item_id": i} for i in ("q0", "q4")]}],
    },
]
PLACES = [("c1", "q0", "a"), ("c1", "q1", "a"), ("c1", "q1", "b"), ("c1", "q1", None), ("c1", "q3", "b"),
          ("c1", "th0", None), ("c2", "q0", "x"), ("c2", "q4", None)]  # fmt: skip
#: canonical stamps (few, so that keys and times repeat), and other spellings of nearby instants
STAMPS = [format_timestamp(START + timedelta(seconds=k % 4, milliseconds=k // 4)) for k in range(8)] + [
    "2025-03-01T00:00:02Z",
    "2025-03-01T01:00:03+01:00",
    "2025-03-01T00:00:01.0004Z",
]


@st.composite
def event(draw: Any) -> dict[str, Any]:
    catalog, item, topic = draw(st.sampled_from(PLACES))
    kind = "view_theory" if item == "th0" else draw(st.sampled_from(["attempt", "attempt", "skip"]))
    out: dict[str, Any] = {
        "type": kind,
        "item_id": item,
        "catalog_id": catalog,
        "timestamp": draw(st.sampled_from(STAMPS)),
    }
    if topic is not None:
        out["topic_id"] = topic
    if kind == "attempt":
        out["score"] = draw(st.sampled_from([0.0, 0.25, 1.0]))
        if draw(st.booleans()):
            out["time_spent_ms"] = draw(st.integers(0, 90_000))
    elif kind == "view_theory":
        out["fraction_completed"] = draw(st.sampled_from([0.5, 1.0]))
    return out


def _engine(kind: str) -> Engine:
    engine = Engine(seed=3, store=MemoryStore() if kind == "memory" else SQLiteStore(":memory:"))
    engine.upsert_items(ITEMS)
    for catalog in CATALOGS:
        engine.upsert_catalog(catalog)
    return engine


def _same(got: history.History, want: history.History) -> None:
    assert (got.item_ids, got.stamps) == (want.item_ids, want.stamps)
    for name in ("item", "kind", "ts", "score", "topic", "time_ms", "fraction", "practice"):
        a, b = getattr(got.columns, name), getattr(want.columns, name)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(event(), min_size=1, max_size=120))
def test_a_batch_as_a_history_is_what_its_interactions_and_the_store_give(
    kind: str, batch: list[dict[str, Any]]
) -> None:
    engine = _engine(kind)
    read = EventBatch.read(batch)
    assert read is not None

    def index_of(catalog_id: str) -> CatalogIndex:
        return engine.catalog_model(catalog_id).index

    topics = read.locate(index_of)
    assert topics is not None
    plan = plan_batch(engine.store, "default", "u", read, topics)
    made = {}
    for learner, rows in plan.groups().items():
        catalog = engine.catalog_model(learner[1])
        made[learner[1]] = plan.history(catalog, rows)
        interactions = sorted(plan.interactions(rows), key=lambda i: i.epoch)
        _same(made[learner[1]], history.of_interactions(catalog, interactions))
    assert sum(map(len, made.values())) == len(plan.changed)
    engine.upsert_events("u", batch)
    for catalog_id, got in made.items():
        _same(got, history.read(engine.store, "default", "u", engine.catalog_model(catalog_id)))


def test_the_columns_read_every_field_of_the_plain_event_models() -> None:
    """The fields read as columns (and those the v2 façade lets through on their face) are the
    models' own: a field added to a model is read, or this fails."""
    from learnloop.api import v2
    from learnloop.engine.learners import batch
    from learnloop.events import AttemptEvent, SkipEvent, ViewTheoryEvent

    models = (AttemptEvent, SkipEvent, ViewTheoryEvent)
    everything = set().union(*(model.model_fields for model in models))
    assert set(batch._COLUMNS.values()) | {"timestamp"} == everything == v2._EVENT_FIELDS
    for model in models:
        must, may = batch._NAMES[model.model_fields["type"].annotation.__args__[0]]
        assert must | may == set(model.model_fields)
        assert must == {name for name, info in model.model_fields.items() if info.is_required()}
