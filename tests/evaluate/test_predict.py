"""Engine.predict: a learner's P(correct) on given items, equal to the model's full prediction."""

from __future__ import annotations

import pytest

from learnloop import Engine
from learnloop.errors import NotFoundError, ValidationError
from learnloop.events import format_timestamp
from learnloop.sim import SimClock, sample_course


@pytest.fixture
def engine() -> Engine:
    engine = Engine(clock=SimClock())
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=4)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    return engine


def test_predict_equals_the_full_prediction_at_those_items(engine: Engine) -> None:
    index = engine.catalog_index("sample-course")
    questions = [i for p, i in enumerate(index.item_ids) if index.scorable[p]]
    clock = SimClock()
    engine.upsert_events(
        "u", [
            {"type": "attempt", "item_id": q, "catalog_id": "sample-course", "score": float(k % 3 != 0),
             "timestamp": format_timestamp(clock.advance(60))}
            for k, q in enumerate(questions[:6])
        ],
    )  # fmt: skip
    full = engine.learner_view("u", "sample-course").p_correct
    asked = [questions[7], questions[0], questions[3]]
    got = engine.predict("u", "sample-course", asked)
    assert list(got) == asked
    for item_id, p in got.items():
        assert p == pytest.approx(float(full[index.position(item_id)]), abs=1e-12)
    prior = engine.predict("nobody", "sample-course", asked)
    assert prior != got and all(0.0 < p < 1.0 for p in prior.values())


def test_predict_names_every_unknown_item_and_unknown_catalogs_and_topics(engine: Engine) -> None:
    with pytest.raises(ValidationError) as caught:
        engine.predict("u", "sample-course", ["nope", "ch1-t1-q1", "nada"])
    assert list(caught.value.problems) == [
        "item 'nope' is not in catalog 'sample-course'", "item 'nada' is not in catalog 'sample-course'",
    ]  # fmt: skip
    with pytest.raises(NotFoundError):
        engine.predict("u", "no-catalog", ["ch1-t1-q1"])
    with pytest.raises(NotFoundError):
        engine.predict("u", "sample-course", ["ch1-t1-q1"], topic_id="no-topic")
    with pytest.raises(ValidationError, match="not in topic 'ch1-t2'"):
        engine.predict("u", "sample-course", ["ch1-t1-q1"], topic_id="ch1-t2")
    with pytest.raises(ValidationError, match="not one string"):
        engine.predict("u", "sample-course", "ch1-t1-q1")  # type: ignore[arg-type]
