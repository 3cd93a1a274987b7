"""A session step's way through the tracker (the state read, its one event planned without
asking the store when it is later than every stored one, applied on the cached state, written
with a check of the revision): the cached state equals the one rebuilt from the stored events,
the plan equals the general path's, and the revision documents read back as they were written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.engine.learners.revisions import Revision, RevisionMemo
from learnloop.engine.learners.tracker import Tracker
from learnloop.events import Interaction
from learnloop.sim import sample_course

START = datetime(2025, 3, 1, tzinfo=UTC)
ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=3, items_per_topic=3, with_theory=True)
APP, USER = "default", "u"
LEARNER = (USER, CATALOG.catalog_id)

# (item, seconds after the previous step's event, score, kind): mostly forward, some late or at one instant
steps = st.lists(
    st.tuples(
        st.integers(0, len(ITEMS) - 1),
        st.integers(-30, 60),
        st.sampled_from([0.0, 0.5, 1.0]),
        st.sampled_from(["attempt", "attempt", "skip", "view_theory"]),
    ),
    min_size=1,
    max_size=25,
)


def interaction(engine: Engine, item: int, second: int, score: float, kind: str) -> Interaction:
    item_id = ITEMS[item].item_id
    index = engine.catalog_model(CATALOG.catalog_id).index
    topic = index.topic_ids[int(index.item_topic[index.position(item_id)])]
    attempt = kind == "attempt"
    return Interaction(
        kind,  # type: ignore[arg-type]
        USER,
        CATALOG.catalog_id,
        item_id,
        topic,
        START + timedelta(seconds=second),
        score=score if attempt else None,
        time_spent_ms=1000 if attempt else None,
        fraction_completed=0.5 if kind == "view_theory" else None,
        session_id="s",
    )


def arrays(tracker: Tracker, engine: Engine) -> list[np.ndarray]:
    state = tracker.state(APP, USER, engine.catalog_model(CATALOG.catalog_id)).state
    return [state.ability, state.memory, state.touched, state.rows, state.sig, state.momentum]


@settings(max_examples=50, deadline=None)
@given(steps)
def test_steps_through_the_tracker_equal_a_rebuild_from_the_stored_events(
    script: list[tuple[int, int, float, str]],
) -> None:
    engine = Engine()
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    tracker = engine._learners.tracker
    model = engine.catalog_model(CATALOG.catalog_id)
    clock = 0
    for item, offset, score, kind in script:
        clock += offset
        posted = [interaction(engine, item, clock, score, kind)]
        current = tracker.state(APP, USER, model)
        given = {"revisions": {LEARNER: current.revision}, "latest": {LEARNER: current.latest}}
        plan = tracker.plan(APP, posted, **given if current.current else {"revisions": given["revisions"]})
        general = tracker.plan(APP, iter(posted), **given if current.current else {"revisions": given["revisions"]})
        assert (plan.changed, plan.new, plan.by_learner, plan.rewrites, plan.revisions, plan.read) == (
            general.changed,
            general.new,
            general.by_learner,
            general.rewrites,
            general.revisions,
            general.read,
        )
        entries = tracker.advance(APP, plan, lambda c: model, compute=[LEARNER])
        with engine.store.atomic():
            tracker.write(APP, plan, check=True)
        tracker.install(entries)
        doc = engine.store.get("learners", APP, LEARNER)
        assert (
            RevisionMemo().decode(LEARNER, doc) == Revision.from_doc(doc) == tracker._memo.decode((APP, *LEARNER), doc)
        )
        cached = arrays(tracker, engine)
        rebuilt = arrays(Tracker(engine.store), engine)
        for got, expected in zip(cached, rebuilt, strict=True):
            np.testing.assert_array_equal(got, expected)


def test_a_document_another_process_wrote_is_decoded_again() -> None:
    memo = RevisionMemo(size=2)
    first = memo.decode("a", {"rev": 1, "hi": 5.0})
    assert memo.decode("a", {"rev": 1, "hi": 5.0}) is first
    other = memo.decode("a", {"rev": 1, "hi": 6.0})  # same number, other content: read as it is
    assert other == Revision(1, 6.0) and other is not first
    assert memo.decode("b", None) == Revision()  # nothing stored: not remembered
    memo.decode("b", {"rev": 2})
    memo.decode("c", {"rev": 3})  # full: starts over
    assert memo.decode("c", {"rev": 3}) == Revision(3)


def test_a_cached_entry_counts_the_bytes_of_every_array_of_its_states() -> None:
    engine = Engine()
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    engine.upsert_events(USER, [{"type": "attempt", "item_id": ITEMS[0].item_id, "catalog_id": CATALOG.catalog_id,
                                 "timestamp": "2025-03-01T00:00:00Z", "score": 1.0}])  # fmt: skip
    entry = engine._learners.tracker.state(APP, USER, engine.catalog_model(CATALOG.catalog_id))
    state = entry.state
    assert state.nbytes == sum(a.nbytes for a in state.arrays)
    assert entry.nbytes == state.nbytes + 112 * len(state.arrays) + 100 + 600
