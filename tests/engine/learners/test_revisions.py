"""Two engines on one store: whatever one writes (in order, late, at the same instant,
overwriting), the other's cached learner state catches up to exactly the state a
fresh engine rebuilds from the stored events; appends are applied on top of the
cached state, without a replay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.engine.learners.revisions import REVISION_LOG, Revision
from learnloop.engine.learners.tracker import Tracker
from learnloop.events import format_timestamp
from learnloop.sim import sample_course

START = datetime(2025, 3, 1, tzinfo=UTC)
ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=4, with_theory=False)
QUESTIONS = [i.item_id for i in ITEMS]


def event(item: int, second: int, score: float) -> dict[str, Any]:
    moment = START + timedelta(seconds=second)
    return {"type": "attempt", "item_id": QUESTIONS[item], "catalog_id": CATALOG.catalog_id,
            "timestamp": format_timestamp(moment), "score": score}  # fmt: skip


def state_of(engine: Engine) -> np.ndarray:
    view = engine.learner_view("u", CATALOG.catalog_id)
    return np.concatenate([view.p_correct, view.attempts, view.last_score])


writes = st.lists(
    st.tuples(
        st.booleans(),  # which engine writes
        st.lists(
            st.tuples(st.integers(0, len(QUESTIONS) - 1), st.integers(0, 40), st.sampled_from([0.0, 1.0])),
            min_size=1,
            max_size=4,
        ),  # fmt: skip
        st.booleans(),  # the writer reads the learner afterwards (caches it)
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(writes)
def test_a_cached_state_catches_up_to_the_rebuilt_one_whatever_the_other_engine_wrote(
    tmp_path_factory: pytest.TempPathFactory, script: list[tuple[bool, list[tuple[int, int, float]], bool]]
) -> None:
    path = tmp_path_factory.mktemp("rev") / "shared.db"
    first, second = Engine.open(path), Engine.open(path)
    first.upsert_items(ITEMS)
    first.upsert_catalog(CATALOG)
    clock = 0
    for use_first, batch, read in script:
        writer, other = (first, second) if use_first else (second, first)
        # times go mostly forward, with late and repeated instants mixed in
        writer.upsert_events("u", [event(item, clock + offset - 20, score) for item, offset, score in batch])
        clock += 10
        if read:
            state_of(writer)
        fresh = Engine.open(path)
        expected = state_of(fresh)
        fresh.close()
        np.testing.assert_allclose(state_of(other), expected, atol=1e-12)
        np.testing.assert_allclose(state_of(writer), expected, atol=1e-12)
    first.close()
    second.close()


def test_an_append_by_another_engine_is_applied_on_the_cached_state(tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "shared.db"
    first, second = Engine.open(path), Engine.open(path)
    first.upsert_items(ITEMS)
    first.upsert_catalog(CATALOG)
    first.upsert_events("u", [event(k % len(QUESTIONS), k, 1.0) for k in range(200)])
    state_of(second)  # cached by the second engine
    first.upsert_events("u", [event(0, 500, 0.0)])
    applied: list[int] = []
    real = Tracker._apply
    monkeypatch.setattr(Tracker, "_apply", staticmethod(lambda c, e, o, k: applied.append(len(o)) or real(c, e, o, k)))
    state_of(second)
    assert applied == [1]  # the one new event, not a replay of 201
    first.upsert_events("u", [event(1, 100, 0.0)])  # late: replayed (no checkpoint below 2048 events)
    state_of(second)
    assert applied[-1] == 202


def test_the_revision_document_lists_only_writes_that_did_not_append() -> None:
    doc = Revision()
    for k in range(40):
        doc = doc.after_write(float(k), float(k), rewrite=False)
    assert doc.to_doc() == {"rev": 40, "hi": 39.0}
    doc = doc.after_write(39.0, 39.0, rewrite=False)  # same instant as the latest: not an append
    doc = doc.after_write(50.0, 50.0, rewrite=True)  # an overwrite: not an append
    assert doc.late == ((41, 39.0), (42, 50.0))
    assert doc.changed_since(40) == 39.0 and doc.changed_since(41) == 50.0 and doc.changed_since(42) is None
    for _ in range(REVISION_LOG):
        doc = doc.after_write(1.0, 1.0, rewrite=False)
    assert len(doc.late) == REVISION_LOG and doc.floor == 42
    assert doc.changed_since(41) == -np.inf  # the list no longer reaches back that far
    assert Revision.from_doc(doc.to_doc()) == doc
    # a document of the earlier format: every logged write counts as not appending
    legacy = Revision.from_doc({"rev": 5, "log": [[4, 10.0], [5, 12.0]]})
    assert legacy.changed_since(4) == 12.0 and legacy.changed_since(2) == -np.inf
    assert legacy.after_write(20.0, 20.0, rewrite=False).changed_since(5) == 20.0
