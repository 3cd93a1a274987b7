"""Engine.calibrate(refine=...): the items refitted to the engine's own predictions are stored and used."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from learnloop import Engine
from learnloop.errors import ValidationError
from learnloop.events import format_timestamp


def _engine(n_learners: int = 300, *, gain: float = 0.08, seed: int = 1) -> tuple[Engine, np.ndarray]:
    """Learners who take 30 items of one topic in a fixed order and gain ``gain`` logits with each answer."""
    rng = np.random.default_rng(seed)
    b = rng.normal(0.0, 1.0, 30)
    engine = Engine(seed=1, learner_options={"practice_gain": gain, "drift": 0.0, "hierarchy": "additive"})
    engine.upsert_items(
        [{"item_id": f"q{k}", "display_name": f"q{k}", "scorable": True, "difficulty": 0.5} for k in range(30)]
    )
    engine.upsert_catalog(
        {
            "catalog_id": "c",
            "display_name": "C",
            "topics": [{"topic_id": "t", "display_name": "T", "item_refs": [{"item_id": f"q{k}"} for k in range(30)]}],
        }
    )
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for person in range(n_learners):
        theta = rng.normal(0.0, 1.0)
        events = []
        for k in range(30):
            correct = rng.random() < 1.0 / (1.0 + np.exp(-(theta - b[k])))
            events.append(
                {
                    "type": "attempt",
                    "item_id": f"q{k}",
                    "catalog_id": "c",
                    "timestamp": format_timestamp(start + timedelta(minutes=k)),
                    "score": float(correct),
                }
            )
            theta += gain
        engine.upsert_events(f"u{person}", events)
    return engine, b


def _drift(result: dict[str, dict[str, float]], b_true: np.ndarray) -> float:
    """How much easier the late items look than the early ones, beyond the truth."""
    err = np.array([result[f"q{k}"]["b"] for k in range(30)]) - b_true
    return float(np.mean(err[20:]) - np.mean(err[:10]))


def test_refined_items_are_stored_and_used_and_undo_the_learning_a_static_fit_puts_in_them() -> None:
    engine, b_true = _engine()
    static = engine.calibrate("c")
    refined = engine.calibrate("c", refine="b")
    # a constant ability puts the learning into the items: the later ones look easier than they are
    assert _drift(static, b_true) < -0.5
    # refitted to the model that learns, a good part of it is taken back
    assert abs(_drift(refined, b_true)) < 0.6 * abs(_drift(static, b_true))
    assert all(refined[item]["a"] == 1.0 for item in refined)  # "b" leaves the discriminations
    # stored: the learner model of the catalog now uses the refined difficulties
    model = engine.catalog_model("c")
    positions = [model.index.position(f"q{k}") for k in range(30)]
    assert np.allclose(model.model.items.b[positions], [refined[f"q{k}"]["b"] for k in range(30)])
    with pytest.raises(ValidationError, match="refine must be"):
        engine.calibrate("c", refine="a")
