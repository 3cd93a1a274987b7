"""``learnloop fit --store URL --catalog ID``: Engine.fit on a served store, one-line errors with exit 2."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.server.cli import main
from learnloop.sim import sample_course

ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=6, with_theory=False)
CID = CATALOG.catalog_id


def store_with_answers(path: Path, learners: int = 30) -> None:
    engine = Engine.open(path)
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    rng = np.random.default_rng(0)
    questions = list(engine.catalog_index(CID).item_ids)
    b = rng.normal(0.0, 1.5, len(questions))  # far from the items' cold-start difficulties
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for person in range(learners):
        theta = rng.normal()
        events = []
        for k in range(20):
            p = int(rng.integers(len(questions)))
            events.append({"type": "attempt", "item_id": questions[p], "catalog_id": CID,
                           "timestamp": format_timestamp(start + timedelta(hours=k)),
                           "score": float(rng.random() < 1 / (1 + np.exp(b[p] - theta)))})  # fmt: skip
        engine.upsert_events(f"u{person}", events)
    engine.store.close()


def test_fit_stores_what_it_keeps_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "served.db"
    store_with_answers(path)
    code = main(["fit", "--store", f"sqlite:///{path}", "--catalog", CID, "--folds", "2", "--rounds", "1",
                 "--no-progress", "--no-forgetting"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith(f"learnloop fit: catalog '{CID}': kept the fitted settings (held-out log loss old")
    other = Engine.open(path)  # what a server on the store reads
    assert other.store.get("meta", "default", (f"calibration:{CID}",)) is not None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--store", "mysql://db/x", "--catalog", "c"], "learnloop fit: unknown store URL scheme 'mysql'"),
        (["--store", "memory://", "--catalog", "c"], "learnloop fit: a memory:// store starts empty"),
        (["--catalog", "nope"], "learnloop fit: "),
        (["--catalog", CID, "--holdout", "2"], "learnloop fit: holdout must lie in (0, 1)"),
    ],
)
def test_bad_calls_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    path = tmp_path / "served.db"
    store_with_answers(path, learners=3)
    if "--store" not in argv:
        argv = ["--store", f"sqlite:///{path}", *argv]
    assert main(["fit", *argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
