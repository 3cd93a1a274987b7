"""What an ingestion counts as new and what it rewrites, whether the store is asked about a key or
the key is known to be new (later than every stored event of its learner)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import sample_course

START = datetime(2025, 3, 1, tzinfo=UTC)
ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=4, with_theory=False)


def event(item: int, second: int, score: float) -> dict[str, Any]:
    return {
        "type": "attempt",
        "item_id": ITEMS[item].item_id,
        "catalog_id": CATALOG.catalog_id,
        "timestamp": format_timestamp(START + timedelta(seconds=second)),
        "score": score,
    }


def state_of(engine: Engine) -> np.ndarray:
    view = engine.learner_view("u", CATALOG.catalog_id)
    return np.concatenate([view.p_correct, view.attempts, view.last_score])


# two items never share an instant here (the order of answers given at one instant is the posting order,
# which a rebuild from scratch cannot know across calls): item k answers at seconds 100 k .. 100 k + 5
batches = st.lists(
    st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 5), st.sampled_from([0.0, 0.5, 1.0])).map(
            lambda row: (row[0], 100 * row[0] + row[1], row[2])
        ),
        min_size=1,
        max_size=6,
    ),
    min_size=1,
    max_size=8,
)


def fresh(posted: dict[tuple[int, int], float]) -> Engine:
    engine = Engine()
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    if posted:
        engine.upsert_events("u", [event(item, second, score) for (item, second), score in posted.items()])
    return engine


@settings(max_examples=60, deadline=None)
@given(batches)
def test_new_counts_and_states_follow_the_keys_already_stored(script: list[list[tuple[int, int, float]]]) -> None:
    engine = fresh({})
    posted: dict[tuple[int, int], float] = {}
    for batch in script:
        latest_in_batch: dict[tuple[int, int], float] = {}
        for item, second, score in batch:
            latest_in_batch[(item, second)] = score
        expected_new = sum(1 for key in latest_in_batch if key not in posted)
        assert engine.upsert_events("u", [event(*row) for row in batch]) == expected_new
        posted.update(latest_in_batch)
        # the state is the one rebuilt from the latest version of every key
        np.testing.assert_array_equal(state_of(engine), state_of(fresh(posted)))
    keys = [("u", CATALOG.catalog_id, ITEMS[i].item_id, event(i, s, 0.0)["timestamp"]) for i, s in posted]
    assert engine.known_events(keys) == set(keys)


def test_an_answer_at_the_latest_instant_on_another_item_is_new_and_on_the_same_item_a_rewrite() -> None:
    engine = fresh({(0, 10): 1.0})
    rows: list[dict[str, Any]] = [event(1, 10, 0.0)]
    assert engine.upsert_events("u", rows) == 1
    before = state_of(engine)
    assert engine.upsert_events("u", [event(0, 10, 0.0)]) == 0  # same key, another score: rewritten
    assert not np.array_equal(state_of(engine), before)
    assert engine.upsert_events("u", [event(0, 10, 0.0), event(2, 9, 1.0)]) == 1  # a late answer: new
    assert engine.upsert_events("u", [event(2, 9, 1.0), event(1, 10, 0.0)]) == 0  # the same again
