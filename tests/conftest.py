"""Shared fixtures: engines on every store, so that the same tests run on each."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from learnloop import Engine

STORES = ["memory", "sqlite"]


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """The store under test: every test using it runs once per store."""
    return request.param


@pytest.fixture
def make_engine(store_kind: str, tmp_path: Path) -> Iterator[Callable[..., Engine]]:
    """A factory of engines on ``store_kind`` (SQLite files in ``tmp_path``); closes them after."""
    made: list[Engine] = []

    def make(**kwargs: Any) -> Engine:
        if store_kind == "memory":
            engine = Engine(**kwargs)
        else:
            engine = Engine.open(tmp_path / f"state-{len(made)}.db", **kwargs)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.close()


@pytest.fixture
def engine(make_engine: Callable[..., Engine]) -> Engine:
    """An engine with default limits on the store under test."""
    return make_engine(seed=7)
