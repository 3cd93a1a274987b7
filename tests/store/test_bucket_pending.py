"""A bucket against a dict over any sequence of writes, deletes and reads: keys later than every
key written (a learner's new events) are placed in key order only when the order is next used."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.store import MemoryStore
from learnloop.store._packed import Bucket
from learnloop.store.base import Columns

_ITEMS = [f"q{k}" for k in range(6)]
_key = st.tuples(st.sampled_from(_ITEMS), st.integers(0, 12))
_op = st.one_of(
    st.tuples(st.just("put"), _key),
    st.tuples(st.just("put_later"), st.sampled_from(_ITEMS), st.integers(1, 3)),  # after every key so far
    # batches of more than 32 rows are appended at once
    st.tuples(st.just("put_many"), st.lists(_key, min_size=1, max_size=6) | st.lists(_key, min_size=33, max_size=50)),
    st.tuples(st.just("delete"), _key),
    st.tuples(st.just("get"), _key),
    st.tuples(st.just("select"), st.sampled_from([(), ("q1",), ("q3",)])),
    st.tuples(st.just("snapshot"), st.sampled_from([(), ("q2",)])),
    st.tuples(st.just("len")),
)


def _stamp(t: int) -> str:
    return f"t{t:04d}"


@settings(max_examples=200, deadline=None)
@given(st.lists(_op, min_size=1, max_size=60))
def test_any_operations_read_what_a_dict_of_the_latest_rows_holds(ops: list[tuple[Any, ...]]) -> None:
    bucket = Bucket(2)
    model: dict[tuple[str, str], tuple[int, bytes]] = {}
    seq = 0
    latest = 0
    for op in ops:
        kind = op[0]
        if kind in ("put", "put_later", "put_many"):
            if kind == "put":
                keys = [(op[1][0], _stamp(op[1][1]))]
            elif kind == "put_later":
                latest = max(latest, 12) + op[2]
                keys = [(op[1], _stamp(latest))]
            else:
                keys = [(item, _stamp(t)) for item, t in op[1]]
            rows = []
            for suffix in keys:
                seq += 1
                rows.append((suffix, seq, f"d{seq}".encode()))
            expected = []
            for suffix, s, blob in rows:
                expected.append(model.get(suffix))
                model[suffix] = (s, blob)
            if len(rows) == 1:
                assert bucket.put(*rows[0]) == expected[0]
            else:
                assert bucket.put_many(rows) == expected
        elif kind == "delete":
            suffix = (op[1][0], _stamp(op[1][1]))
            assert bucket.delete(suffix) == model.pop(suffix, None)
        elif kind == "get":
            suffix = (op[1][0], _stamp(op[1][1]))
            assert bucket.get(suffix) == model.get(suffix)
        elif kind == "select":
            prefix = op[1]
            wanted = sorted(k for k in model if k[: len(prefix)] == prefix)
            assert [(suffix, s) for suffix, s, _ in bucket.select(prefix)] == [(k, model[k][0]) for k in wanted]
        elif kind == "snapshot":
            prefix = op[1]
            wanted = sorted(k for k in model if k[: len(prefix)] == prefix)
            assert bucket.snapshot(prefix).entries() == [(k, *model[k]) for k in wanted]
        else:
            assert len(bucket) == len(model)
    assert len(bucket) == len(model)
    assert [suffix for suffix, _, _ in bucket.select()] == sorted(model)
    assert bucket.doc_bytes() == sum(len(blob) for _, blob in model.values())


def test_a_key_written_again_after_a_bucket_filled_from_columns_replaces_its_row() -> None:
    store = MemoryStore()
    users, catalogs, items, stamps = ["u"] * 3, ["c"] * 3, ["q1", "q2", "q1"], ["t2", "t3", "t1"]
    store.put_many("events", "a", Columns((users, catalogs, items, stamps), {"score": [0.5, 1.0, 0.0]}))
    store.put_many("events", "a", [(("u", "c", "q2", "t3"), {"score": 0.25})])
    store.put_many("events", "a", [(("u", "c", "q0", "t4"), {"score": 0.75})])
    assert store.count("events", "a") == 4
    assert [(key[2:], doc) for key, doc in store.scan("events", "a")] == [
        (("q0", "t4"), {"score": 0.75}),
        (("q1", "t1"), {"score": 0.0}),
        (("q1", "t2"), {"score": 0.5}),
        (("q2", "t3"), {"score": 0.25}),
    ]
