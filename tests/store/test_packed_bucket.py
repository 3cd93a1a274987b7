"""A packed bucket against a dict: batches of writes of any size, overwrites within and across batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.store._packed import Bucket

keys = st.tuples(st.sampled_from([f"q{k}" for k in range(40)]), st.sampled_from([f"t{k:03d}" for k in range(12)]))
batches = st.lists(
    st.lists(keys, min_size=1, max_size=8) | st.lists(keys, min_size=33, max_size=300), min_size=1, max_size=6
)


@settings(max_examples=60, deadline=None)
@given(batches)
def test_batches_of_writes_keep_the_latest_row_of_each_key_in_key_order(batches: list[list[tuple[str, str]]]) -> None:
    bucket = Bucket(2)
    model: dict[tuple[str, str], tuple[int, bytes]] = {}
    seq = 0
    for batch in batches:
        rows = []
        for suffix in batch:
            seq += 1
            rows.append((suffix, seq, f"doc{seq}".encode()))
        expected_previous = []
        for suffix, s, blob in rows:
            expected_previous.append(model.get(suffix))
            model[suffix] = (s, blob)
        assert bucket.put_many(rows) == expected_previous
        selected = bucket.select()
        assert [suffix for suffix, _, _ in selected] == sorted(model)
        assert [model[suffix][0] for suffix, _, _ in selected] == [s for _, s, _ in selected]
        assert all(bucket.get(suffix) == row for suffix, row in model.items())
