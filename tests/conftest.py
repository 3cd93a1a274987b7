"""Shared fixtures: engines on every store, so that the same tests run on each.

``STORES`` are the stores every engine test runs on. PostgreSQL runs the store
conformance suite and the engine tests that ask for it with
``@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])``; its
server is the one ``LEARNLOOP_TEST_POSTGRES`` names (a ``postgresql://`` URL, started
by ``scripts/test``), and each engine or store gets a fresh database.

Hypothesis runs without its clock checks (no deadline per example, no health
check on how fast examples are made): the suite asserts behaviour, never time,
and runs on a busy 2-core machine.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, settings

from learnloop import Engine

settings.register_profile("learnloop", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("learnloop")

STORES = ["memory", "sqlite"]


@pytest.fixture(params=STORES)
def store_kind(request: pytest.FixtureRequest) -> str:
    """The store under test: every test using it runs once per store."""
    return request.param


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The URL of the test PostgreSQL server; the tests fail (never skip) without one."""
    url = os.environ.get("LEARNLOOP_TEST_POSTGRES", "")
    if not url.startswith(("postgresql://", "postgres://")):
        pytest.fail(
            "LEARNLOOP_TEST_POSTGRES is not set to a postgresql:// URL: run the tests through ./scripts/test, "
            "which starts a throwaway PostgreSQL server, or point it at a server where databases may be created",
            pytrace=False,
        )
    return url


@pytest.fixture
def postgres_database(postgres_server: str) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty databases on the test server (their URLs); dropped after the test."""
    import psycopg

    made: list[str] = []
    admin = psycopg.connect(postgres_server, autocommit=True)

    def make() -> str:
        name = f"learnloop_test_{uuid.uuid4().hex[:16]}"
        admin.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        return urlsplit(postgres_server)._replace(path=f"/{name}").geturl()

    try:
        yield make
    finally:
        for name in made:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def make_engine(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Engine]]:
    """A factory of engines on ``store_kind`` (SQLite files in ``tmp_path``, fresh PostgreSQL databases);
    closes them after."""
    made: list[Engine] = []
    fresh_database = request.getfixturevalue("postgres_database") if store_kind == "postgres" else None

    def make(**kwargs: Any) -> Engine:
        if store_kind == "memory":
            engine = Engine(**kwargs)
        elif fresh_database is not None:
            engine = Engine.open(fresh_database(), **kwargs)
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
