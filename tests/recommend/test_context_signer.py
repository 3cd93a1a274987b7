"""Context tokens: a token verified once is remembered without weakening what verify refuses."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.errors import ContextError
from learnloop.recommend.context import ContextSigner


def test_a_remembered_token_is_still_refused_for_another_app_or_kind_and_by_another_secret() -> None:
    signer = ContextSigner(b"secret")
    token = signer.sign("app-1", "s", {"id": "abc"})
    for _ in range(2):  # the second time from what the first verification remembered
        assert signer.verify(token, app="app-1", kind="s") == {"id": "abc"}
        with pytest.raises(ContextError, match="another application"):
            signer.verify(token, app="app-2", kind="s")
        with pytest.raises(ContextError, match="not a recommendation context"):
            signer.verify(token, app="app-1", kind="r")
    with pytest.raises(ContextError, match="does not verify"):
        ContextSigner(b"other").verify(token, app="app-1", kind="s")
    body, mac = token.split(".")
    forged = f"{body}.{'A' if mac[0] != 'A' else 'B'}{mac[1:]}"
    with pytest.raises(ContextError, match="does not verify"):
        signer.verify(forged, app="app-1", kind="s")


def test_a_caller_changing_a_payload_changes_no_later_one() -> None:
    signer = ContextSigner(b"secret")
    token = signer.sign("a", "r", {"s": "x", "n": 1})
    first = signer.verify(token, app="a", kind="r")
    first["s"] = "changed"
    assert signer.verify(token, app="a", kind="r") == {"s": "x", "n": 1}


def test_many_tokens_keep_verifying_past_what_is_remembered() -> None:
    signer = ContextSigner(b"secret")
    tokens = [signer.sign("a", "r", {"n": k}) for k in range(5000)]
    assert [signer.verify(t, app="a", kind="r")["n"] for t in tokens] == list(range(5000))
    assert signer.verify(tokens[0], app="a", kind="r") == {"n": 0}


def test_a_token_remembered_when_signed_verifies_to_what_its_text_decodes_to() -> None:
    signer = ContextSigner(b"secret")
    payload = {"t": "topic é", "s": "x", "n": 2**70, "i": "item", "b": True, "z": None}
    token = signer.sign("a", "r", payload)
    payload["s"] = "changed after signing"
    remembered = signer.verify(token, app="a", kind="r")
    decoded = ContextSigner(b"secret").verify(token, app="a", kind="r")  # a signer that remembers nothing
    assert remembered == decoded and list(remembered) == list(decoded)
    assert decoded["s"] == "x"


def test_a_payload_that_json_would_change_is_not_remembered_when_signed() -> None:
    signer = ContextSigner(b"secret")
    token = signer.sign("a", "r", {"x": 0.5, "l": (1, 2)})
    assert signer.verify(token, app="a", kind="r") == {"x": 0.5, "l": [1, 2]}


_VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["plain", 'quote"d', "back\\slash", "tab\t", "del\x7f", "é", "\ud800"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=300, deadline=None)
@given(
    app=st.text(max_size=8),
    kind=st.sampled_from(["r", "s", 'q"']),
    payload=st.dictionaries(st.text(max_size=6), _VALUES, max_size=5),
    secret=st.sampled_from([b"secret", b"k" * 64, b"\xff" * 65]) | st.binary(min_size=1, max_size=150),
)
def test_a_token_is_the_hmac_of_the_sorted_compact_json_of_app_kind_and_payload(
    app: str, kind: str, payload: dict[str, Any], secret: bytes
) -> None:
    body = json.dumps({"a": app, "k": kind, "p": payload}, separators=(",", ":"), sort_keys=True).encode()
    encoded = base64.urlsafe_b64encode(body).rstrip(b"=")
    mac = base64.urlsafe_b64encode(hmac.new(secret, encoded, hashlib.sha256).digest()[:18]).rstrip(b"=")
    assert ContextSigner(secret).sign(app, kind, payload) == f"{encoded.decode()}.{mac.decode()}"
