"""A compiled catalog is kept across content writes that touch none of its items, and compiled
again after any that does (in this engine or another on the same file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.content import CatalogIndex
from learnloop.engine.records import CHANGES_KEY
from learnloop.engine.repository import repository as content_repo
from learnloop.engine.repository.changes import CHANGES_LOG, NAMES_PER_WRITE
from learnloop.store import SQLiteStore


def _item(item_id: str, name: str = "x", difficulty: float = 0.5, tags: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"item_id": item_id, "display_name": name, "scorable": True, "difficulty": difficulty, "tags": list(tags)}


def _catalog(catalog_id: str, item_ids: list[str]) -> dict[str, Any]:
    topic = {"topic_id": "t", "display_name": "T", "item_refs": [{"item_id": i} for i in item_ids]}
    return {"catalog_id": catalog_id, "display_name": catalog_id, "topics": [topic]}


def _setup(engine: Engine) -> None:
    engine.upsert_items([_item(f"a{k}") for k in range(5)] + [_item(f"b{k}") for k in range(5)])
    engine.upsert_catalog(_catalog("ca", [f"a{k}" for k in range(5)]))
    engine.upsert_catalog(_catalog("cb", [f"b{k}" for k in range(5)]))


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the catalogs compiled, in turn."""
    out: list[str] = []
    real = content_repo.compile_catalog

    def counted(catalog: Any, items: Any) -> CatalogIndex:
        out.append(catalog.catalog_id)
        return real(catalog, items)

    monkeypatch.setattr(content_repo, "compile_catalog", counted)
    return out


def test_writes_elsewhere_keep_a_compiled_catalog(compiled: list[str]) -> None:
    engine = Engine(seed=1)
    _setup(engine)
    first = engine.catalog_model("ca")
    engine.upsert_items([_item("b1", "renamed"), _item("new")])
    engine.upsert_catalog(_catalog("cb", ["b1", "b2"]))
    engine.delete_items(["b4"])
    engine.set_learner_options("cb", None)
    assert engine.catalog_model("ca") is first
    assert compiled == ["ca"]


@pytest.mark.parametrize(
    "write",
    [
        lambda e: e.upsert_items([_item("a1", difficulty=0.9)]),
        lambda e: e.upsert_items([_item("a2", tags=("hard",))]),
        lambda e: e.delete_items(["a3"]),
        lambda e: e.upsert_catalog(_catalog("ca", ["a1", "a2"])),
        lambda e: e.delete_catalog("cb") or e.upsert_catalog(_catalog("ca", ["a0", "b0"])),
        lambda e: e.replace_item_database([_item(f"a{k}") for k in range(5)] + [_item("b0")]),
        lambda e: e.upsert_items([_item(f"z{k}") for k in range(NAMES_PER_WRITE + 1)]),
    ],
)
def test_a_write_touching_the_catalog_or_its_items_compiles_it_again(write: Any, compiled: list[str]) -> None:
    engine = Engine(seed=1)
    _setup(engine)
    engine.catalog_model("ca")
    write(engine)
    rebuilt = engine.catalog_model("ca")
    assert compiled == ["ca", "ca"]
    fresh = Engine(seed=1, store=engine.store)  # nothing cached
    _same(rebuilt.index, fresh.catalog_index("ca"))


def test_an_item_the_catalog_refers_to_that_comes_back_compiles_it_again(compiled: list[str]) -> None:
    engine = Engine(seed=1)
    _setup(engine)
    engine.delete_items(["a2"])
    assert "a2" not in engine.catalog_index("ca").item_ids
    engine.upsert_items([_item("a2")])
    assert "a2" in engine.catalog_index("ca").item_ids


def test_another_engine_on_the_file_sees_what_was_written(tmp_path: Path, compiled: list[str]) -> None:
    one = Engine(seed=1, store=SQLiteStore(tmp_path / "s.db"))
    two = Engine(seed=1, store=SQLiteStore(tmp_path / "s.db"))
    _setup(one)
    two.catalog_model("ca")
    one.upsert_items([_item("b0", difficulty=0.1)])
    assert two.catalog_model("ca").index.item_ids == ("a0", "a1", "a2", "a3", "a4")
    assert compiled == ["ca"]
    one.upsert_items([_item("a0", difficulty=0.1)])
    assert float(two.catalog_index("ca").difficulty[0]) == pytest.approx(0.1)
    # a write that lists nothing (as by an earlier version of the library): compiled again
    one.store.put_many("meta", "default", [(("content_version",), {"v": one._content.version("default") + 1})])
    two.catalog_index("ca")
    assert compiled == ["ca", "ca", "ca"]


def test_the_list_of_changes_stays_bounded() -> None:
    engine = Engine(seed=1)
    _setup(engine)
    for k in range(3 * CHANGES_LOG):
        engine.upsert_items([_item(f"x{k}")])
    log = engine.store.get("meta", "default", CHANGES_KEY)["log"]
    assert len(log) == CHANGES_LOG and log[-1][1] == [f"i:x{3 * CHANGES_LOG - 1}"]


def _same(one: CatalogIndex, two: CatalogIndex) -> None:
    assert one.item_ids == two.item_ids and one.topic_ids == two.topic_ids
    assert one.difficulty.tolist() == two.difficulty.tolist()
    assert {k: v.tolist() for k, v in one.tag_positions.items()} == {
        k: v.tolist() for k, v in two.tag_positions.items()
    }


writes = st.lists(
    st.tuples(
        st.sampled_from(["item", "delete", "catalog"]),
        st.lists(st.sampled_from([f"{c}{k}" for c in "ab" for k in range(5)]), min_size=1, max_size=3, unique=True),
        st.floats(0.0, 1.0),
    ),
    max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(writes)
def test_the_cached_catalogs_are_those_compiled_from_scratch(ops: list[tuple[str, list[str], float]]) -> None:
    engine = Engine(seed=1)
    _setup(engine)
    for op, ids, difficulty in ops:
        for catalog_id in ("ca", "cb"):
            try:
                engine.catalog_index(catalog_id)
            except Exception:  # (a catalog may refer to no item left)
                pass
        if op == "item":
            engine.upsert_items([_item(i, difficulty=difficulty) for i in ids])
        elif op == "delete":
            engine.delete_items(ids)
        else:
            stored = {i.item_id for i in engine.item_database()}
            if all(i in stored for i in ids):
                engine.upsert_catalog(_catalog("ca" if difficulty < 0.5 else "cb", ids))
    fresh = Engine(seed=1, store=engine.store)
    for catalog_id in ("ca", "cb"):
        try:
            expected = fresh.catalog_index(catalog_id)
        except Exception as exc:
            with pytest.raises(type(exc)):
                engine.catalog_index(catalog_id)
            continue
        _same(engine.catalog_index(catalog_id), expected)


def test_the_compiled_catalogs_kept_stay_within_their_bound(
    compiled: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine(seed=1)
    engine.upsert_items([_item(f"a{k}") for k in range(20)])
    catalogs = [f"c{n}" for n in range(40)]
    for catalog_id in catalogs:
        engine.upsert_catalog(_catalog(catalog_id, [f"a{(k + len(catalog_id)) % 20}" for k in range(5)]))
    one = content_repo._index_nbytes(engine.catalog_index("c0"))
    repo = engine._content
    for cache in (repo._indexes, repo._models):
        cache.max_bytes = 10 * one  # (room for about ten catalogs and their models)
    repo.clear_caches()
    compiled.clear()
    for catalog_id in catalogs:
        engine.catalog_model(catalog_id)
    assert len(repo._indexes) <= 10 and repo._indexes.nbytes <= 10 * one and len(repo._models) <= 40
    assert compiled == catalogs
    engine.catalog_model("c39")  # the latest are kept, the first compiled again when next used
    again = engine.catalog_model("c0")
    assert compiled == [*catalogs, "c0"]
    _same(again.index, Engine(seed=1, store=engine.store).catalog_index("c0"))


def test_a_catalog_larger_than_the_bound_is_kept_alone(compiled: list[str]) -> None:
    engine = Engine(seed=1)
    _setup(engine)
    repo = engine._content
    repo._indexes.max_bytes = repo._models.max_bytes = 10
    for _ in range(3):
        engine.catalog_model("ca")
    engine.catalog_model("cb")
    engine.catalog_model("cb")
    assert compiled == ["ca", "cb"] and len(repo._indexes) == 1
