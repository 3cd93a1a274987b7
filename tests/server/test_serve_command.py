"""``learnloop serve`` / ``python -m learnloop.server``: settings, the keys file, and real servers.

The multi-process test runs 4 uvicorn workers on one store (a SQLite file, a
PostgreSQL database) and 16 concurrent learners; what they were told and what
is stored must equal a serial replay of the same learners on one in-process
engine. On PostgreSQL, workers are SIGKILLed 12 times while requests are
under way (uvicorn starts another each time): no acknowledged event is lost,
and no call is left half-written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from httpserve import free_port

from learnloop import Engine
from learnloop.api import V2Api
from learnloop.api.v1 import DEFAULT_ERROR_LINK
from learnloop.engine.learners.revisions import Revision
from learnloop.events import format_timestamp
from learnloop.server import Keys, KeysFileError, StoreUrlError, load_sample_course, open_engine
from learnloop.server.cli import _serve_options, main

KEY = "k-0123456789abcdef"
SHUTTING_DOWN = "the server is shutting down; the request may not have been carried out, retry it later"
V1_LINK = DEFAULT_ERROR_LINK.format(status=503)
JSON = "application/json"
HEADERS = {"X-API-KEY": KEY}


def test_store_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_engine("sqlite:///relative.db") as engine:
        assert Path(engine.store.path) == Path("relative.db")  # type: ignore[attr-defined]
    with open_engine(f"sqlite:///{tmp_path}/absolute.db") as engine:
        assert Path(engine.store.path) == tmp_path / "absolute.db"  # type: ignore[attr-defined]
    (tmp_path / "data").mkdir()
    with open_engine("sqlite:///data/state.db") as engine:  # as the issue writes it: --store sqlite:///path/state.db
        assert Path(engine.store.path) == Path("data/state.db")  # type: ignore[attr-defined]
    for bad in ("sqlite://relative.db", "sqlite://", "mysql://x/y", ""):
        with pytest.raises(StoreUrlError):
            open_engine(bad)
    # Engine.open takes the same SQLite URLs
    with Engine.open("sqlite:///data/state.db") as engine:
        assert Path(engine.store.path) == Path("data/state.db")  # type: ignore[attr-defined]
    with Engine.open(f"sqlite:///{tmp_path}/absolute.db") as engine:
        assert Path(engine.store.path) == tmp_path / "absolute.db"  # type: ignore[attr-defined]
    for bad in ("sqlite://relative.db", "sqlite:///", "SQLite:x.db"):
        with pytest.raises(ValueError, match="a SQLite URL is sqlite:///relative/path.db"):
            Engine.open(bad)


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


NOT_SQLITE = "not-a-database.db"  # a file that is not a SQLite database, made by the test below
BAD_STORES = [
    # a missing directory, a path through a file
    ("sqlite:///missing-dir/x.db", "cannot open the SQLite store missing-dir/x.db: the directory missing-dir does not"),
    (
        f"sqlite:///{NOT_SQLITE}/x.db",
        f"cannot open the SQLite store {NOT_SQLITE}/x.db: {NOT_SQLITE} is not a directory",
    ),
    ("missing-dir/x.db", "the directory missing-dir does not exist"),
    # malformed URLs
    ("sqlite:/x.db", "a SQLite URL is sqlite:///relative/path.db or sqlite:////absolute/path.db, not 'sqlite:/x.db'"),
    ("sqlite:x.db", "a SQLite URL is sqlite:///relative/path.db"),
    ("sqlite://x.db", "a SQLite URL is sqlite:///relative/path.db"),
    ("SQLite:///", "a SQLite URL is sqlite:///relative/path.db"),
    ("memory:", "the in-memory store is memory:// with nothing after it"),
    ("memory://x", "the in-memory store is memory:// with nothing after it"),
    ("postgresql:db", "a PostgreSQL URL is postgresql://user@host:port/database"),
    ("", "the store URL is empty"),
    # unknown schemes
    ("mysql://x", "unknown store URL scheme 'mysql'"),
    ("http://x/y.db", "unknown store URL scheme 'http'"),
    # files that cannot be opened as a store
    (f"sqlite:///{NOT_SQLITE}", f"cannot open the SQLite store {NOT_SQLITE}: file is not a database"),
    (NOT_SQLITE, f"cannot open the SQLite store {NOT_SQLITE}: file is not a database"),
    ("sqlite:///.", "cannot open the SQLite store .: it is a directory"),
    # a PostgreSQL server nobody listens on
    ("postgresql://nobody@127.0.0.1:9/db", "cannot open the PostgreSQL store: connection failed"),
]


def no_server(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("the server was started")


@pytest.mark.parametrize(("store", "message"), BAD_STORES)
def test_a_bad_store_is_one_line_and_exit_status_2(
    store: str, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / NOT_SQLITE).write_text("these bytes are not a SQLite database\n" * 100)
    monkeypatch.setattr(uvicorn, "run", no_server)  # a store wrongly accepted fails the test, not serve for ever
    assert main(["serve", "--no-auth", "--store", store]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.endswith("\n"), captured.err
    assert captured.err.startswith("learnloop serve: ") and message in captured.err, captured.err


def test_a_postgresql_store_without_the_extra_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # psycopg not installed: importing it fails
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.delitem(sys.modules, "learnloop.store.postgres", raising=False)
    assert main(["serve", "--no-auth", "--store", "postgresql://nobody@127.0.0.1:9/db"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs the 'postgres' extra: pip install 'learnloop[postgres]'" in err
    assert err.count("pip install") == 1, err  # the install line once, not once from the store and once more


@pytest.mark.parametrize("store", ["sqlite:///missing-dir/x.db", "sqlite:/x.db"])
def test_the_command_refuses_a_bad_store_without_a_traceback(store: str, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "learnloop.server", "--no-auth", "--store", store]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr


def test_serve_help_gives_every_option_a_help_text_and_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "memory://" in text and "sqlite:///" in text and "postgresql://" in text
    assert "(default: sqlite:///learnloop.db)" in text
    parser = argparse.ArgumentParser()
    _serve_options(parser)
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    assert {a.dest for a in options} >= {"store", "keys", "no_auth", "host", "port", "workers", "log_level"}
    for action in options:
        assert action.help and "(default: " in action.help, action.option_strings


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve"], "no keys file: pass --keys keys.toml (or --no-auth to serve without credentials)"),
        (["serve", "--no-auth", "--store", "mysql://x"], "unknown store URL scheme 'mysql'"),
        (["serve", "--no-auth", "--store", "memory://", "--workers", "2"], "memory:// holds the state in one process"),
        (["serve", "--keys", "no-such-file.toml"], "cannot read the keys file"),
        (["serve", "--no-auth", "--workers", "0"], "--workers must be at least 1"),
        (
            ["serve", "--no-auth", "--store", "postgresql://nobody@/nodb?host=/nonexistent", "--workers", "2"],
            "cannot open the PostgreSQL store: connection",
        ),
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
    for _ in range(3):  # a free port another process (a parallel test) took meanwhile: another port
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
                out = process.communicate()[0]
                if "address already in use" in out:
                    break
                raise AssertionError(out)
            try:
                if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                    return process, base
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            raise AssertionError("the server did not become ready")
    raise AssertionError(f"no free port: {out}")


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=60)
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


# -- several processes on one store ------------------------------------------------------------
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
        answer: dict[str, Any] = (  # the sample course's theory items are read, its exercises answered
            {"type": "view_theory", "fraction_completed": 1.0}
            if rec["item_id"].endswith("-theory")
            else {"type": "attempt", "score": knows(user, rec["item_id"], step)}
        )
        events = [{**answer, "timestamp": timestamp, "recommendation_context": rec["recommendation_context"]}]
    return seen


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_four_workers_on_one_store_equal_a_serial_replay(
    kind: str, tmp_path: Path, keys_file: Path, servers: list[Any], request: pytest.FixtureRequest
) -> None:
    # the server runs in tmp_path: sqlite:///shared.db is tmp_path / "shared.db"
    url = "sqlite:///shared.db" if kind == "sqlite" else request.getfixturevalue("postgres_database")()
    args = ["--store", url, "--keys", str(keys_file), "--workers", "4", "--demo", "--seed", "7"]
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

    with open_engine(f"sqlite:///{tmp_path}/shared.db" if kind == "sqlite" else url) as stored:
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


# -- workers killed mid-write ---------------------------------------------------------------------
KILLS = 12  # each costs a worker start (about 1 s of CPU): 20 would double the time
WORKERS = 4
WRITERS = 6
BATCH = 10
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def worker_pids(supervisor: int) -> set[int]:
    """The live uvicorn workers of a ``learnloop serve --workers N`` process: its children started by spawn."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, parent = (entry / "stat").read_text().rpartition(")")[2].split()[:2]
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue  # gone meanwhile
        if int(parent) == supervisor and state not in "ZX" and b"spawn_main" in command:
            pids.add(int(entry.name))
    return pids


def serving(workers: set[int], port: int) -> list[int]:
    """The workers holding a client's connection to ``port`` now (no keep-alive: a request under way)."""
    connections = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[1].rpartition(":")[2], 16) == port:  # ESTABLISHED, our side
            connections.add(f"socket:[{fields[9]}]")
    busy = []
    for pid in sorted(workers):
        try:
            if any(os.readlink(fd) in connections for fd in Path(f"/proc/{pid}/fd").iterdir()):
                busy.append(pid)
        except OSError:
            continue  # gone meanwhile
    return busy


def batch_of(stamp: str) -> int:
    seconds = (datetime.fromisoformat(stamp.replace("Z", "+00:00")) - T0).total_seconds()
    return int(seconds) % 10**6 // BATCH


def test_workers_killed_mid_write_lose_no_acknowledged_event(
    tmp_path: Path, keys_file: Path, servers: list[Any], postgres_database: Any
) -> None:
    url = postgres_database()
    args = ["--store", url, "--keys", str(keys_file), "--workers", str(WORKERS), "--demo", "--no-voice"]
    process, base = start(tmp_path, *args)
    servers.append(process)
    with open_engine(url) as setup:
        index = setup.catalog_index("sample-course", app="app-1")
        pairs = [(i, index.topic_ids[index.item_topic[p]]) for p, i in enumerate(index.item_ids) if index.scorable[p]]

    done = threading.Event()
    acked: dict[int, list[int]] = {k: [] for k in range(WRITERS)}
    lost: dict[int, list[int]] = {k: [] for k in range(WRITERS)}  # no answer: the worker died with the request
    statuses: list[int] = []

    def write(k: int) -> None:
        # a connection per request: the kernel hands each to any worker, so every worker is kept busy
        with httpx.Client(base_url=base, timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as client:
            batch = 0
            while not done.is_set():
                events = [
                    {
                        "type": "attempt",
                        "timestamp": format_timestamp(T0 + timedelta(seconds=k * 10**6 + batch * BATCH + i)),
                        "catalog_id": "sample-course",
                        "item_id": pairs[(batch + i) % len(pairs)][0],
                        "topic_id": pairs[(batch + i) % len(pairs)][1],
                        "score": float(i % 2),
                    }
                    for i in range(BATCH)
                ]
                body = {"user_id": f"w{k}", "events": events}
                try:
                    r = client.post("/v2/upsert-events", json=body, headers=HEADERS)
                except httpx.TransportError:
                    lost[k].append(batch)
                else:
                    statuses.append(r.status_code)
                    (acked if r.status_code == 200 else lost)[k].append(batch)
                batch += 1

    rng = random.Random(20)
    writers = [threading.Thread(target=write, args=(k,)) for k in range(WRITERS)]
    for thread in writers:
        thread.start()
    port = int(base.rpartition(":")[2])
    try:
        for _ in range(KILLS):
            # once the writers are acknowledged again, a worker with a request under way
            seen = sum(map(len, acked.values()))
            deadline = time.monotonic() + 60
            busy: list[int] = []
            while not busy:
                assert time.monotonic() < deadline and process.poll() is None, "the server stopped serving"
                time.sleep(0.001)
                if sum(map(len, acked.values())) >= seen + WRITERS:
                    busy = serving(worker_pids(process.pid), port)
            os.kill(rng.choice(busy), signal.SIGKILL)
    finally:
        done.set()
        for thread in writers:
            thread.join(120)
    # uvicorn replaced every killed worker: the server still answers with WORKERS workers
    deadline = time.monotonic() + 60
    while len(worker_pids(process.pid)) != WORKERS:
        assert time.monotonic() < deadline, worker_pids(process.pid)
        time.sleep(0.05)
    assert httpx.post(base + "/v2/query-catalog-ids", json={}, headers=HEADERS, timeout=60).status_code == 200
    stop(process)

    assert set(statuses) == {200}, sorted(set(statuses))  # a killed worker answers nothing; the others no 5xx
    interrupted = sum(map(len, lost.values()))
    assert interrupted >= KILLS, "the kills caught too few requests in flight"
    with open_engine(url) as engine:
        unacknowledged = 0
        for k in range(WRITERS):
            user = f"w{k}"
            stored: dict[int, int] = {}
            for key in engine.store.keys("events", "app-1", (user, "sample-course")):
                stored[batch_of(key[3])] = stored.get(batch_of(key[3]), 0) + 1
            # every acknowledged batch, whole; of the others, only whole ones (committed, the answer lost)
            assert set(acked[k]) <= set(stored) <= set(acked[k]) | set(lost[k]), (k, acked[k], lost[k], stored)
            assert set(stored.values()) == {BATCH}, (k, stored)
            unacknowledged += len(stored) - len(acked[k])
            # the learner's revision moved with its events (one write a batch)
            assert Revision.from_doc(engine.store.get("learners", "app-1", (user, "sample-course"))).rev == len(stored)
        assert unacknowledged <= interrupted


# -- a forced shutdown ----------------------------------------------------------------------------
def test_a_second_ctrl_c_answers_requests_in_flight_with_the_contracts_error_body(
    tmp_path: Path, keys_file: Path, servers: list[Any]
) -> None:
    process, base = start(tmp_path, "--store", "sqlite:///state.db", "--keys", str(keys_file))
    servers.append(process)
    port = int(base.rpartition(":")[2])
    # a request per contract whose body has not all arrived: each is in flight until the shutdown is forced
    part = '--b\r\nContent-Disposition: form-data; name="target_phrase"\r\n\r\nhello'
    requests = {
        "v1": ("/v1/user-status", "application/json", "{"),
        "v2": ("/v2/query-catalog-ids", "application/json", "{"),
        "voice": ("/api/v1/score", "multipart/form-data; boundary=b", part),
    }
    connections = {}
    for name, (path, media_type, start_of_body) in requests.items():
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nX-API-KEY: {KEY}\r\nContent-Type: {media_type}\r\n"
        sock.sendall(f"{head}Content-Length: 1000\r\n\r\n{start_of_body}".encode())
        connections[name] = sock
    # the server has read what was sent once it answers a later request: its one event loop reads the
    # sockets that became readable before (a fixed sleep was not enough on a loaded machine)
    assert httpx.get(base + "/healthz", timeout=60).status_code == 200
    process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 60
    while True:  # the first Ctrl-C has been handled once the server stops accepting connections
        assert time.monotonic() < deadline, "the server still accepts connections"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    answers = {}
    for name, sock in connections.items():
        with sock:
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in header_lines)}
        media_type = headers.get("content-type")
        answers[name] = (int(status_line.split()[1]), media_type, json.loads(body) if media_type == JSON else body)
    process.communicate(timeout=30)
    assert answers["v1"] == (
        503,
        "application/json",
        {"errors": [{"status": 503, "detail": SHUTTING_DOWN, "link": V1_LINK}]},
    )
    assert answers["v2"] == (500, JSON, {"error": {"status": 500, "message": SHUTTING_DOWN}})
    assert answers["voice"] == (503, JSON, {"errors": [{"status": 503, "detail": SHUTTING_DOWN}]})
