"""The stores' JSON: pydantic-core's serialiser and parser where they agree with ``json``, ``json`` elsewhere."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnloop.store._codec import DocCodec
from learnloop.store.base import decode_doc, encode_doc, json_bytes, json_value

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(exclude_categories=("Cs",))),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values, NaN equal to NaN and -0.0 told from 0.0."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(st.lists(values, max_size=6) | st.dictionaries(st.text(max_size=6), values, max_size=6))
def test_json_bytes_reads_back_as_json_reads_what_json_writes(value: Any) -> None:
    ours = json_bytes(value)
    reference = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert same(json.loads(ours), json.loads(reference))
    assert same(json_value(ours), json.loads(reference))
    assert same(json_value(reference), json.loads(reference))


@given(st.dictionaries(st.sampled_from(["kind", "user_id", "score", "n", "tags"]), values, max_size=5))
def test_both_codecs_give_back_the_document(doc: dict[str, Any]) -> None:
    codec = DocCodec()
    key = ("u1", "c1")
    expected = json.loads(json.dumps(doc))
    assert same(codec.decode(codec.encode(doc, key), key), expected)
    assert same(decode_doc(encode_doc(doc)), expected)


def test_what_json_cannot_write_still_raises() -> None:
    with pytest.raises(TypeError):
        encode_doc({"when": object()})
    with pytest.raises(ValueError):
        encode_doc({"text": "\ud800"})  # a lone surrogate has no UTF-8
    with pytest.raises(TypeError):
        DocCodec().encode({"when": {1, 2}}, ("u1",))


def test_a_circular_document_is_refused_as_json_refuses_it() -> None:
    doc: dict[str, Any] = {"a": []}
    doc["a"].append(doc)
    with pytest.raises(ValueError, match="Circular reference"):
        encode_doc(doc)
    with pytest.raises(ValueError, match="Circular reference"):
        json_bytes([doc])


def test_the_flat_fast_path_keeps_nan_infinities_and_big_integers() -> None:
    blob = json_bytes([math.nan, math.inf, -math.inf, 2**70, -0.0])
    assert blob == b"[NaN,Infinity,-Infinity,1180591620717411303424,-0.0]"
    back = json_value(blob)
    assert math.isnan(back[0]) and back[1:4] == [math.inf, -math.inf, 2**70] and math.copysign(1, back[4]) < 0


def test_deep_nesting_is_read_by_json_when_the_fast_parser_refuses_it() -> None:
    deep = b"[" * 300 + b"]" * 300
    assert json_value(deep) == json.loads(deep)


@given(
    st.lists(
        st.fixed_dictionaries(
            {"user": st.sampled_from(["u1", "u2", "i1"]), "item": st.sampled_from(["i1", "x"])}
        ).flatmap(lambda d: st.fixed_dictionaries({**{k: st.just(v) for k, v in d.items()}, "n": scalars})),
        min_size=1,
        max_size=8,
    )
)
def test_documents_of_one_shape_in_turn_read_back_whichever_fields_repeat_the_key(docs: list[dict[str, Any]]) -> None:
    codec = DocCodec()
    key = ("u1", "i1")
    blobs = [codec.encode(doc, key) for doc in docs]
    for doc, blob in zip(docs, blobs, strict=True):
        assert same(codec.decode(blob, key), json.loads(json.dumps(doc)))


@given(st.lists(st.sampled_from(["u1", "c1", "u1c1", "x", 1, None]), min_size=1, max_size=7))
def test_fields_repeating_key_parts_come_back_in_their_places(values: list[Any]) -> None:
    codec = DocCodec()
    key = ("u1", "c1")
    doc = {f"f{k}": value for k, value in enumerate(values)}
    for _ in range(2):  # the second time through the shape remembered for these names
        blob = codec.encode(doc, key)
        assert list(codec.decode(blob, key).items()) == list(doc.items())
        assert list(codec.decode(b"12345678" + blob, key, 8).items()) == list(doc.items())
