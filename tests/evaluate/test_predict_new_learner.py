"""Engine.predict refuses items without a P(correct), and gives a new learner the documented cold start.

A new learner's prediction is not 1 - difficulty: it integrates over the learner's
ability belief N(0, prior_var + k * topic_var), k the levels from the item's topic to
the overall node (docs/models.md, "What a new learner is predicted").
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from learnloop import Engine
from learnloop.errors import ValidationError

DOCS = Path(__file__).resolve().parents[2] / "docs"


def engine_with(options: dict[str, float] | None = None) -> Engine:
    engine = Engine(seed=7, learner_options=options)
    engine.upsert_items([
        {"item_id": "q1", "display_name": "2 + 2", "scorable": True, "difficulty": 0.33},
        {"item_id": "q2", "display_name": "12 x 12", "scorable": True, "difficulty": 0.66},
        {"item_id": "deep", "display_name": "7 x 8", "scorable": True, "difficulty": 0.33},
        {"item_id": "th", "display_name": "How to add", "scorable": False},
    ])  # fmt: skip
    engine.upsert_catalog({"catalog_id": "arith", "display_name": "Arithmetic", "topics": [
        {"topic_id": "add", "display_name": "Addition", "item_refs": [{"item_id": "q1"}, {"item_id": "th"}]},
        {"topic_id": "mul", "display_name": "Multiplication", "item_refs": [{"item_id": "q2"}]},
        {"topic_id": "tables", "display_name": "Tables", "child_topic_refs": [{"topic_id": "by7"}]},
        {"topic_id": "by7", "display_name": "By 7", "item_refs": [{"item_id": "deep"}]},
    ]})  # fmt: skip
    return engine


def cold_start(d: float, var: float) -> float:
    b = math.log(d / (1.0 - d))
    return 1.0 / (1.0 + math.exp(b / math.sqrt(1.0 + math.pi * var / 8.0)))


def test_an_item_that_is_not_scorable_is_refused_by_name() -> None:
    engine = engine_with()
    with pytest.raises(ValidationError) as caught:
        engine.predict("ada", "arith", ["q1", "th"])
    assert caught.value.problems == ("item 'th' is not scorable: it has no P(correct)",)
    # unknown items are named first, as before
    with pytest.raises(ValidationError, match="item 'nope' is not in catalog 'arith'"):
        engine.predict("ada", "arith", ["th", "nope"])
    assert set(engine.predict("ada", "arith", ["q1", "q2"])) == {"q1", "q2"}


def test_a_new_learner_is_predicted_over_the_uncertainty_of_the_ability() -> None:
    got = engine_with().predict("ada", "arith", ["q1", "q2", "deep"])
    # root topics: v = prior_var + topic_var = 1.3; the topic one level down: 1.6
    assert got["q1"] == pytest.approx(cold_start(0.33, 1.3), abs=1e-12)
    assert got["q2"] == pytest.approx(cold_start(0.66, 1.3), abs=1e-12)
    assert got["deep"] == pytest.approx(cold_start(0.33, 1.6), abs=1e-12)
    assert round(got["q1"], 3) == 0.640 and round(got["q2"], 3) == 0.368
    assert 0.5 < got["deep"] < got["q1"] < 0.67  # nearer 0.5 the less is known


def test_a_learner_known_to_be_average_is_predicted_one_minus_the_difficulty() -> None:
    got = engine_with({"prior_var": 1e-9, "topic_var": 0.0}).predict("ada", "arith", ["q1", "q2", "deep"])
    assert got == pytest.approx({"q1": 0.67, "q2": 0.34, "deep": 0.67}, abs=1e-6)


def test_the_docs_give_the_figures_the_engine_predicts() -> None:
    got = engine_with().predict("ada", "arith", ["q1", "q2"])
    models, content = (DOCS / "models.md").read_text(), (DOCS / "content.md").read_text()
    formula = "σ(−a b / √(1 + π a² v / 8)),   v = prior_var + k · topic_var"
    assert formula in models
    for page in (models, content):
        assert re.search(r"exactly\s+average\s+ability", page)  # what difficulty means, precisely
        assert f"{got['q1']:.3f}" in page and f"{got['q2']:.3f}" in page
