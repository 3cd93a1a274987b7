"""A bucket's latest rows (``snapshot(last_after=...)``): the rows a full snapshot filters to, read
without going over the whole bucket (a learner's events since their cached state, in memory)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.events import format_timestamp
from learnloop.store import MemoryStore, _packed
from learnloop.store._packed import Bucket

keys = st.tuples(st.sampled_from([f"q{k}" for k in range(30)]), st.sampled_from([f"t{k:03d}" for k in range(60)]))
operations = st.lists(
    st.tuples(
        st.sampled_from(["put", "delete", "tail"]),
        st.lists(keys, min_size=1, max_size=5) | st.lists(keys, min_size=33, max_size=120),
        st.sampled_from([f"t{k:03d}" for k in range(-1, 61)]),
    ),
    min_size=1,
    max_size=12,
)


def _tail(bucket: Bucket, last: str) -> list[tuple[tuple[str, ...], int, bytes]]:
    return bucket.snapshot((), last).entries(last)


@settings(max_examples=80, deadline=None)
@given(operations)
def test_the_latest_rows_are_those_a_full_snapshot_filters_to(
    ops: list[tuple[str, list[tuple[str, str]], str]],
) -> None:
    with mock.patch.object(_packed, "_BLOCK", 4):  # small blocks: many of them, partly filled, skipped or read
        bucket = Bucket(2)
        seq = 0
        for op, batch, last in ops:
            if op == "put":
                rows = []
                for suffix in batch:
                    seq += 1
                    rows.append((suffix, seq, f"doc{seq}".encode()))
                bucket.put_many(rows)
            elif op == "delete":
                for suffix in batch:
                    bucket.delete(suffix)  # (enough deletes compact the bucket)
            expected = [row for row in bucket.snapshot().entries() if row[0][-1] > last]
            assert _tail(bucket, last) == expected


def test_reading_a_long_histories_latest_events_reads_about_a_block_of_rows() -> None:
    store = MemoryStore()
    start = datetime(2026, 1, 1, tzinfo=UTC)

    def rows(first: int, n: int) -> list[tuple[tuple[str, ...], dict[str, object]]]:
        return [
            (("u", "c", f"i{k % 97}", format_timestamp(start + timedelta(seconds=k))), {"score": 1.0})
            for k in range(first, first + n)
        ]

    store.put_many("events", "app", rows(0, 20_000))
    since = format_timestamp(start + timedelta(seconds=19_990))
    assert len(list(store.scan("events", "app", ("u", "c"), order="seq", last_after=since))) == 9
    store.put_many("events", "app", rows(20_000, 3))
    parsed = []
    counting = _packed._parts

    def count(data: bytes | bytearray, pos: int, width: int) -> tuple[tuple[str, ...], int]:
        parsed.append(pos)
        return counting(data, pos, width)

    with mock.patch.object(_packed, "_parts", count):
        found = list(store.scan("events", "app", ("u", "c"), order="seq", last_after=since))
    assert [key[3] for key, _ in found] == [
        format_timestamp(start + timedelta(seconds=k)) for k in range(19_991, 20_003)
    ]
    # the rows of the blocks holding later events (and a few more to sort them), not the 20,003 stored
    assert len(parsed) < 3 * _packed._BLOCK
