"""``scan_fields`` of the memory, SQLite and PostgreSQL stores: a scan in write order as columns, the same
values :meth:`scan` gives document by document (documents of several shapes, whole JSON objects,
raw bytes, events in the engine's layout and out of it, rewrites, ``last_after``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop.engine import records
from learnloop.store import MemoryStore, SQLiteStore, Store
from learnloop.store.base import Columns

STAMPS = [f"2025-01-01T00:00:{s:02d}.000Z" for s in range(60)]


def _event(k: int, **more: Any) -> dict[str, Any]:
    doc = {"kind": "attempt", "user_id": "u", "catalog_id": "c", "item_id": f"i{k % 7}", "topic_id": "t"}
    return {**doc, "timestamp": STAMPS[k], **more}


def _expected(
    store: Store, prefix: tuple[str, ...], last_after: str | None, app: str = "a"
) -> tuple[list[Any], dict[str, list[Any]]]:
    rows = list(store.scan("events", app, prefix, order="seq", last_after=last_after))
    names: dict[str, None] = {}
    for _, doc in rows:
        if isinstance(doc, dict):
            names.update(dict.fromkeys(doc))
    docs = [doc if isinstance(doc, dict) else {} for _, doc in rows]
    return [key for key, _ in rows], {name: [doc.get(name) for doc in docs] for name in names}


NAMES = ("kind", "topic_id", "score", "time_spent_ms", "fraction_completed", "practice")


def _keyed(store: Store, app: str, last_after: str | None) -> tuple[dict[str, list[Any]], bool]:
    """``records.event_fields_by_key`` of learner (u, c) put in write order, and whether it was read in
    key order (with the sequence numbers)."""
    fields, seq = records.event_fields_by_key(store, app, ("u", "c"), NAMES, last_after)
    if seq is None:
        return {
            name: fields.get(name, [None] * len(fields.get("timestamp", [])))
            for name in (*NAMES, "item_id", "timestamp")
        }, False
    order = sorted(range(len(seq)), key=seq.__getitem__)
    return {name: [column[k] for k in order] for name, column in fields.items()}, True


def _names(expected: tuple[list[Any], dict[str, list[Any]]]) -> dict[str, list[Any]]:
    keys, fields = expected
    return {name: fields.get(name, [None] * len(keys)) for name in (*NAMES, "item_id", "timestamp")}


def _store(kind: str, path: Path, request: pytest.FixtureRequest) -> Any:
    if kind == "postgres":
        from learnloop.store.postgres import PostgresStore

        return PostgresStore(request.getfixturevalue("postgres_database")())
    return MemoryStore() if kind == "memory" else SQLiteStore(path)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_scan_fields_reads_what_scan_reads(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = _store(kind, tmp_path / "s.db", request)
    rows: list[tuple[tuple[str, ...], Any]] = []
    for k in range(40):
        doc: Any = _event(k, score=float(k % 2))
        if k % 5 == 1:
            doc = _event(k, time_spent_ms=k, practice=False)  # another shape
        elif k % 5 == 2:
            doc = {"timestamp": STAMPS[k], "kind": "skip", "note": [1, {"x": None}]}  # not the engine's layout
        elif k % 11 == 3:
            doc = b"\x00raw"
        rows.append((("u", "c", f"i{k % 7}", STAMPS[k]), doc))
    store.put_many("events", "a", rows)
    store.put_many("events", "a", [(rows[4][0], _event(4, score=0.25))])  # a rewrite
    keys = [("u", "c", f"i{k % 7}", STAMPS[k]) for k in range(40, 50)]
    store.put_many("events", "a", Columns(list(zip(*keys)), {"kind": ["skip"] * 10, "topic_id": ["t"] * 10}))
    store.put_many("events", "a", [(("v", "c", "i0", STAMPS[0]), _event(0, user_id="v"))])  # another learner
    for last_after in (None, STAMPS[20]):
        assert store.scan_fields("events", "a", ("u", "c"), last_after=last_after) == _expected(
            store, ("u", "c"), last_after
        )
    # the engine's reader gives the same through the store's scan_fields or document by document
    assert records.event_fields(store, "a", ("u", "c")) == _expected(store, ("u", "c"), None)
    scanned_only = records.event_fields(_ScanOnly(store), "a", ("u", "c"))  # type: ignore[arg-type]
    assert scanned_only == _expected(store, ("u", "c"), None)
    # read with the write order: not where documents are stored otherwise (then read in write order, as above)
    assert _keyed(store, "a", None) == (_names(_expected(store, ("u", "c"), None)), False)
    store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
@pytest.mark.parametrize("odd_item", ["i\u00e9\u4e2d", "i\x1fj", "i" * 300])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    script=st.lists(
        st.tuples(st.integers(0, 59), st.integers(0, 7), st.sampled_from(["a", "s", "v", "p"])), min_size=1, max_size=80
    )
)
def test_scan_fields_of_a_learners_events_in_the_engines_layout(
    kind: str, odd_item: str, script: list[tuple[int, int, str]], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Events all in the engine's layout (read as whole columns by each store), written in several
    calls, rewritten out of key order, in several shapes, some with keys that are not plain ASCII
    (a key holding the byte 0x1F, or of 255 bytes or more, is read row by row)."""
    # a store per example, but one PostgreSQL database for the whole test (an application per example)
    examples = request.node.__dict__.setdefault("examples", [])
    examples.append(None)
    app = f"a{len(examples)}"
    store = examples[0] if kind == "postgres" and len(examples) > 1 else _store(kind, tmp_path / f"{app}.db", request)
    examples[0] = store if kind == "postgres" else None
    items = ["i0", "i1", "i2", "i3", "i4", "x:y", "i-6", odd_item]
    for at in range(0, len(script), 16):
        rows = []
        for second, item, shape in script[at : at + 16]:
            more: dict[str, Any] = {
                "a": {"score": 0.5, "time_spent_ms": second},
                "s": {},
                "v": {"fraction_completed": 1},
            }.get(shape, {"score": 1.0, "practice": False})
            doc = _event(
                0, kind="skip" if shape == "s" else "attempt", item_id=items[item], timestamp=STAMPS[second], **more
            )
            rows.append((("u", "c", items[item], STAMPS[second]), doc))
        store.put_many("events", app, rows)
    store.put_many("events", app, [(("v", "c", "i0", STAMPS[0]), _event(0, user_id="v"))])  # another learner
    for last_after in (None, STAMPS[20]):
        assert store.scan_fields("events", app, ("u", "c"), last_after=last_after) == _expected(
            store, ("u", "c"), last_after, app
        )
        # the replay's reader: with the write order on SQLite and PostgreSQL (unless a key read holds the byte 0x1F)
        expected = _expected(store, ("u", "c"), last_after, app)
        in_key_order = kind != "memory" and not any("\x1f" in key[2] for key in expected[0])
        assert _keyed(store, app, last_after) == (_names(expected), in_key_order)
    if kind != "postgres":
        store.close()


class _ScanOnly:
    """A store without ``scan_fields``: read document by document."""

    def __init__(self, store: Store) -> None:
        self.scan = store.scan
