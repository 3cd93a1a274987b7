"""The SQLite store's format: event documents kept without the fields their key repeats, read
back as written (field order included), and files written before that format read as they were."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import SimClock
from learnloop.store import MemoryStore, SQLiteStore
from learnloop.store._compact import MARK, decode_event, encode_event
from learnloop.store.base import Columns, Doc, encode_doc

LAYOUT = ("kind", "user_id", "catalog_id", "item_id", "topic_id", "timestamp")
KEYED = ("user_id", "catalog_id", "item_id", "timestamp")
USERS, CATALOGS, ITEMS = ["u1", "u2"], ["c1", "c2"], ["i1", "i2", "é"]
STAMPS = ["2025-01-01T00:00:00.000Z", "2025-01-01T00:00:01.000Z"]
values = st.one_of(
    st.none(),
    st.text(max_size=4),
    st.integers(-5, 5),
    st.floats(0, 1),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)


@st.composite
def event_rows(draw: Any) -> list[tuple[tuple[str, ...], Doc]]:
    """Events' keys and documents: mostly in the engine's layout and naming their keys, now and
    then naming another key, missing or reordering a field, with more fields, or raw bytes."""
    rows: list[tuple[tuple[str, ...], Doc]] = []
    for _ in range(draw(st.integers(1, 12))):
        key = tuple(draw(st.sampled_from(part)) for part in (USERS, CATALOGS, ITEMS, STAMPS))
        if draw(st.integers(0, 9)) == 0:
            rows.append((key, draw(st.binary(max_size=4).map(lambda b: MARK + b))))
            continue
        named = dict(zip(KEYED, key, strict=True))
        if draw(st.booleans()):  # a field naming another key than its own
            field = draw(st.sampled_from(sorted(named)))
            named[field] = draw(st.sampled_from([*USERS, *CATALOGS, *ITEMS, *STAMPS]))
        doc = {"kind": draw(st.sampled_from(["attempt", "skip"])), **named, "topic_id": draw(values)}
        doc = {name: doc[name] for name in LAYOUT}
        if draw(st.integers(0, 4)) == 0:
            names = draw(st.permutations(list(doc)))
            doc = {name: doc[name] for name in names[: draw(st.integers(0, len(names)))]}
        for name in draw(st.lists(st.sampled_from(["score", "time_spent_ms", "session_id", "practice"]), unique=True)):
            doc[name] = draw(values)
        rows.append((key, doc))
    return rows


def as_read(doc: Doc | None) -> Any:
    """A document with its fields' order (which ``==`` on dicts does not see)."""
    return list(doc.items()) if isinstance(doc, dict) else doc


@settings(max_examples=200, deadline=None)
@given(rows=event_rows())
def test_event_documents_read_back_as_written(rows: list[tuple[tuple[str, ...], Doc]]) -> None:
    for key, doc in rows:
        blob = encode_event(key, doc)
        assert as_read(decode_event(key, blob)) == as_read(decode_event(key, encode_doc(doc)))
        in_layout = isinstance(doc, dict) and tuple(doc)[:6] == LAYOUT
        if in_layout and tuple(doc[name] for name in KEYED) == key:  # type: ignore[index]
            assert blob[:1] == MARK and len(blob) < len(encode_doc(doc))
        else:
            assert blob == encode_doc(doc)
    memory, sqlite = MemoryStore(), SQLiteStore(":memory:")
    for store in (memory, sqlite):
        store.put_many("events", "app", rows)
    keys = list(dict.fromkeys(key for key, _ in rows))
    assert [as_read(sqlite.get("events", "app", key)) for key in keys] == [
        as_read(memory.get("events", "app", key)) for key in keys
    ]
    found, expected = sqlite.get_many("events", "app", keys), memory.get_many("events", "app", keys)
    assert {key: as_read(doc) for key, doc in found.items()} == {key: as_read(doc) for key, doc in expected.items()}
    for order in ("key", "seq"):
        assert [(key, as_read(doc)) for key, doc in sqlite.scan("events", "app", order=order)] == [  # type: ignore[arg-type]
            (key, as_read(doc))
            for key, doc in memory.scan("events", "app", order=order)  # type: ignore[arg-type]
        ]


def event_columns(
    users: list[str], catalogs: list[str], items: list[str], stamps: list[str], named: list[str], **more: list[Any]
) -> Columns:
    """Event rows as the ingestion gives them: the key columns, and the documents' fields in the
    layout (with the items ``named``, the keys' items or others)."""
    fields = {
        "kind": ["attempt"] * len(users),
        "user_id": users,
        "catalog_id": catalogs,
        "item_id": named,
        "topic_id": ["t"] * len(users),
        "timestamp": stamps,
        **more,
    }
    return Columns((users, catalogs, items, stamps), fields)


@pytest.mark.parametrize("encoding", ["UTF-8", "UTF-16le"])
@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 700),
    users=st.sampled_from([["u1"], USERS]),
    scores=st.sampled_from([[0.5], [None], [1.0, None], ["é", "x"]]),
    other=st.integers(-1, 700),
)
def test_event_columns_are_stored_as_their_rows(
    tmp_path_factory: pytest.TempPathFactory, encoding: str, size: int, users: list[str], scores: list[Any], other: int
) -> None:
    """Columns (many rows per statement, in chunks) store what their rows store, in a file of
    either text encoding: the same bytes, keys, sequence and documents."""
    path = tmp_path_factory.mktemp("enc") / "events.db"
    with sqlite3.connect(path) as conn:  # the encoding is set by the first table
        conn.execute(f"PRAGMA encoding = '{encoding}'")
        conn.execute("CREATE TABLE first (a)")
    start = datetime(2025, 1, 1, tzinfo=UTC)
    items = [ITEMS[k % len(ITEMS)] for k in range(size)]
    rows = event_columns(
        [users[k % len(users)] for k in range(size)],
        ["c1"] * size,
        items,
        [format_timestamp(start + timedelta(seconds=k // 6)) for k in range(size)],  # repeated keys: the last wins
        named=[item if k != other else "elsewhere" for k, item in enumerate(items)],  # one naming another item
        score=[scores[k % len(scores)] for k in range(size)],
    )
    by_columns, by_rows = SQLiteStore(path), SQLiteStore(":memory:")
    texts = rows.json_doc_texts()
    assert texts is None or [text.encode() for text in texts] == rows.json_docs()
    by_columns.put_many("events", "app", rows)
    by_rows.put_many("events", "app", list(rows))
    stored = [store._conn.execute("SELECT * FROM events ORDER BY seq").fetchall() for store in (by_columns, by_rows)]
    if 0 <= other < size:  # a document naming another item than its key's: the formats may differ, not what is read
        assert [row[:-1] for row in stored[0]] == [row[:-1] for row in stored[1]]
    else:
        assert stored[0] == stored[1]
        assert all(v[:1] == MARK for *_, v in stored[0])
    assert by_columns._conn.execute("PRAGMA encoding").fetchone()[0] == encoding
    memory = MemoryStore()
    memory.put_many("events", "app", rows)
    stores = (by_columns, by_rows, memory)
    read = [[(k, as_read(doc)) for k, doc in store.scan("events", "app", order="seq")] for store in stores]
    assert read[0] == read[1] == read[2]


def old_format(path: Path) -> None:
    """Rewrite a file's events as the store wrote them before: each document whole."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT app, k1, k2, k3, k4, v FROM events").fetchall()
        for app, *key, blob in rows:
            conn.execute(
                "UPDATE events SET v = ? WHERE app = ? AND k1 = ? AND k2 = ? AND k3 = ? AND k4 = ?",
                (encode_doc(decode_event(key, blob)), app, *key),
            )
        assert rows and all(blob[:1] == MARK for *_, blob in rows)
        assert all(blob[:1] == b"{" for (blob,) in conn.execute("SELECT v FROM events"))


def test_a_file_of_the_earlier_format_reads_as_before_and_takes_new_events(tmp_path: Path) -> None:
    items = [{"item_id": f"q{k}", "display_name": f"Q{k}", "scorable": True, "difficulty": 0.2 * k} for k in range(4)]
    catalog = {
        "catalog_id": "c",
        "display_name": "C",
        "topics": [{"topic_id": "t", "display_name": "T", "item_refs": [{"item_id": i["item_id"]} for i in items]}],
    }
    start = datetime(2025, 1, 1, tzinfo=UTC)

    def posted(first: int, n: int) -> list[dict[str, Any]]:
        return [
            {
                "type": "attempt",
                "item_id": f"q{k % 4}",
                "catalog_id": "c",
                "timestamp": format_timestamp(start + timedelta(minutes=k)),
                "score": float(k % 3 == 0),
            }
            for k in range(first, first + n)
        ]

    clock = SimClock(start + timedelta(days=1))
    engines = {"memory": Engine(seed=1, clock=clock), "sqlite": Engine.open(tmp_path / "old.db", seed=1, clock=clock)}
    for engine in engines.values():
        engine.upsert_items(items)
        engine.upsert_catalog(catalog)
        engine.upsert_events("u1", posted(0, 30))
    engines.pop("sqlite").close()
    old_format(tmp_path / "old.db")
    engines["sqlite"] = Engine.open(tmp_path / "old.db", seed=1, clock=clock)

    def state(engine: Engine) -> Any:
        rows = [(key, as_read(doc)) for key, doc in engine.store.scan("events", "default")]  # type: ignore[arg-type]
        return rows, engine.user_status("u1", "c", [None])

    assert state(engines["sqlite"]) == state(engines["memory"])
    for engine in engines.values():  # new events and rewrites of old ones beside the old documents
        engine.upsert_events("u1", posted(20, 20))
        engine.upsert_events("u1", [{**event, "score": 0.5} for event in posted(25, 2)])
    assert state(engines["sqlite"]) == state(engines["memory"])
    formats = {blob[:1] for (blob,) in engines["sqlite"].store._conn.execute("SELECT v FROM events")}  # type: ignore[attr-defined]
    assert formats == {b"{", MARK}
    for engine in engines.values():
        engine.close()
