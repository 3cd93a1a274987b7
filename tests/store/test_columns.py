"""Rows written as columns: the same documents, sequence and rollback as the same rows written one by one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

from learnloop.store import MemoryStore, SQLiteStore
from learnloop.store.base import Columns, encode_doc, json_bytes, json_texts

scalars = st.one_of(
    st.text(max_size=6),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(st.text(max_size=8)), st.lists(st.one_of(st.integers(), st.floats())), st.lists(scalars)))
def test_json_texts_spell_each_value_as_the_serialiser_does(values: list[Any]) -> None:
    texts = json_texts(values)
    if texts is not None:
        assert [t.encode() for t in texts] == [to_json(v) for v in values]
        assert ("[" + ",".join(texts) + "]").encode() == json_bytes(values)


names = st.sampled_from(["user_id", "kind", "score", "n", "note", "100%"])
#: the values of a column: all strings, all numbers, or anything (absent now and then)
columns = st.sampled_from(
    [
        st.text(max_size=5),
        st.text("abc-:_", min_size=1, max_size=5),
        st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False)),
        st.floats(0, 1),
        st.one_of(st.none(), scalars),
    ]
)


@st.composite
def column_rows(draw: Any) -> Columns:
    """Rows of one learner (often new keys only, as an ingestion writes them) or of several."""
    users = draw(st.sampled_from([["u1"], ["u2"], ["u1", "u2"]]))
    item = st.sampled_from("abcd") if draw(st.booleans()) else st.text("abcdé\x00%", min_size=1, max_size=3)
    rows = draw(
        st.lists(
            st.tuples(st.sampled_from(users), st.just("c"), item, st.text("0123", min_size=1, max_size=2)),
            min_size=1,
            max_size=60,
            unique=draw(st.booleans()),
        )
    )
    parts = [list(column) for column in zip(*rows, strict=True)]
    fields: dict[str, list[Any]] = {}
    for name in draw(st.lists(names, unique=True, max_size=4)):
        if name == "user_id" and draw(st.booleans()):
            fields[name] = list(parts[0])  # a field repeating a key part
        else:
            values = draw(columns)
            fields[name] = [draw(values) for _ in rows]
    return Columns(parts, fields)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@settings(max_examples=120, deadline=None)
@given(batches=st.lists(column_rows(), min_size=1, max_size=4), fail_at=st.integers(0, 4))
def test_columns_write_what_the_rows_write(kind: str, batches: list[Columns], fail_at: int) -> None:
    stores = [MemoryStore(), MemoryStore()] if kind == "memory" else [SQLiteStore(":memory:"), SQLiteStore(":memory:")]
    for batch in batches:  # documents made column by column are the documents made one by one
        docs = batch.json_docs()
        assert docs is None or docs == [encode_doc(doc) for _, doc in batch]
    for at, batch in enumerate(batches):
        for store, rows in zip(stores, (batch, list(batch)), strict=True):
            try:
                with store.atomic():
                    store.put_many("events", "app", rows)
                    if at == fail_at:  # a call that fails after writing leaves nothing behind
                        raise RuntimeError("after the write")
            except RuntimeError:
                pass
        by_columns, by_rows = (list(store.scan("events", "app", order="seq")) for store in stores)
        assert by_columns == by_rows
        assert [list(store.scan("events", "app", ("u1", "c"))) for store in stores][0] == list(
            stores[1].scan("events", "app", ("u1", "c"))
        )
