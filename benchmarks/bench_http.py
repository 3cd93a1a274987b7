"""The documented service under load: ``learnloop serve`` driven by wrk over loopback.

Each configuration (store x worker count) starts ``python -m learnloop.server``
on a fresh store with the sample course (``--demo``) and a keys file of three
applications, waits for ``/readyz``, and runs wrk (a compiled load generator,
Debian's ``wrk``, installed by ``scripts/system-deps``) with Lua scripts that
this script writes:

- **learn**: ``--learners`` learners at once (one wrk thread and one
  connection each). Each creates a learn session, then steps it through
  ``POST /v2/adaptive-engine``, every call carrying the answer to the previous
  recommendation (``view_theory`` for a theory item, an ``attempt`` for an
  exercise), a new session when one stops.
- **ingest**: 2 connections posting ``/v2/upsert-events`` in calls of 1,000
  attempts (each call a new learner), events/s reported.
- **voice flood** (``--voice``, on the first store at the best worker count):
  the learn scenario again for one key while 50 connections of another key post
  pronunciation scorings (``/api/v1/score``, espeak-ng speech) as fast as they
  are answered; the learn p99 is compared with the learn run alone.

Every wrk run is bounded in time (``--seconds``) and in requests (a cap per
connection). wrk's own latency figures are printed: requests/s, p50, p99 and
errors (socket errors, and any answer but 200 on the learn and ingest runs).
The machine's load average is printed before and after each run.

PostgreSQL: ``--postgres URL`` (a server where databases may be created), else
``LEARNLOOP_TEST_POSTGRES``, else a throwaway server started by
``scripts/_postgres.sh`` (the script runs itself again inside it) with
PostgreSQL's durable defaults (``fsync``, ``synchronous_commit`` on: a commit
is answered once its log is on disk), not the test suite's settings
(``--pg-test-settings`` for those). The server's two settings are printed and
written beside the figures.

Targets: >= 1,000 adaptive-engine requests/s with p99 < 20 ms at the best
worker count on SQLite, >= 800 on PostgreSQL, no errors; ``/v2/upsert-events``
>= 100,000 events/s in calls of 1,000 on SQLite; the voice flood raises the
other key's learn p99 by at most 2x.

Run: ``.venv/bin/python benchmarks/bench_http.py`` (``--quick`` for a short
run, ``--stores sqlite``, ``--workers 1,2``, ``--write-docs`` to put the
results into ``docs/performance.md`` between its ``bench_http`` markers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "performance.md"
KEYS = {"learn": "k-bench-learn", "ingest": "k-bench-ingest", "voice": "k-bench-voice"}

#: the Lua of the learn scenario: one connection per wrk thread, so that request() and response() alternate
LEARN_LUA = r"""
local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  key = args[1]
  run = args[2]
  cap = tonumber(args[3])
  id = id or 0
  math.randomseed(1000 + id)
  user = run .. "-" .. id
  clock = tonumber(args[4]) + id
  headers = {["Content-Type"] = "application/json", ["X-API-KEY"] = key}
  ctx = nil
  rec = nil
  answered = 0
  errors = 0
  sessions = 0
  first_error = ""
end

function request()
  if ctx == nil then
    local body = '{"user_id":"' .. user .. '","catalog_id":"sample-course","mode":{"type":"learn"},"filter":{}}'
    return wrk.format("POST", "/v2/create-adaptive-session", headers, body)
  end
  local events = "[]"
  if rec ~= nil then
    clock = clock + 30
    local ts = os.date("!%Y-%m-%dT%H:%M:%S.000Z", clock)
    if theory then
      events = '[{"type":"view_theory","fraction_completed":1.0,"time_spent_ms":30000,"timestamp":"' .. ts
        .. '","recommendation_context":"' .. rec .. '"}]'
    else
      local score = "0.0"
      if math.random() < 0.7 then score = "1.0" end
      events = '[{"type":"attempt","score":' .. score .. ',"time_spent_ms":15000,"timestamp":"' .. ts
        .. '","recommendation_context":"' .. rec .. '"}]'
    end
  end
  return wrk.format("POST", "/v2/adaptive-engine", headers, '{"session_context":"' .. ctx .. '","events":' .. events .. '}')
end

function response(status, hdrs, body)
  answered = answered + 1
  if status ~= 200 then
    errors = errors + 1
    if first_error == "" then first_error = status .. " " .. string.sub(body, 1, 300) end
    ctx = nil
    rec = nil
  elseif ctx == nil then
    ctx = string.match(body, '"session_context": ?"([^"]+)"')
    sessions = sessions + 1
    rec = nil
  else
    rec = string.match(body, '"recommendation_context": ?"([^"]+)"')
    local item = string.match(body, '"item_id": ?"([^"]+)"')
    theory = item ~= nil and string.sub(item, -7) == "-theory"
    if rec == nil or string.find(body, '"stop_session": ?true') then
      ctx = nil
      rec = nil
    end
  end
  if answered >= cap then wrk.thread:stop() end
end

function done(summary, latency, requests)
  local lua_errors, sessions_made, first = 0, 0, ""
  for _, t in ipairs(threads) do
    lua_errors = lua_errors + t:get("errors")
    sessions_made = sessions_made + t:get("sessions")
    if first == "" then first = t:get("first_error") end
  end
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, '
    .. '"socket_errors": %d, "status_errors": %d, "answer_errors": %d, "sessions": %d, "first_error": %q}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, e.connect + e.read + e.write + e.timeout, e.status, lua_errors, sessions_made, first))
end
"""

#: the Lua of the ingestion scenario: each call a new learner's 1,000 attempts (the body read from a file)
INGEST_LUA = r"""
local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  key = args[1]
  run = args[2]
  cap = tonumber(args[3])
  local f = assert(io.open(args[4], "r"))
  events = f:read("*a")
  f:close()
  headers = {["Content-Type"] = "application/json", ["X-API-KEY"] = key}
  n = 0
  answered = 0
  errors = 0
  first_error = ""
end

function request()
  n = n + 1
  local body = '{"user_id":"' .. run .. "-" .. id .. "-" .. n .. '","events":' .. events .. '}'
  return wrk.format("POST", "/v2/upsert-events", headers, body)
end

function response(status, hdrs, body)
  answered = answered + 1
  if status ~= 200 then
    errors = errors + 1
    if first_error == "" then first_error = status .. " " .. string.sub(body, 1, 300) end
  end
  if answered >= cap then wrk.thread:stop() end
end

function done(summary, latency, requests)
  local lua_errors, first = 0, ""
  for _, t in ipairs(threads) do
    lua_errors = lua_errors + t:get("errors")
    if first == "" then first = t:get("first_error") end
  end
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests": %d, "duration_us": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, '
    .. '"socket_errors": %d, "status_errors": %d, "answer_errors": %d, "sessions": 0, "first_error": %q}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, e.connect + e.read + e.write + e.timeout, e.status, lua_errors, first))
end
"""

#: the Lua of the voice flood: the same multipart body (read from a file) again and again
VOICE_LUA = r"""
local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  local f = assert(io.open(args[2], "rb"))
  local body = f:read("*a")
  f:close()
  req = wrk.format("POST", "/api/v1/score", {["X-API-KEY"] = args[1], ["Content-Type"] = args[3]}, body)
  statuses = {}
end

function request()
  return req
end

function response(status, hdrs, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local counts = {}
  for _, t in ipairs(threads) do
    for _, status in ipairs({200, 429, 503, 500, 400}) do
      local c = t:get("statuses")[status]
      if c then counts[status] = (counts[status] or 0) + c end
    end
  end
  local parts = {}
  for status, c in pairs(counts) do table.insert(parts, '"' .. status .. '": ' .. c) end
  io.write('VOICE {"requests": ' .. summary.requests .. ', "p50_us": ' .. latency:percentile(50)
    .. ', "statuses": {' .. table.concat(parts, ", ") .. '}}\n')
end
"""


@dataclass
class Run:
    """One wrk run's figures."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    first_error: str = ""
    load: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def machine_note() -> str:
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores"


def command_line() -> str:
    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(ROOT)
    except ValueError:
        pass
    return shlex.join([".venv/bin/python", str(script), *sys.argv[1:]])


def replace_block(path: Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in ``path`` with ``body``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text()
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise SystemExit(f"{path}: markers {begin} ... {end} not found")
    path.write_text(text[: start + len(begin)] + "\n\n" + body.strip("\n") + "\n\n" + text[stop:])
    print(f"wrote {path} ({name})")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http(base: str, method: str, path: str, body: object = None, key: str | None = None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if key is not None:
        request.add_header("X-API-KEY", key)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            raw = answer.read()
            return answer.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None


class Server:
    """``python -m learnloop.server`` in a subprocess, on a free loopback port."""

    def __init__(self, store: str, workers: int, keys: Path, cwd: Path, voice: bool, extra: list[str]) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "learnloop.server", "--store", store, "--keys", str(keys)]
        command += ["--workers", str(workers), "--demo", "--port", str(self.port), "--log-level", "warning", *extra]
        command += [] if voice else ["--no-voice"]
        self.log = open(cwd / f"server-{self.port}.log", "w")
        self.process = subprocess.Popen(command, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300  # a busy shared machine: workers may take minutes to start
        while True:
            if self.process.poll() is not None:
                self.log.flush()
                raise SystemExit(f"the server exited: {(cwd / self.log.name).read_text()[-3000:]}")
            try:
                if http(self.base, "GET", "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit("the server did not answer /readyz within 300 s")
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def wrk(
    base: str, script: Path, threads: int, connections: int, seconds: float, args: list[str], tag: str = "RESULT"
) -> dict:
    command = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds:g}s", "--timeout", "30s"]
    command += ["-s", str(script), base, "--", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    for line in done.stdout.splitlines():
        if line.startswith(tag + " "):
            return dict(json.loads(line[len(tag) + 1 :]))
    raise SystemExit(f"wrk printed no result: {done.stdout[-2000:]} {done.stderr[-2000:]}")


def as_run(result: dict, load: str) -> Run:
    errors = result["socket_errors"] + max(result["status_errors"], result["answer_errors"])
    return Run(
        requests=result["requests"],
        seconds=result["duration_us"] / 1e6,
        p50_ms=result["p50_us"] / 1000,
        p99_ms=result["p99_us"] / 1000,
        errors=errors,
        first_error=result["first_error"],
        load=load,
    )


def learn(base: str, lua: Path, learners: int, seconds: float, cap: int, run: str) -> Run:
    start = int((datetime.now(UTC) - timedelta(days=30)).timestamp())
    before = load_average()
    result = wrk(base, lua, learners, learners, seconds, [KEYS["learn"], run, str(cap), str(start)])
    return as_run(result, f"{before} → {load_average()}")


def ingest(base: str, lua: Path, events_file: Path, seconds: float, cap: int, run: str) -> Run:
    before = load_average()
    result = wrk(base, lua, 2, 2, seconds, [KEYS["ingest"], run, str(cap), str(events_file)])
    return as_run(result, f"{before} → {load_average()}")


def exercise_ids(base: str) -> list[str]:
    status, body = http(base, "POST", "/v2/query-item-database", {}, KEYS["ingest"])
    assert status == 200 and isinstance(body, dict), body
    return [item["item_id"] for item in body["data"]["items"] if not item["item_id"].endswith("-theory")]


def events_json(items: list[str], count: int = 1000) -> str:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    events = [
        {
            "type": "attempt",
            "item_id": items[k % len(items)],
            "catalog_id": "sample-course",
            "timestamp": (start + timedelta(seconds=30 * k)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "score": float(k % 3 != 0),
            "time_spent_ms": 20_000,
        }
        for k in range(count)
    ]
    return json.dumps(events, separators=(",", ":"))


def voice_body(folder: Path) -> tuple[Path, str]:
    """A multipart body of one scoring request (espeak-ng saying the phrase), and its Content-Type."""
    from learnloop.voice.synthesis import synthesize

    phrase = "the quick brown fox jumps over the lazy dog"
    audio = synthesize(phrase)
    boundary = "bench" + uuid.uuid4().hex
    fields = {"target_phrase": phrase, "dialect": "en-us", "user_id": "voice-user", "audio_format": "wav"}
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="audio"; filename="a.wav"\r\n'
        "Content-Type: audio/wav\r\n\r\n".encode()
        + audio
        + b"\r\n"
    )
    body = folder / "voice.body"
    body.write_bytes(b"".join(parts) + f"--{boundary}--\r\n".encode())
    return body, f"multipart/form-data; boundary={boundary}"


def keys_toml(limits: bool) -> str:
    text = "[api_keys]\n" + "".join(f'"{key}" = "app-{name}"\n' for name, key in KEYS.items())
    if limits:
        # the flooding key: a budget of scoring seconds; the others: far above what the benchmark sends
        text += (
            "\n[rate_limits]\n"
            f'"{KEYS["learn"]}" = {{ requests_per_second = 100000, burst = 100000 }}\n'
            f'"{KEYS["ingest"]}" = {{ requests_per_second = 100000, burst = 100000 }}\n'
            f'"{KEYS["voice"]}" = {{ requests_per_second = 20, burst = 20, scoring_seconds_per_minute = 2 }}\n'
        )
    return text


def postgres_url(given: str | None) -> str | None:
    return given or os.environ.get("LEARNLOOP_TEST_POSTGRES") or None


def durability(server: str) -> str:
    """The server's ``fsync`` and ``synchronous_commit`` settings, as a phrase."""
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        names = ("fsync", "synchronous_commit")
        return ", ".join(f"{name} {conn.execute(f'SHOW {name}').fetchone()[0]}" for name in names)


def fresh_postgres(server: str) -> str:
    import psycopg

    name = f"learnloop_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return urlsplit(server)._replace(path=f"/{name}").geturl()


def drop_postgres(server: str, url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def show(label: str, run: Run, unit: str = "requests/s", per_request: int = 1) -> None:
    print(
        f"{label}: {run.rate * per_request:,.0f} {unit}, p50 {run.p50_ms:.2f} ms, p99 {run.p99_ms:.2f} ms, "
        f"errors {run.errors} ({run.requests} requests in {run.seconds:.1f} s; load {run.load})"
        + (f"\n    first error: {run.first_error}" if run.first_error else ""),
        flush=True,
    )


def docs_block(results: list[dict], voice: dict | None, args: argparse.Namespace, loads: tuple[str, str]) -> str:
    names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
    lines = [
        f"Generated by `{command_line()}` on {datetime.now(UTC).date().isoformat()} ({machine_note()}; load "
        f"average {loads[0]} before the run, {loads[1]} after). Sample course, {args.learners} learners at once "
        f"(one connection each), {args.seconds:g} s per run; ingestion 2 connections, calls of 1,000 events."
        + (f" PostgreSQL server: {args.pg_settings}." if getattr(args, "pg_settings", None) else ""),
        "",
        "| store | workers | learn: adaptive-engine requests/s | p50 | p99 | errors "
        "| ingest: events/s | p50 per call | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        a, b = r["learn"], r["ingest"]
        lines.append(
            f"| {names[r['store']]} | {r['workers']} | {a.rate:,.0f} | {a.p50_ms:.1f} ms | {a.p99_ms:.1f} ms "
            f"| {a.errors} | {b.rate * 1000:,.0f} | {b.p50_ms:.1f} ms | {b.errors} |"
        )
    if voice is not None:
        lines += [
            "",
            f"Voice flood ({names[voice['store']]}, {voice['workers']} worker(s)): 50 connections of one key posting "
            f"scorings while the learners of another key step their sessions. Learn p99 alone "
            f"{voice['alone'].p99_ms:.1f} ms, during the flood {voice['flood'].p99_ms:.1f} ms "
            f"({voice['flood'].p99_ms / voice['alone'].p99_ms:.2f}×), {voice['flood'].rate:,.0f} requests/s, "
            f"errors {voice['flood'].errors}; the flooding key's answers: {voice['statuses']}.",
        ]
    checks = targets(results, voice)
    if checks:
        lines += ["", "Targets:", ""] + [f"- {c}" for c in checks]
    return "\n".join(lines).replace("<=", "≤").replace(">=", "≥")


def targets(results: list[dict], voice: dict | None) -> list[str]:
    out = []
    for store, rate, label in (("sqlite", 1000, "SQLite"), ("postgres", 800, "PostgreSQL")):
        runs = [r for r in results if r["store"] == store]
        if not runs:
            continue
        best = max(runs, key=lambda r: r["learn"].rate)
        a = best["learn"]
        met = a.rate >= rate and a.errors == 0 and (store != "sqlite" or a.p99_ms < 20)
        p99 = " with p99 < 20 ms" if store == "sqlite" else ""
        out.append(
            f"{label}: >= {rate:,} adaptive-engine requests/s{p99}, no errors, at the best worker count "
            f"({best['workers']}): {a.rate:,.0f}/s, p99 {a.p99_ms:.1f} ms, {a.errors} errors "
            + ("met" if met else "NOT met")
        )
        if store == "sqlite":
            top = max(r["ingest"].rate * 1000 for r in runs)
            out.append(
                f"SQLite: /v2/upsert-events >= 100,000 events/s: {top:,.0f} " + ("met" if top >= 100_000 else "NOT met")
            )
    if voice is not None:
        ratio = voice["flood"].p99_ms / voice["alone"].p99_ms
        out.append(
            f"voice flood raises the other key's p99 by <= 2x: {ratio:.2f}x " + ("met" if ratio <= 2 else "NOT met")
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    parser.add_argument("--learners", type=int, default=8, help="learners at once (one connection each)")
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each wrk run")
    parser.add_argument("--cap", type=int, default=50_000, help="most requests per connection in a run")
    parser.add_argument("--quick", action="store_true", help="3 s runs")
    parser.add_argument("--voice", action="store_true", help="also run the voice flood (needs the voice extra)")
    parser.add_argument(
        "--flood-only",
        action="store_true",
        help="only the voice flood, at the first of --workers on the first of --stores (a fresh server per repeat)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="voice floods to run (the median ratio is reported)")
    parser.add_argument("--pairs", type=int, default=1, help="learn runs alone and during the flood, per server")
    parser.add_argument("--no-limits", action="store_true", help="keys file without [rate_limits]")
    parser.add_argument("--threads", type=int, default=None, help="learnloop serve --threads (default: its own)")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL where databases may be created")
    parser.add_argument(
        "--pg-test-settings", action="store_true", help="the throwaway server without fsync (the test suite's)"
    )
    parser.add_argument("--write-docs", action="store_true", help="write the results into the docs file's markers")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs file for --write-docs")
    args = parser.parse_args()
    if args.quick:
        args.seconds = 3.0
    if args.write_docs and args.quick and args.docs.resolve() == DOCS:
        parser.error("--quick figures go to a scratch copy only: give --docs PATH")
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: run scripts/system-deps")
    stores = args.stores.split(",")
    if "postgres" in stores and postgres_url(args.postgres) is None:
        # run again inside a throwaway PostgreSQL server (stopped when the script exits)
        inner = shlex.join([sys.executable, *sys.argv])
        script = ROOT / "scripts" / "_postgres.sh"
        env = dict(os.environ, LEARNLOOP_POSTGRES_DURABLE="0" if args.pg_test_settings else "1")
        raise SystemExit(subprocess.call(["bash", "-c", f"source {shlex.quote(str(script))} && {inner}"], env=env))
    workers = [int(w) for w in args.workers.split(",")]
    results: list[dict] = []
    voice: dict | None = None
    loads_before = load_average()
    print(f"{machine_note()}; load average {loads_before}; {args.learners} learners; {args.seconds:g} s per run")
    if "postgres" in stores:
        args.pg_settings = durability(postgres_url(args.postgres) or "")
        print(f"PostgreSQL server: {args.pg_settings}")
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        folder = Path(tmp)
        keys = folder / "keys.toml"
        keys.write_text(keys_toml(not args.no_limits))
        scripts = {"learn": folder / "learn.lua", "ingest": folder / "ingest.lua", "voice": folder / "voice.lua"}
        for name, text in (("learn", LEARN_LUA), ("ingest", INGEST_LUA), ("voice", VOICE_LUA)):
            scripts[name].write_text(text)
        for store in [] if args.flood_only else stores:
            for count in workers:
                pg_server = postgres_url(args.postgres) if store == "postgres" else None
                url = fresh_postgres(pg_server) if pg_server else f"sqlite:///{folder / f'bench-{count}.db'}"
                extra = [] if args.threads is None else ["--threads", str(args.threads)]
                server = Server(url, count, keys, folder, voice=args.voice, extra=extra)
                try:
                    run = uuid.uuid4().hex[:8]
                    learn(server.base, scripts["learn"], args.learners, min(2.0, args.seconds), 2000, f"warm{run}")
                    a = learn(server.base, scripts["learn"], args.learners, args.seconds, args.cap, f"l{run}")
                    show(f"[{store} x{count}] learn", a)
                    events = folder / "events.json"
                    events.write_text(events_json(exercise_ids(server.base)))
                    b = ingest(server.base, scripts["ingest"], events, args.seconds, max(args.cap // 10, 20), f"i{run}")
                    show(f"[{store} x{count}] ingest", b, "events/s", 1000)
                    results.append({"store": store, "workers": count, "learn": a, "ingest": b})
                finally:
                    server.stop()
                    if pg_server:
                        drop_postgres(pg_server, url)
        if args.voice or args.flood_only:
            at = (stores[0], workers[0]) if args.flood_only else best_config(results)
            floods = [f for _ in range(max(1, args.repeat)) for f in voice_flood(args, folder, keys, scripts, *at)]
            ratios = sorted(f["flood"].p99_ms / f["alone"].p99_ms for f in floods)
            voice = sorted(floods, key=lambda f: f["flood"].p99_ms / f["alone"].p99_ms)[(len(floods) - 1) // 2]
            if len(floods) > 1:
                print(
                    f"voice flood p99 ratios: {', '.join(f'{r:.2f}' for r in ratios)}; median {voice_ratio(voice):.2f}"
                )
    loads_after = load_average()
    for check in targets(results, voice):
        print("target", check)
    if args.write_docs:
        replace_block(args.docs, "bench_http", docs_block(results, voice, args, (loads_before, loads_after)))


def best_config(results: list[dict]) -> tuple[str, int]:
    """The first store's best worker count (by learn requests/s)."""
    first = [r for r in results if r["store"] == results[0]["store"]]
    best = max(first, key=lambda r: r["learn"].rate)
    return best["store"], best["workers"]


def voice_ratio(voice: dict) -> float:
    return float(voice["flood"].p99_ms / voice["alone"].p99_ms)


def voice_flood(
    args: argparse.Namespace, folder: Path, keys: Path, scripts: dict[str, Path], store: str, count: int
) -> list[dict]:
    """The learn scenario alone, then beside 50 connections of another key posting scorings; ``--pairs`` times
    on the same server (neighbouring windows: a load that drifts moves both runs of a pair alike)."""
    pg_server = postgres_url(args.postgres) if store == "postgres" else None
    url = fresh_postgres(pg_server) if pg_server else f"sqlite:///{folder / f'voice-{uuid.uuid4().hex[:8]}.db'}"
    body, content_type = voice_body(folder)
    server = Server(
        url, count, keys, folder, voice=True, extra=[] if args.threads is None else ["--threads", str(args.threads)]
    )
    try:
        run = uuid.uuid4().hex[:8]
        # the scorer loads its acoustic model on its first scoring (seconds): once, before the timed runs
        warm = urllib.request.Request(server.base + "/api/v1/score", data=body.read_bytes(), method="POST")
        warm.add_header("Content-Type", content_type)
        warm.add_header("X-API-KEY", KEYS["learn"])
        with urllib.request.urlopen(warm, timeout=600) as answer:  # idle-class: slow on a busy machine
            print(f"scorer warm-up: {answer.status}")
        learn(server.base, scripts["learn"], args.learners, min(2.0, args.seconds), 2000, f"warm{run}")
        pairs = []
        for k in range(max(1, args.pairs)):
            alone = learn(server.base, scripts["learn"], args.learners, args.seconds, args.cap, f"a{k}{run}")
            show(f"[{store} x{count}] learn alone", alone)
            flood = subprocess.Popen(
                ["wrk", "-t", "2", "-c", "50", "-d", f"{args.seconds + 4:g}s", "--timeout", "60s", "-s"]
                + [str(scripts["voice"]), server.base, "--", KEYS["voice"], str(body), content_type],
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(2)  # the flood is under way
            during = learn(server.base, scripts["learn"], args.learners, args.seconds, args.cap, f"f{k}{run}")
            out, _ = flood.communicate(timeout=args.seconds + 180)
            line = next((ln for ln in out.splitlines() if ln.startswith("VOICE ")), "VOICE {}")
            statuses = json.loads(line[6:]).get("statuses", {})
            show(f"[{store} x{count}] learn during the voice flood", during)
            print(f"voice flood answers: {statuses}; p99 ratio {during.p99_ms / alone.p99_ms:.2f}", flush=True)
            pairs.append({"store": store, "workers": count, "alone": alone, "flood": during, "statuses": statuses})
        return pairs
    finally:
        server.stop()
        if pg_server:
            drop_postgres(pg_server, url)


if __name__ == "__main__":
    main()
