"""Content writes cost what they change: upserting a few items or a small catalog reads the items it
names, not the whole item database."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from learnloop import Engine
from learnloop.errors import LimitExceededError
from learnloop.limits import Limits


class Reads:
    """The item rows an engine's store is asked for, by call (wrapping the store's readers)."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rows: list[tuple[str, int]] = []
        store = engine.store
        keys, scan, get_many = store.keys, store.scan, store.get_many

        def counted_keys(table: str, app: str, prefix: tuple[str, ...] = ()) -> list[Any]:
            found = keys(table, app, prefix)
            self._add(table, "keys", len(found))
            return found

        def counted_scan(table: str, app: str, prefix: tuple[str, ...] = (), **kw: Any) -> Any:
            found = list(scan(table, app, prefix, **kw))
            self._add(table, "scan", len(found))
            return iter(found)

        def counted_get_many(table: str, app: str, wanted: Iterable[Any]) -> dict[Any, Any]:
            wanted = list(wanted)
            self._add(table, "get_many", len(wanted))
            return get_many(table, app, wanted)

        monkeypatch.setattr(store, "keys", counted_keys)
        monkeypatch.setattr(store, "scan", counted_scan)
        monkeypatch.setattr(store, "get_many", counted_get_many)

    def _add(self, table: str, call: str, n: int) -> None:
        if table == "items":
            self.rows.append((call, n))


@pytest.fixture
def engine() -> Engine:
    engine = Engine(seed=1, limits=Limits(max_items=2_003))
    engine.upsert_items([{"item_id": f"x{k}", "display_name": "x", "scorable": True} for k in range(2_000)])
    return engine


def test_upserting_an_item_reads_that_item_not_the_item_database(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = Reads(engine, monkeypatch)
    engine.upsert_items([{"item_id": "new", "display_name": "n", "scorable": True}])
    engine.upsert_items([{"item_id": "x5", "display_name": "renamed", "scorable": True}])
    assert reads.rows == [("get_many", 1), ("get_many", 1)]
    assert {i.item_id: i.display_name for i in engine.item_database()}["x5"] == "renamed"


def test_upserting_a_small_catalog_reads_the_items_it_names(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(engine, monkeypatch)
    topic = {"topic_id": "t", "display_name": "T", "item_refs": [{"item_id": "x1"}, {"item_id": "x2"}]}
    engine.upsert_catalog({"catalog_id": "c", "display_name": "C", "topics": [topic]})
    assert reads.rows == [("get_many", 2)]
    assert list(engine.catalog_index("c").item_ids) == ["x1", "x2"]


def test_the_item_limit_still_counts_the_items_stored(engine: Engine) -> None:
    engine.upsert_items([{"item_id": f"x{k}", "display_name": "again", "scorable": True} for k in range(2_000)])
    engine.upsert_items([{"item_id": f"y{k}", "display_name": "y", "scorable": True} for k in range(3)])
    with pytest.raises(LimitExceededError, match="2004 > 2003"):
        engine.upsert_items(
            [
                {"item_id": "x0", "display_name": "x", "scorable": True},
                {"item_id": "z", "display_name": "z", "scorable": True},
            ]
        )
