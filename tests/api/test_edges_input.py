"""Input at the edges, through ``V1Api.handle`` and ``V2Api.handle``: timestamps at the ends of
the calendar, malformed contexts, huge numbers, arguments outside the type hints, empty API keys.

Every such request is answered (never raised): a 400 naming the field, or for a v1 offline
event a warning, and nothing is stored.
"""

from __future__ import annotations

import base64
import hmac
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnloop import Engine
from learnloop._http import check_api_keys, header, resolve_api_key
from learnloop.api import V1Api, V2Api
from learnloop.errors import ContextError, ValidationError
from learnloop.events import MAX_TIMESTAMP, MIN_TIMESTAMP, format_timestamp, parse_timestamp
from learnloop.recommend import ContextSigner
from learnloop.store import TABLES

SECRET = b"edge-secret"
NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
GOOD_TS = "2025-03-01T09:01:00Z"
RANGE = "0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z"

#: valid ISO 8601, but not an instant the engine can hold once in UTC
EDGE_TIMESTAMPS = [
    "0001-01-01T00:00:00+01:00",  # UTC year 0
    "0001-01-01T00:59:59.999+01:00",
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59-01:00",  # UTC year 10000
    "9999-12-31T00:01:00-23:59",
    "9999-12-31T23:59:59.999999Z",  # epoch seconds as a float round up to year 10000
    "9999-12-31T23:59:59.9995Z",
    "9999-12-31T23:59:59.999001",
]
#: the first and the last instant the engine holds, in several spellings
BOUNDARY_TIMESTAMPS = [
    "0001-01-01T00:00:00Z",
    "0001-01-01T01:00:00+01:00",
    "9999-12-31T23:59:59.999Z",
    "9999-12-31T22:59:59.999-01:00",
    "9999-12-31T23:59:59",
]


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _signed(body: bytes) -> str:
    """A token whose MAC verifies (made with the engine's secret) around ``body``."""
    encoded = _b64(body)
    mac = _b64(hmac.new(SECRET, encoded.encode(), "sha256").digest()[:18])
    return f"{encoded}.{mac}"


MALFORMED_CONTEXTS = {
    "empty": "",
    "non-ascii mac": "abc.\u00e9",
    "non-ascii payload": "\u00e9\u00e9.abcd",
    "non-ascii only": "\u00e9",
    "very long": "x" * 100_000,
    "very long with a dot": "x" * 50_000 + "." + "y" * 50_000,
    "no dot": "abcdef",
    "two dots": "a.b.c",
    "only a dot": ".",
    "empty mac": "eyJhIjoiYiJ9.",
    "bad base64": "!!!*.???",
    "base64 of non-JSON": _b64(b"not json at all") + ".AAAAAAAAAAAAAAAAAAAAAAAA",
    "base64 of a JSON list": _b64(b"[1, 2]") + ".AAAAAAAAAAAAAAAAAAAAAAAA",
    "signed non-JSON": _signed(b"not json at all"),
    "signed non-UTF-8": _signed(b"\xff\xfe\x00"),
    "signed JSON list": _signed(b"[1, 2]"),
    "signed JSON string": _signed(b'"default"'),
    "signed JSON null": _signed(b"null"),
    "signed envelope with a list payload": _signed(b'{"a": "default", "k": "s", "p": []}'),
    "signed envelope without application": _signed(b'{"k": "s", "p": {"id": "00"}}'),
    "signed envelope with a numeric kind": _signed(b'{"a": "default", "k": 1, "p": {"id": "00"}}'),
}

ITEMS = [
    {"item_id": "a1", "display_name": "A1", "scorable": True, "difficulty": 0.4},
    {"item_id": "a2", "display_name": "A2", "scorable": True, "difficulty": 0.6},
]
CATALOG = {
    "catalog_id": "course",
    "display_name": "Course",
    "topics": [{"topic_id": "A", "display_name": "A", "item_refs": [{"item_id": "a1"}, {"item_id": "a2"}]}],
}
LEARNER = {"id": "u1", "type": "learner"}


def snapshot(engine: Engine) -> dict[str, list[Any]]:
    return {t: list(engine.store.scan(t, "default")) for t in TABLES}


@pytest.fixture
def engine(make_engine: Callable[..., Engine]) -> Engine:
    return make_engine(seed=5, clock=lambda: NOW, secret=SECRET)


@pytest.fixture
def v2(engine: Engine) -> V2Api:
    api = V2Api(engine)
    assert api.handle("POST", "/v2/upsert-items", body={"items": ITEMS}).status == 200
    assert api.handle("POST", "/v2/upsert-catalog", body=CATALOG).status == 200
    return api


@pytest.fixture
def v1(engine: Engine) -> V1Api:
    api = V1Api(engine)
    assert api.handle("PUT", "/v1/assets/q1", body={"type": "exercise"}).status == 200
    view = {"name": "View", "assets": [{"asset_id": "q1", "path": "/u"}]}
    assert api.handle("PUT", "/v1/views/view", body=view).status == 200
    return api


def session(v2: V2Api, user_id: str = "u1") -> tuple[str, str]:
    """A new session context and the recommendation context of its first step."""
    body = {"user_id": user_id, "catalog_id": "course", "mode": {"type": "learn"}, "filter": {}}
    r = v2.handle("POST", "/v2/create-adaptive-session", body=body)
    assert r.status == 200, r.body
    context = r.body["data"]["session_context"]
    r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context})
    assert r.status == 200, r.body
    return context, r.body["data"]["recommendation"]["recommendation_context"]


def v1_event(timestamp: str, *, offline: bool = False) -> dict[str, Any]:
    return {
        "type": "response_submit",
        "user": LEARNER,
        "timestamp": timestamp,
        "is_offline_event": offline,
        "attributes": {"view_id": "view", "asset_id": "q1", "result": "correct"},
    }


def next_assets(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "user": LEARNER,
        "view_id": "view",
        "filter": {"asset_types": ["exercise"], "paths": ["/"]},
        "mode": {"type": "learn"},
        "limit": 1,
        "user_events": events,
    }


def v2_error(status: int, body: Any) -> str:
    """The message of a v2 error body (asserting its documented shape)."""
    assert isinstance(body, dict) and set(body) == {"error"}, body
    assert body["error"]["status"] == status and isinstance(body["error"]["message"], str), body
    return body["error"]["message"]


def v1_errors(status: int, body: Any) -> list[str]:
    """The details of a v1 error body (asserting its documented shape)."""
    assert isinstance(body, dict) and list(body) == ["errors"] and body["errors"], body
    assert all(e["status"] == status for e in body["errors"]), body
    return [e["detail"] for e in body["errors"]]


# -- the probe: every endpoint that takes a timestamp or a context -------------------------------

TIMESTAMP_ENDPOINTS = [
    "v2 upsert-events",
    "v2 adaptive-engine",
    "v1 user-events online",
    "v1 user-events offline",
    "v1 next-assets online",
    "v1 next-assets offline",
]


@pytest.mark.parametrize("timestamp", EDGE_TIMESTAMPS)
@pytest.mark.parametrize("endpoint", TIMESTAMP_ENDPOINTS)
def test_edge_timestamps_are_refused_naming_the_field_and_nothing_is_stored(
    v2: V2Api, v1: V1Api, engine: Engine, endpoint: str, timestamp: str
) -> None:
    context, rec = session(v2)
    before = snapshot(engine)
    if endpoint == "v2 upsert-events":
        event = {"type": "attempt", "item_id": "a1", "catalog_id": "course", "timestamp": timestamp, "score": 1}
        r = v2.handle("POST", "/v2/upsert-events", body={"user_id": "u1", "events": [event]})
        message = v2_error(400, r.body)
        assert "'events[0].attempt.timestamp'" in message and RANGE in message
    elif endpoint == "v2 adaptive-engine":
        event = {"type": "attempt", "timestamp": timestamp, "recommendation_context": rec, "score": 1}
        r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context, "events": [event]})
        message = v2_error(400, r.body)
        assert "'events[0].attempt.timestamp'" in message and RANGE in message
    else:
        offline = endpoint.endswith("offline")
        path = "/v1/user-events" if "user-events" in endpoint else "/v1/next-assets"
        events = [v1_event(timestamp, offline=offline)]
        r = v1.handle("POST", path, body={"user_events": events} if "user-events" in path else next_assets(events))
        expected = f"'user_events[0].timestamp' timestamp {timestamp!r} is outside the supported range {RANGE} (in UTC)"
        if offline:
            assert r.status == 200 and len(r.body["warnings"]) == 1, r.body
            assert r.body["warnings"][0].startswith(expected)
            assert r.body["duplicate_events"] == []
            # next-assets records its user; no event, no learner state
            after = snapshot(engine)
            assert after["events"] == before["events"] and after["learners"] == before["learners"]
            return
        assert v1_errors(400, r.body)[0].startswith(expected)
    assert snapshot(engine) == before


UNREADABLE = {
    "yesterday": "not an ISO 8601 timestamp: 'yesterday'",
    "9999-12-31T23:59:59-01:00": f"timestamp '9999-12-31T23:59:59-01:00' is outside the supported range {RANGE} (in UTC)",
}


@pytest.mark.parametrize("timestamp", sorted(UNREADABLE))
@pytest.mark.parametrize("endpoint", [e for e in TIMESTAMP_ENDPOINTS if not e.endswith("offline")])
def test_a_refused_timestamp_is_shown_once(v2: V2Api, v1: V1Api, endpoint: str, timestamp: str) -> None:
    """The message of parse_timestamp shows the value: the field's message does not add it again
    (it read "not an ISO 8601 timestamp: 'yesterday', got 'yesterday'")."""
    context, rec = session(v2)
    if endpoint.startswith("v2"):
        if endpoint == "v2 upsert-events":
            event = {"type": "attempt", "item_id": "a1", "catalog_id": "course", "timestamp": timestamp, "score": 1}
            r = v2.handle("POST", "/v2/upsert-events", body={"user_id": "u1", "events": [event]})
        else:
            event = {"type": "attempt", "timestamp": timestamp, "recommendation_context": rec, "score": 1}
            r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context, "events": [event]})
        expected = f"invalid request: 'events[0].attempt.timestamp': {UNREADABLE[timestamp]}"
        assert v2_error(400, r.body) == expected
    else:
        path = "/v1/user-events" if "user-events" in endpoint else "/v1/next-assets"
        events = [v1_event(timestamp)]
        r = v1.handle("POST", path, body={"user_events": events} if "user-events" in path else next_assets(events))
        assert v1_errors(400, r.body) == [f"'user_events[0].timestamp' {UNREADABLE[timestamp]}"]


def test_a_refused_datetime_is_shown_once_through_the_python_api(engine: Engine) -> None:
    event = {
        "type": "skip",
        "item_id": "a1",
        "catalog_id": "course",
        "timestamp": datetime(9999, 12, 31, 23, 59, 59, 999999),
    }
    with pytest.raises(ValidationError) as raised:
        engine.upsert_events("u1", [event])
    assert raised.value.problems == (
        f"'events[0].skip.timestamp': timestamp 9999-12-31T23:59:59.999999 is outside the supported range {RANGE} (in UTC)",
    )


def test_an_unknown_event_type_is_named_once(v2: V2Api) -> None:
    event = {"type": "answer", "item_id": "a1", "catalog_id": "course", "timestamp": GOOD_TS}
    r = v2.handle("POST", "/v2/upsert-events", body={"user_id": "u1", "events": [event]})
    assert v2_error(400, r.body) == (
        "invalid request: 'events[0]': input tag 'answer' found using 'type' does not match any of the "
        "expected tags: 'attempt', 'skip', 'view_theory'"
    )


@pytest.mark.parametrize("case", sorted(MALFORMED_CONTEXTS))
@pytest.mark.parametrize("field", ["session_context", "recommendation_context"])
def test_malformed_contexts_are_400_naming_the_field_and_nothing_is_stored(
    v2: V2Api, engine: Engine, field: str, case: str
) -> None:
    token = MALFORMED_CONTEXTS[case]
    context, _ = session(v2)
    before = snapshot(engine)
    if field == "session_context":
        body: dict[str, Any] = {"session_context": token}
        prefix = "session_context: "
    else:
        body = {
            "session_context": context,
            "events": [{"type": "skip", "timestamp": GOOD_TS, "recommendation_context": token}],
        }
        prefix = "events[0].recommendation_context: "
    r = v2.handle("POST", "/v2/adaptive-engine", body=body)
    message = v2_error(400, r.body)
    assert message.startswith(prefix)
    assert message.removeprefix(prefix) in {
        "malformed context",
        "context signature does not verify (forged or altered)",
    }
    assert snapshot(engine) == before


@given(
    token=st.text(max_size=200)
    | st.builds("{}.{}".format, st.text(max_size=60), st.text(max_size=40))
    | st.builds(
        "{}.{}".format, st.text(alphabet=_B64 + "=\u00e9", max_size=60), st.text(alphabet=_B64 + "\u00e9", max_size=40)
    )
)
def test_context_verification_only_ever_raises_a_context_error(token: str) -> None:
    signer = ContextSigner(SECRET)
    for kind in ("s", "r"):
        with pytest.raises(ContextError):
            signer.verify(token, app="default", kind=kind)


def test_a_context_of_the_wrong_type_in_python_is_a_context_error() -> None:
    signer = ContextSigner(SECRET)
    for token in (None, 7, b"a.b", ["a.b"]):
        with pytest.raises(ContextError, match="malformed context"):
            signer.verify(token, app="default", kind="s")  # type: ignore[arg-type]


# -- timestamps ----------------------------------------------------------------------------------------


def test_parse_timestamp_refuses_what_the_engine_cannot_represent() -> None:
    for text in EDGE_TIMESTAMPS:
        with pytest.raises(ValueError, match="outside the supported range"):
            parse_timestamp(text)
    with pytest.raises(ValueError, match="outside the supported range"):
        parse_timestamp(datetime(9999, 12, 31, 23, 59, 59, 999999))
    assert parse_timestamp(MIN_TIMESTAMP) == MIN_TIMESTAMP
    assert parse_timestamp(MAX_TIMESTAMP) == MAX_TIMESTAMP
    for text in BOUNDARY_TIMESTAMPS:
        moment = parse_timestamp(text)
        assert MIN_TIMESTAMP <= moment <= MAX_TIMESTAMP
        datetime.fromtimestamp(moment.timestamp(), UTC)  # the engine's own arithmetic


def test_engine_python_api_refuses_edge_timestamps(v2: V2Api, engine: Engine) -> None:
    before = snapshot(engine)
    for timestamp in EDGE_TIMESTAMPS:
        event = {"type": "skip", "item_id": "a1", "catalog_id": "course", "timestamp": timestamp}
        with pytest.raises(ValidationError, match=r"events\[0\]\.skip\.timestamp"):
            engine.upsert_events("u1", [event])
    assert snapshot(engine) == before


@pytest.mark.parametrize("timestamp", BOUNDARY_TIMESTAMPS)
def test_the_first_and_last_representable_instants_are_accepted_and_read_back(v2: V2Api, timestamp: str) -> None:
    status_body = {"user_id": "u1", "catalog_id": "course", "filter_list": [{}]}
    # a first read caches the learner state, so the event is applied online afterwards
    assert v2.handle("POST", "/v2/user-status", body=status_body).status == 200
    event = {"type": "attempt", "item_id": "a1", "catalog_id": "course", "timestamp": timestamp, "score": 1}
    r = v2.handle("POST", "/v2/upsert-events", body={"user_id": "u1", "events": [event]})
    assert r.status == 200, r.body
    for _ in range(2):
        r = v2.handle("POST", "/v2/user-status", body=status_body)
        assert r.status == 200, r.body
        last = r.body["data"]["user_status_list"][0]["last_interaction_timestamp"]
        # milliseconds, from epoch seconds as a float: within 1 ms near year 9999
        shown = parse_timestamp(last)
        assert abs((shown - parse_timestamp(timestamp)).total_seconds()) <= 0.001
    context, rec = session(v2)
    event = {"type": "attempt", "timestamp": timestamp, "recommendation_context": rec, "score": 0}
    r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context, "events": [event]})
    assert r.status == 200, r.body
    assert v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context}).status == 200


def test_the_last_microsecond_of_9999_no_longer_breaks_the_learner(v2: V2Api, engine: Engine) -> None:
    """It was accepted, then every status read and step of the learner raised ValueError."""
    status_body = {"user_id": "u1", "catalog_id": "course", "filter_list": [{}]}
    assert v2.handle("POST", "/v2/user-status", body=status_body).status == 200
    context, rec = session(v2)
    before = snapshot(engine)
    last = "9999-12-31T23:59:59.999999Z"
    plain = {"type": "attempt", "item_id": "a1", "catalog_id": "course", "timestamp": last, "score": 1}
    r = v2.handle("POST", "/v2/upsert-events", body={"user_id": "u1", "events": [plain]})
    assert "'events[0].attempt.timestamp'" in v2_error(400, r.body)
    in_session = {"type": "attempt", "timestamp": last, "recommendation_context": rec, "score": 1}
    r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context, "events": [in_session]})
    assert "'events[0].attempt.timestamp'" in v2_error(400, r.body)
    assert snapshot(engine) == before
    assert v2.handle("POST", "/v2/user-status", body=status_body).status == 200
    assert v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context}).status == 200


def test_v1_takes_every_iso_8601_form_that_its_parser_takes(v1: V1Api, engine: Engine) -> None:
    """A compact form (``20250301T090100Z``) passed the v1 check, then the engine re-parsed the
    text its own way and refused it under another field name (even for an offline event)."""
    for offline, text in ((False, "20250301T090100Z"), (True, "20250301T090200Z")):
        r = v1.handle("POST", "/v1/user-events", body={"user_events": [v1_event(text, offline=offline)]})
        assert (r.status, r.body) == (200, {"duplicate_events": [], "warnings": []})
    stamps = sorted(key[-1] for key, _ in engine.store.scan("events", "default"))
    assert stamps == ["2025-03-01T09:01:00.000Z", "2025-03-01T09:02:00.000Z"]


# -- constraint values -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e309", "1" + "0" * 400])
def test_non_finite_constraint_values_are_400_naming_the_field(v2: V2Api, engine: Engine, value: str) -> None:
    before = snapshot(engine)
    body = (
        '{"user_id": "u1", "catalog_id": "course", "mode": {"type": "learn"}, "filter": {}, '
        '"constraints": [{"type": "max_recommendations", "value": 1, "filter": {}}, '
        '{"type": "max_recommendations", "value": ' + value + ', "filter": {}}]}'
    )
    r = v2.handle("POST", "/v2/create-adaptive-session", body=body)
    message = v2_error(400, r.body)
    assert message.startswith("invalid request: 'constraints[1].value': input should be a finite number")
    assert snapshot(engine) == before
    spec = json.loads(body) | {"constraints": [{"type": "max_recommendations", "value": float(value), "filter": {}}]}
    with pytest.raises(ValidationError, match=r"constraints\[0\]\.value"):
        engine.create_session(spec)
    assert snapshot(engine) == before


def test_a_huge_finite_constraint_value_still_works(v2: V2Api) -> None:
    constraint = {"type": "max_recommendations", "value": 1e308, "filter": {}}
    body = {
        "user_id": "u1",
        "catalog_id": "course",
        "mode": {"type": "learn"},
        "filter": {},
        "constraints": [constraint],
    }
    r = v2.handle("POST", "/v2/create-adaptive-session", body=body)
    assert r.status == 200
    step = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": r.body["data"]["session_context"]})
    assert step.status == 200 and step.body["data"]["recommendation"] is not None


# -- numbers in queries and bodies ----------------------------------------------------------------


@pytest.mark.parametrize("limit", ["1" * 5000, "9" * 4301, "0" * 5000 + "1" + "0" * 5000, "1" * 20])
def test_v1_views_limit_of_any_length_is_a_400(v1: V1Api, limit: str) -> None:
    for r in (
        v1.handle("GET", "/v1/views", query={"limit": limit}),
        v1.handle("GET", "/v1/views?limit=" + limit),
    ):
        assert v1_errors(400, r.body) == [
            f"query parameter 'limit' must be an integer from 1 to 1000, got {limit[:50]!r}"
        ]


def test_v1_views_limit_with_leading_zeros_still_works(v1: V1Api) -> None:
    assert v1.handle("GET", "/v1/views", query={"limit": "0" * 5000 + "1"}).body == {
        "views": [{"id": "view", "name": "View", "ordered": False}]
    }


def test_v1_next_assets_limit_that_is_huge_is_a_short_400(v1: V1Api) -> None:
    raw = json.dumps(next_assets([]))[:-1] + "}"
    raw = raw.replace('"limit": 1', '"limit": ' + "9" * 4000)
    r = v1.handle("POST", "/v1/next-assets", body=raw)
    assert v1_errors(400, r.body) == ["'limit' must be from 1 to 1000, got an integer of 4000 digits"]


def test_huge_time_spent_is_a_400_and_never_breaks_the_status(v1: V1Api, v2: V2Api, engine: Engine) -> None:
    """A time of 10**400 ms was accepted, then every status read raised OverflowError."""
    before = snapshot(engine)
    huge = "1" + "0" * 400
    raw = (
        '{"user_id": "u1", "events": [{"type": "attempt", "item_id": "a1", "catalog_id": "course", '
        f'"timestamp": "{GOOD_TS}", "score": 1, "time_spent_ms": {huge}}}]}}'
    )
    message = v2_error(400, v2.handle("POST", "/v2/upsert-events", body=raw).body)
    assert message.startswith(
        "invalid request: 'events[0].attempt.time_spent_ms': input should be less than or equal to 9007199254740991"
    )
    event = v1_event(GOOD_TS) | {
        "attributes": {"view_id": "view", "asset_id": "q1", "result": "correct", "time_spent_ms": 2**53}
    }
    details = v1_errors(400, v1.handle("POST", "/v1/user-events", body={"user_events": [event]}).body)
    assert details[0].startswith(
        "'user_events[0].attributes.time_spent_ms': input should be less than or equal to 9007199254740991"
    )
    assert snapshot(engine) == before
    largest = {
        "type": "attempt",
        "item_id": "a1",
        "catalog_id": "course",
        "timestamp": GOOD_TS,
        "score": 1,
        "time_spent_ms": 2**53 - 1,
    }
    assert v2.handle("POST", "/v2/upsert-events", body={"user_id": "u1", "events": [largest]}).status == 200
    status = v2.handle("POST", "/v2/user-status", body={"user_id": "u1", "catalog_id": "course", "filter_list": [{}]})
    assert status.status == 200 and status.body["data"]["user_status_list"][0]["time_spent_ms"] == 2**53 - 1
    assert (
        v1.handle("GET", "/v1/user-status", query={"user_id": "u1", "view_id": "view", "view_paths": "/"}).status == 200
    )


# -- arguments outside the type hints -------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"X-API-KEY": ["key-1"]}, "header 'X-API-KEY' must be a string, got list"),
        (
            {"X-API-KEY": "key-1", "Content-Type": ["application/json"]},
            "header 'Content-Type' must be a string, got list",
        ),
        ({"X-API-KEY": "key-1", "X-Trace": 7}, "header 'X-Trace' must be a string, got int"),
        ({"X-API-KEY": "key-1", 7: "x"}, "header names must be strings, got int"),
        ([("X-API-KEY", "key-1")], "headers must be a mapping of names to strings, got list"),
    ],
)
def test_headers_that_are_not_strings_are_400(engine: Engine, headers: Any, problem: str) -> None:
    keys = {"key-1": "default"}
    v2 = V2Api(engine, api_keys=keys)
    v1 = V1Api(engine, api_keys=keys)
    before = snapshot(engine)
    r = v2.handle("POST", "/v2/upsert-items", body={"items": ITEMS}, headers=headers)
    assert v2_error(400, r.body) == problem
    r = v1.handle("PUT", "/v1/assets/q9", body={"type": "exercise"}, headers=headers)
    assert v1_errors(400, r.body) == [problem]
    assert snapshot(engine) == before


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({"limit": 5}, "query parameter 'limit' must be a string or a list of strings, got int"),
        ({"limit": None}, "query parameter 'limit' must be a string or a list of strings, got NoneType"),
        ({"limit": ["5", 6]}, "query parameter 'limit' must be a string or a list of strings, got a list holding int"),
        ({"limit": b"5"}, "query parameter 'limit' must be a string or a list of strings, got bytes"),
        ([("limit", "5")], "the query must be a mapping of names to strings, got list"),
    ],
)
def test_v1_query_values_that_are_not_strings_are_400(v1: V1Api, query: Any, problem: str) -> None:
    assert v1_errors(400, v1.handle("GET", "/v1/views", query=query).body) == [problem]


def test_method_and_path_that_are_not_strings_are_400(engine: Engine) -> None:
    for api in (V1Api(engine), V2Api(engine)):
        for method, path in ((None, "/v1/views"), ("GET", None), (b"POST", "/v2/query-catalog-ids")):
            r = api.handle(method, path)  # type: ignore[arg-type]
            assert r.status == 400
            assert "the method and the path must be strings" in json.dumps(r.body)


def test_a_lookup_never_raises_for_odd_headers() -> None:
    assert header({"X-API-KEY": ["k"]}, "X-API-KEY") is None
    assert header({7: "k", "x-api-key": "k"}, "X-API-KEY") == "k"  # type: ignore[dict-item]
    assert header([("X-API-KEY", "k")], "X-API-KEY") is None  # type: ignore[arg-type]
    assert resolve_api_key({"k": "app"}, {"X-API-KEY": ["k"]}) is None  # type: ignore[dict-item]


# -- API keys ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys",
    [{"": "app-1"}, {"   ": "app-1"}, {"key-1": "app-1", "": "app-2"}, {7: "app-1"}, {"key-1": ""}, {"key-1": None}],
)
def test_empty_api_keys_are_refused_at_construction(engine: Engine, keys: dict[Any, Any]) -> None:
    for façade in (V1Api, V2Api):
        with pytest.raises(ValueError, match="api_keys: an (API key|application) must be a non-empty string"):
            façade(engine, api_keys=keys)


def test_an_empty_x_api_key_header_never_authenticates(engine: Engine) -> None:
    assert resolve_api_key({"": "app-1"}, {"X-API-KEY": ""}) is None
    v2 = V2Api(engine, api_keys={"key-1": "app-1"})
    assert v2.handle("POST", "/v2/query-catalog-ids", body={}, headers={"X-API-KEY": ""}).status == 401
    v1 = V1Api(engine, api_keys={"key-1": "app-1"})
    assert v1.handle("GET", "/v1/views", headers={"X-API-KEY": ""}).status == 401
    assert check_api_keys(None) is None
    assert check_api_keys({"key-1": "app-1"}) == {"key-1": "app-1"}


# -- one reading of timestamp text -------------------------------------------------------------------

ISO_FORMS = [
    "2025-03-01",  # a date alone: its midnight
    "2025-03-01T09:01:00Z",
    "2025-03-01 09:01:00",
    "20250301T090100Z",  # the basic format
    "2025-03-01T09:01:00.123456+05:30",
    "2025-03-01T09:01",
]
NOT_ISO = ["yesterday", "2025-13-01", "2025-03-01T25:00:00", "", "1700000000"]


@pytest.mark.parametrize("timestamp", ISO_FORMS + NOT_ISO)
def test_v2_and_the_engine_read_timestamp_text_alike(engine: Engine, v2: V2Api, timestamp: str) -> None:
    """A timestamp v2 receives as JSON is read as the engine reads it from Python objects (and v1
    from its events): stored at the same instant, or refused by both."""
    event = {"type": "attempt", "item_id": "a1", "catalog_id": "course", "timestamp": timestamp, "score": 1}
    try:
        expected = parse_timestamp(timestamp)
    except ValueError:
        expected = None
    before = snapshot(engine)
    r = v2.handle("POST", "/v2/upsert-events", body=json.dumps({"user_id": "u1", "events": [event]}).encode())
    if expected is None:
        assert "'events[0].attempt.timestamp'" in v2_error(400, r.body)
        assert snapshot(engine) == before
        with pytest.raises(ValidationError):
            engine.upsert_events("u2", [event])
        return
    assert r.status == 200, r.body
    assert engine.upsert_events("u2", [event]) == 1
    stored = {key[0]: key[3] for key, _ in engine.store.scan("events", "default")}
    assert stored == {"u1": format_timestamp(expected), "u2": format_timestamp(expected)}
