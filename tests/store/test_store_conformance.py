"""The same checks against every store: reads, writes, order, atomicity, durability."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from learnloop import Engine
from learnloop.store import TABLES, MemoryStore, PostgresStore, SQLiteStore, Store


class Boom(Exception):
    pass


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """Every store, PostgreSQL included (engine tests elsewhere run on memory and SQLite)."""
    return request.param


@pytest.fixture
def store(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    made: Store
    if store_kind == "memory":
        made = MemoryStore()
    elif store_kind == "sqlite":
        made = SQLiteStore(tmp_path / "store.db")
    else:
        made = PostgresStore(request.getfixturevalue("postgres_database")())
    yield made
    made.close()


def test_is_a_store(store: Store) -> None:
    assert isinstance(store, Store)


def test_get_put_and_overwrite(store: Store) -> None:
    assert store.get("items", "app", ("q1",)) is None
    store.put_many("items", "app", [(("q1",), {"item_id": "q1", "n": 1})])
    assert store.get("items", "app", ("q1",)) == {"item_id": "q1", "n": 1}
    store.put_many("items", "app", [(("q1",), {"item_id": "q1", "n": 2})])
    assert store.get("items", "app", ("q1",)) == {"item_id": "q1", "n": 2}
    assert store.count("items", "app") == 1


def test_documents_round_trip_as_json(store: Store) -> None:
    doc = {"s": 'é\u2603 "quoted"', "i": 3, "f": 0.25, "b": True, "n": None, "l": [1, [2, {"x": "y"}]], "t": (1, 2)}
    store.put_many("catalogs", "app", [(("c",), doc)])
    assert store.get("catalogs", "app", ("c",)) == {**doc, "t": [1, 2]}


def test_bytes_documents_round_trip(store: Store) -> None:
    blobs = [b"", b"\x00\x01\xff", b'{"not": "json"}', bytes(range(256))]
    store.put_many("learners", "app", [((f"u{i}", "c"), blob) for i, blob in enumerate(blobs)])
    assert [store.get("learners", "app", (f"u{i}", "c")) for i in range(len(blobs))] == blobs


def test_returned_documents_are_copies(store: Store) -> None:
    doc = {"tags": ["a"]}
    store.put_many("items", "app", [(("q1",), doc)])
    doc["tags"].append("changed-after-put")
    got = store.get("items", "app", ("q1",))
    assert got == {"tags": ["a"]}
    got["tags"].append("changed-after-get")  # type: ignore[index]
    assert store.get("items", "app", ("q1",)) == {"tags": ["a"]}


def test_get_many_returns_only_what_exists(store: Store) -> None:
    store.put_many("items", "app", [((f"q{i}",), {"i": i}) for i in range(1000)])
    keys = [(f"q{i}",) for i in range(0, 1200, 3)]
    got = store.get_many("items", "app", keys)
    assert got == {(f"q{i}",): {"i": i} for i in range(0, 1000, 3)}
    assert store.get_many("items", "app", []) == {}


def test_get_many_on_a_wide_table(store: Store) -> None:
    store.put_many("events", "app", [(("u", "c", "q1", "t1"), {"x": 1}), (("u", "c", "q2", "t1"), {"x": 2})])
    assert store.get_many("events", "app", [("u", "c", "q2", "t1"), ("u", "c", "q3", "t1")]) == {
        ("u", "c", "q2", "t1"): {"x": 2}
    }


def test_scan_keys_and_count_by_prefix_in_key_order(store: Store) -> None:
    rows = [
        (("u2", "c1", "q1", "2024-01-02"), {"n": 1}),
        (("u1", "c2", "q1", "2024-01-01"), {"n": 2}),
        (("u1", "c1", "q2", "2024-01-01"), {"n": 3}),
        (("u1", "c1", "q1", "2024-01-03"), {"n": 4}),
    ]
    store.put_many("events", "app", rows)
    assert [doc["n"] for _, doc in store.scan("events", "app")] == [4, 3, 2, 1]  # type: ignore[index]
    assert store.keys("events", "app", ("u1", "c1")) == [
        ("u1", "c1", "q1", "2024-01-03"),
        ("u1", "c1", "q2", "2024-01-01"),
    ]
    assert [k for k, _ in store.scan("events", "app", ("u1",))] == [k for k, _ in sorted(rows)[:3]]
    assert store.count("events", "app") == 4
    assert store.count("events", "app", ("u1",)) == 3
    assert store.count("events", "app", ("u1", "c1", "q1", "2024-01-03")) == 1
    assert store.count("events", "app", ("nobody",)) == 0


def test_key_order_is_code_point_order(store: Store) -> None:
    ids = ["b", "B", "a", "a:1", "a-1", "a_1", "aa", "é", "0", "Z"]
    store.put_many("items", "app", [((i,), {}) for i in ids])
    assert [k[0] for k in store.keys("items", "app")] == sorted(ids)


def test_scan_in_sequence_order_follows_the_last_write(store: Store) -> None:
    store.put_many("items", "app", [(("c",), {"v": 1}), (("a",), {"v": 1}), (("b",), {"v": 1})])
    store.put_many("items", "app", [(("a",), {"v": 2})])
    assert [k[0] for k, _ in store.scan("items", "app", order="seq")] == ["c", "b", "a"]
    assert [k[0] for k, _ in store.scan("items", "app", order="key")] == ["a", "b", "c"]


def test_scan_after_a_last_key_part_in_either_order(store: Store) -> None:
    stamps = ["2024-01-03", "2024-01-01", "2024-01-02", "2024-01-02"]
    store.put_many("events", "app", [(("u", "c", f"q{k}", s), {"k": k}) for k, s in enumerate(stamps)])
    store.put_many("events", "app", [(("v", "c", "q0", "2024-01-09"), {"k": 9})])
    after = store.scan("events", "app", ("u", "c"), order="seq", last_after="2024-01-01")
    assert [doc["k"] for _, doc in after] == [0, 2, 3]  # type: ignore[index]
    after = store.scan("events", "app", ("u",), last_after="2024-01-02")
    assert [k for k, _ in after] == [("u", "c", "q0", "2024-01-03")]
    assert [k[0] for k, _ in store.scan("events", "app", last_after="2024-01-03")] == ["v"]


@pytest.mark.parametrize("n", [3, 300])
def test_scans_of_one_learner_with_few_and_many_rows(store: Store, n: int) -> None:
    # many rows under one (user, catalog) exercise the bulk path of stores that copy before decoding
    rows = {("u", "c", f"q{k % 7}", f"2024-01-01T00:{k // 60:02d}:{k % 60:02d}Z"): {"k": k} for k in range(n)}
    store.put_many("events", "app", list(reversed(list(rows.items()))))
    store.put_many("events", "app", [(("u", "d", "q0", "2024-01-01"), {"k": -1})])
    for prefix in [("u", "c"), ("u", "c", "q3"), ("u",)]:
        want = sorted(key for key in [*rows, ("u", "d", "q0", "2024-01-01")] if key[: len(prefix)] == prefix)
        assert [key for key, _ in store.scan("events", "app", prefix)] == want
        assert store.keys("events", "app", prefix) == want
        assert store.count("events", "app", prefix) == len(want)
    cut = "2024-01-01T00:02:30Z"
    after = store.scan("events", "app", ("u", "c"), order="seq", last_after=cut)
    assert [doc["k"] for _, doc in after] == sorted((k for k in range(n) if k >= 151), reverse=True)  # type: ignore[index]
    got = dict(store.scan("events", "app", ("u", "c", "q3"), last_after=cut))
    assert got == {key: doc for key, doc in rows.items() if key[2] == "q3" and key[3] > cut}


def test_delete_many_returns_what_existed(store: Store) -> None:
    store.put_many("items", "app", [(("a",), {}), (("b",), {})])
    assert store.delete_many("items", "app", [("a",), ("zz",), ("a",)]) == [("a",)]
    assert store.keys("items", "app") == [("b",)]


def test_delete_prefix(store: Store) -> None:
    store.put_many("learners", "app", [(("u1", "c1"), {}), (("u1", "c2"), {}), (("u2", "c1"), {})])
    assert store.delete_prefix("learners", "app", ("u1",)) == 2
    assert store.keys("learners", "app") == [("u2", "c1")]


def test_applications_are_apart(store: Store) -> None:
    store.put_many("items", "app-1", [(("q1",), {"owner": 1})])
    store.put_many("items", "app-2", [(("q1",), {"owner": 2}), (("q2",), {"owner": 2})])
    assert store.get("items", "app-1", ("q1",)) == {"owner": 1}
    assert store.keys("items", "app-1") == [("q1",)]
    assert store.count("items", "app-2") == 2
    assert store.delete_many("items", "app-1", [("q2",)]) == []
    assert store.delete_prefix("items", "app-1", ()) == 1
    assert store.count("items", "app-2") == 2


def test_tables_are_apart(store: Store) -> None:
    store.put_many("items", "app", [(("x",), {"t": "items"})])
    store.put_many("catalogs", "app", [(("x",), {"t": "catalogs"})])
    assert store.get("items", "app", ("x",)) == {"t": "items"}
    assert store.get("catalogs", "app", ("x",)) == {"t": "catalogs"}


@pytest.mark.parametrize("bad_key", [(), ("a", "b"), (1,), ("a", None)])
def test_keys_of_the_wrong_width_or_type_are_refused(store: Store, bad_key: tuple) -> None:
    with pytest.raises(ValueError, match="needs a key of 1 strings"):
        store.put_many("items", "app", [(bad_key, {})])
    with pytest.raises(ValueError):
        store.get("items", "app", bad_key)
    with pytest.raises(ValueError):
        store.get_many("items", "app", [bad_key])
    with pytest.raises(ValueError):
        store.delete_many("items", "app", [bad_key])
    assert store.count("items", "app") == 0


def test_a_prefix_longer_than_the_key_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="prefix"):
        store.keys("items", "app", ("a", "b"))
    with pytest.raises(ValueError, match="prefix"):
        list(store.scan("learners", "app", ("a", "b", "c")))


def test_unknown_tables_are_refused(store: Store) -> None:
    for call in (
        lambda: store.get("nope", "app", ("a",)),
        lambda: store.get_many("nope", "app", []),
        lambda: store.put_many("nope", "app", [(("a",), {})]),
        lambda: store.keys("nope", "app"),
        lambda: store.count("nope", "app"),
        lambda: list(store.scan("nope", "app")),
        lambda: store.delete_prefix("nope", "app", ()),
    ):
        with pytest.raises(KeyError, match="unknown table"):
            call()


def test_a_document_that_is_not_json_is_refused_and_nothing_is_written(store: Store) -> None:
    with pytest.raises(TypeError):
        store.put_many("items", "app", [(("ok",), {"a": 1}), (("bad",), {"a": {1, 2}})])
    assert store.count("items", "app") == 0


def test_every_table_is_usable(store: Store) -> None:
    for table, width in TABLES.items():
        key = tuple(f"k{i}" for i in range(width))
        store.put_many(table, "app", [(key, {"table": table})])
        assert store.get(table, "app", key) == {"table": table}


# -- atomicity ------------------------------------------------------------------------------


def _snapshot(store: Store) -> dict[str, list]:
    return {table: list(store.scan(table, "app")) for table in TABLES}


def test_atomic_block_commits_together(store: Store) -> None:
    with store.atomic():
        store.put_many("items", "app", [(("a",), {})])
        store.put_many("catalogs", "app", [(("c",), {})])
        assert store.get("items", "app", ("a",)) == {}  # a block reads its own writes
    assert store.keys("items", "app") == [("a",)] and store.keys("catalogs", "app") == [("c",)]


def test_atomic_block_rolls_back_everything_on_error(store: Store) -> None:
    store.put_many("items", "app", [(("keep",), {"v": 1}), (("gone",), {"v": 1})])
    before = _snapshot(store)
    with pytest.raises(Boom), store.atomic():
        store.put_many("items", "app", [(("keep",), {"v": 2}), (("new",), {"v": 2})])
        store.delete_many("items", "app", [("gone",)])
        store.delete_prefix("items", "app", ())
        store.put_many("catalogs", "app", [(("c",), {})])
        raise Boom
    assert _snapshot(store) == before


def test_nested_atomic_commits_with_the_outer_block(store: Store) -> None:
    with pytest.raises(Boom), store.atomic():
        store.put_many("items", "app", [(("outer",), {})])
        with store.atomic():
            store.put_many("items", "app", [(("inner",), {})])
        raise Boom
    assert store.keys("items", "app") == []


def test_nested_atomic_that_raises_undoes_its_own_writes_only(store: Store) -> None:
    store.put_many("items", "app", [(("old",), {"v": 0})])
    with store.atomic():
        store.put_many("items", "app", [(("outer",), {})])
        with pytest.raises(Boom), store.atomic():
            store.put_many("items", "app", [(("inner",), {}), (("old",), {"v": 1})])
            store.delete_many("items", "app", [("outer",)])
            raise Boom
        store.put_many("items", "app", [(("after",), {})])
    assert store.keys("items", "app") == [("after",), ("old",), ("outer",)]
    assert store.get("items", "app", ("old",)) == {"v": 0}


def test_rows_named_to_read_answer_as_plain_reads(store: Store) -> None:
    """``atomic(reads=...)`` is a hint: each read in the block answers what it would without it,
    a row written in the block included, read once or twice, present or not."""
    store.put_many("learners", "app", [(("u", "c"), {"rev": 1})])
    store.put_many("sessions", "app", [(("u", "s"), {"n": 1})])
    rows = [("learners", "app", ("u", "c")), ("sessions", "app", ("u", "s")), ("sessions", "app", ("u", "none"))]
    with store.atomic(learners=[("app", "u")], reads=rows):
        assert store.get("sessions", "app", ("u", "none")) is None
        assert store.get("learners", "app", ("u", "c")) == {"rev": 1}
        assert store.get("learners", "app", ("u", "c")) == {"rev": 1}
        store.put_many("sessions", "app", [(("u", "s"), {"n": 2}), (("u", "none"), {"n": 0})])
        assert store.get("sessions", "app", ("u", "s")) == {"n": 2}
        assert store.get("sessions", "app", ("u", "none")) == {"n": 0}
    with pytest.raises(Boom), store.atomic(learners=[("app", "u")], reads=rows[:1]):
        store.delete_many("learners", "app", [("u", "c")])
        assert store.get("learners", "app", ("u", "c")) is None
        raise Boom
    with store.atomic(reads=[("learners", "other", ("u", "c"))]):  # another application's row
        assert store.get("learners", "other", ("u", "c")) is None
        assert store.get("learners", "app", ("u", "c")) == {"rev": 1}
    assert store.get("sessions", "app", ("u", "s")) == {"n": 2}


def test_a_failing_write_outside_a_block_changes_nothing(store: Store) -> None:
    with pytest.raises(ValueError):
        store.delete_many("items", "app", [("a",), ("too", "wide")])
    store.put_many("items", "app", [(("a",), {})])
    with pytest.raises(ValueError):
        store.delete_many("items", "app", [("a",), ("too", "wide")])
    assert store.keys("items", "app") == [("a",)]


# -- durability -----------------------------------------------------------------------------


def test_sqlite_data_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "durable.db"
    store = SQLiteStore(path)
    store.put_many("items", "app", [(("q1",), {"item_id": "q1"})])
    store.put_many("learners", "app", [(("u", "c"), b"\x01\x02")])
    with pytest.raises(Boom), store.atomic():
        store.put_many("items", "app", [(("uncommitted",), {})])
        raise Boom
    store.close()
    again = SQLiteStore(path)
    try:
        assert again.keys("items", "app") == [("q1",)]
        assert again.get("learners", "app", ("u", "c")) == b"\x01\x02"
        again.put_many("items", "app", [(("q2",), {})])
        assert [k[0] for k, _ in again.scan("items", "app", order="seq")] == ["q1", "q2"]
    finally:
        again.close()


def test_engine_content_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "engine.db"
    with Engine.open(path) as engine:
        engine.upsert_items([{"item_id": "q1", "display_name": "Q1", "scorable": True, "tags": ["t"]}])
        engine.upsert_catalog(
            {
                "catalog_id": "c",
                "display_name": "C",
                "topics": [{"topic_id": "t", "display_name": "T", "item_refs": [{"item_id": "q1"}]}],
            }
        )
        before = engine.catalog("c", app="default")
    with Engine.open(path) as engine:
        assert engine.catalog_ids() == ["c"]
        assert engine.catalog("c") == before
        assert [i.item_id for i in engine.item_database()] == ["q1"]
        assert engine.catalog_index("c").item_ids == ("q1",)


def test_a_file_of_an_earlier_version_is_migrated(tmp_path: Path) -> None:
    import sqlite3

    from learnloop import Engine

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for table in ("assets", "views", "users"):
        conn.execute(
            f"CREATE TABLE {table} (app TEXT NOT NULL, k1 TEXT NOT NULL, k2 TEXT NOT NULL, k3 TEXT NOT NULL, "
            "k4 TEXT NOT NULL, seq INTEGER NOT NULL, v BLOB NOT NULL, PRIMARY KEY (app, k1, k2, k3, k4)) WITHOUT ROWID"
        )
    conn.execute("INSERT INTO assets VALUES ('default', 'q1', '', '', '', 1, ?)", (b'{"id":"q1","type":"exercise"}',))
    conn.execute("INSERT INTO users VALUES ('default', 'u1', '', '', '', 2, ?)", (b'{"type":"tester"}',))
    conn.commit()
    conn.close()
    engine = Engine.open(path)
    assert engine.documents("v1.assets", ["q1"]) == {"q1": {"id": "q1", "type": "exercise"}}
    assert engine.scan_documents("v1.users") == [("u1", {"type": "tester"})]
    engine.close()
    tables = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not tables & {"assets", "views", "users"}
