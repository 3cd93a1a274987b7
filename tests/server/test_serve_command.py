"""``learnloop serve`` / ``python -m learnloop.server``: settings, the keys file, and real servers.

The multi-process test runs 4 uvicorn workers on one SQLite file and 16
concurrent learners; what they were told and what is stored must equal a
serial replay of the same learners on one in-process engine.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpserve import free_port

from learnloop import Engine
from learnloop.api import V2Api
from learnloop.server import Keys, KeysFileError, StoreUrlError, load_sample_course, open_engine
from learnloop.server.cli import main

KEY = "k-0123456789abcdef"
HEADERS = {"X-API-KEY": KEY}


def test_store_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_engine("sqlite:///relative.db") as engine:
        assert Path(engine.store.path) == Path("relative.db")  # type: ignore[attr-defined]
    with open_engine(f"sqlite:///{tmp_path}/absolute.db") as engine:
        assert Path(engine.store.path) == tmp_path / "absolute.db"  # type: ignore[attr-defined]
    for bad in ("sqlite://relative.db", "sqlite://", "mysql://x/y", ""):
        with pytest.raises(StoreUrlError):
            open_engine(bad)


def test_the_keys_file(tmp_path: Path) -> None:
    (tmp_path / "issuer.pem").write_text("-----BEGIN PUBLIC KEY-----\nMII...\n-----END PUBLIC KEY-----\n")
    text = f"""
[api_keys]
"{KEY}" = "app-1"
"k-other" = "app-2"

[api_key_expiry]
"k-other" = 2030-01-01

[jwt_issuers]
"issuer-1" = {{ public_key_file = "issuer.pem" }}
"""
    (tmp_path / "keys.toml").write_text(text)
    keys = Keys.load(tmp_path / "keys.toml")
    assert keys.api_keys == {KEY: "app-1", "k-other": "app-2"}
    assert keys.api_key_expiry == {"k-other": datetime(2030, 1, 1, tzinfo=UTC)}
    assert keys.jwt_issuers is not None and keys.jwt_issuers["issuer-1"].startswith("-----BEGIN PUBLIC KEY-----")
    assert keys.applications == ["app-1", "app-2"]


def test_a_wrong_keys_file_names_every_problem_and_no_key(tmp_path: Path) -> None:
    text = f"""
[api_keys]
"{KEY}" = ""
"" = "app"

[api_key_expiry]
"not-a-key" = 2030-01-01

[jwt_issuers]
"issuer-1" = {{ public_key_file = "missing.pem" }}

[extra]
"""
    with pytest.raises(KeysFileError) as caught:
        Keys.from_toml(text, base=tmp_path)
    message = str(caught.value)
    for problem in (
        "unknown table [extra]",
        "the application of key number 1 must be a non-empty string",
        "key number 2 is empty",
        "entry number 1 names a key that is not in [api_keys]",
        "missing.pem",
    ):
        assert problem in message
    assert KEY not in message and "not-a-key" not in message
    with pytest.raises(KeysFileError, match="not valid TOML"):
        Keys.from_toml("[api_keys\n")
    with pytest.raises(KeysFileError, match="lets nobody in"):
        Keys.from_toml("")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve"], "no keys file: pass --keys keys.toml (or --no-auth to serve without credentials)"),
        (["serve", "--no-auth", "--store", "mysql://x"], "unknown store URL scheme 'mysql'"),
        (["serve", "--no-auth", "--store", "memory://", "--workers", "2"], "memory:// holds the state in one process"),
        (["serve", "--keys", "no-such-file.toml"], "cannot read the keys file"),
        (["serve", "--no-auth", "--workers", "0"], "--workers must be at least 1"),
    ],
)
def test_serve_refuses_wrong_settings_before_starting(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_sample_course_is_loaded_once_per_application() -> None:
    engine = Engine()
    assert load_sample_course(engine, ["a", "b"]) == ["a", "b"]
    assert load_sample_course(engine, ["a", "b", "c"]) == ["c"]
    assert engine.catalog_ids(app="a") == ["sample-course"]


# -- real servers ---------------------------------------------------------------------------------
@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.toml"
    path.write_text(f'[api_keys]\n"{KEY}" = "app-1"\n')
    return path


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    command = [sys.executable, "-m", "learnloop.server", "--port", str(port), "--log-level", "warning", *args]
    # a session of its own: cleaning up ends the server and its workers, and nothing else
    process = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(process.communicate()[0])
        try:
            if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                return process, base
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server did not become ready")


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=30)
    assert process.returncode == 0, out
    return out


@pytest.fixture
def servers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()


def test_one_process_with_the_demo_course(tmp_path: Path, keys_file: Path, servers: list[Any]) -> None:
    process, base = start(tmp_path, "--store", "sqlite:///state.db", "--keys", str(keys_file), "--demo", "--no-voice")
    servers.append(process)
    with httpx.Client(base_url=base) as client:
        assert client.post("/v2/query-catalog-ids", json={}).status_code == 401
        r = client.post("/v2/query-catalog-ids", json={}, headers=HEADERS)
        assert r.json() == {"data": {"catalog_ids": ["sample-course"]}}
        assert client.post("/api/v1/syllables", data={"target_phrase": "hi"}, headers=HEADERS).status_code == 404
    out = stop(process)
    assert "the sample course is loaded for application 'app-1'" in out
    assert f"{base}/v2" in out and "keys from" in out
    with Engine.open(tmp_path / "state.db") as engine:  # closed cleanly, and durable
        assert engine.catalog_ids(app="app-1") == ["sample-course"]


# -- several processes on one SQLite file -----------------------------------------------------
LEARNERS = 16
STEPS = 6
START = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)


def knows(user: str, item: str, step: int) -> int:
    """The simulated answer: a fixed function of the learner, the item and the step."""
    return int(hashlib.sha256(f"{user}/{item}/{step}".encode()).digest()[0] % 3 != 0)


def learn(post: Any, user: str) -> list[str]:
    """One learner's session: each step answers the previous recommendation; returns what was recommended."""
    spec = {"user_id": user, "catalog_id": "sample-course", "mode": {"type": "learn"}, "filter": {}}
    r = post("/v2/create-adaptive-session", spec)
    assert r.status == 200, r.body
    context = r.body["data"]["session_context"]
    seen: list[str] = []
    events: list[dict[str, Any]] = []
    for step in range(STEPS):
        r = post("/v2/adaptive-engine", {"session_context": context, "events": events})
        assert r.status == 200, r.body
        rec = r.body["data"]["recommendation"]
        seen.append(rec["item_id"])
        timestamp = (START + timedelta(seconds=10 * step)).isoformat().replace("+00:00", "Z")
        score = knows(user, rec["item_id"], step)
        events = [
            {
                "type": "attempt",
                "timestamp": timestamp,
                "recommendation_context": rec["recommendation_context"],
                "score": score,
            }
        ]
    return seen


def test_four_workers_on_one_sqlite_file_equal_a_serial_replay(
    tmp_path: Path, keys_file: Path, servers: list[Any]
) -> None:
    args = ["--store", "sqlite:///shared.db", "--keys", str(keys_file), "--workers", "4", "--demo", "--seed", "7"]
    process, base = start(tmp_path, *args, "--no-voice")
    servers.append(process)
    statuses: list[int] = []

    def over_http(user: str) -> list[str]:
        with httpx.Client(base_url=base, timeout=60) as client:

            def post(path: str, body: Any) -> Any:
                r = client.post(path, json=body, headers=HEADERS)
                statuses.append(r.status_code)
                return type("R", (), {"status": r.status_code, "body": r.json()})

            return learn(post, user)

    users = [f"learner-{k:02d}" for k in range(LEARNERS)]
    with ThreadPoolExecutor(LEARNERS) as pool:
        concurrent = dict(zip(users, pool.map(over_http, users)))
    stop(process)
    assert all(s < 500 for s in statuses) and len(statuses) == LEARNERS * (STEPS + 1)

    # the same learners one after the other, on one engine in this process
    serial_engine = Engine(seed=7)
    load_sample_course(serial_engine, ["app-1"])
    api = V2Api(serial_engine, api_keys={KEY: "app-1"})
    serial = {
        user: learn(lambda path, body: api.handle("POST", path, body=body, headers=HEADERS), user) for user in users
    }
    assert concurrent == serial

    with Engine.open(tmp_path / "shared.db") as stored:
        for user in users:
            events = [key for key, _ in stored.store.scan("events", "app-1", (user,))]
            served = [key for key, _ in serial_engine.store.scan("events", "app-1", (user,))]
            assert len(events) == STEPS - 1  # every answer stored once: none lost, none twice
            assert sorted(events) == sorted(served)
        status_body = {"catalog_id": "sample-course", "filter_list": [{}]}
        for user in users:
            ours = stored.user_status(user, "sample-course", [{}], app="app-1")
            theirs = serial_engine.user_status(user, "sample-course", [{}], app="app-1")
            assert [s.model_dump() for s in ours] == [s.model_dump() for s in theirs], status_body
    assert os.path.getsize(tmp_path / "shared.db") > 0
