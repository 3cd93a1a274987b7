"""Statements and round trips of one adaptive step on PostgreSQL.

Four learners each step a learn session 30 times on the sample course (``Engine.open`` on a
fresh database), answering every recommendation; the steps after the first ten of each
session are counted (the catalog is compiled and the learner state cached by then, as in a
running service). Statements are counted by wrapping psycopg's ``Cursor.execute`` and the
connection's own commands (``BEGIN``, ``COMMIT``, savepoints); round trips are read from
libpq's trace of every connection: a message sent by the client followed by one from the
server (libpq buffers its trace, so the boundary between two steps is blurred and the figure
may come out about one low: 15.1 for the 16 statements of 16 round trips before pipelining).
Prints statements and round trips per step, and each statement's count per step.

PostgreSQL: ``--postgres URL`` (a server where databases may be created), else
``LEARNLOOP_TEST_POSTGRES``, else a throwaway server started by ``scripts/_postgres.sh``.

Run: ``.venv/bin/python benchmarks/bench_pg_statements.py``
"""

from __future__ import annotations

import argparse
import collections
import os
import shlex
import subprocess
import sys
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def count(server: str, learners: int = 4, steps: int = 30, skip: int = 10) -> None:
    import psycopg

    from learnloop import Engine
    from learnloop.server import load_sample_course

    name = f"learnloop_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = urlsplit(server)._replace(path=f"/{name}").geturl()
    trace = tempfile.NamedTemporaryFile("w+", suffix=".trace", delete=False)
    counting = [False]
    statements: collections.Counter[str] = collections.Counter()
    execute, command, connect = psycopg.Cursor.execute, psycopg.Connection._exec_command, psycopg.Connection.connect

    def counted_execute(self: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if counting[0]:
            statements[str(query)[:72]] += 1
        return execute(self, query, params, **kwargs)

    def counted_command(self: Any, cmd: Any, *args: Any, **kwargs: Any) -> Any:
        if counting[0]:
            statements[(cmd.decode() if isinstance(cmd, bytes) else str(cmd))[:72]] += 1
        return command(self, cmd, *args, **kwargs)

    def traced_connect(cls: Any, *args: Any, **kwargs: Any) -> Any:
        conn = connect.__func__(cls, *args, **kwargs)  # type: ignore[attr-defined]
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        return conn

    def mark(on: bool) -> None:
        counting[0] = on
        os.write(trace.fileno(), f"MARK {int(on)}\n".encode())

    psycopg.Cursor.execute = counted_execute  # type: ignore[method-assign]
    psycopg.Connection._exec_command = counted_command  # type: ignore[method-assign]
    psycopg.Connection.connect = classmethod(traced_connect)  # type: ignore[method-assign,assignment]
    counted = 0
    try:
        with Engine.open(url, seed=7) as engine:
            load_sample_course(engine, ["app-1"])
            for learner in range(learners):
                spec = {"user_id": f"u{learner}", "catalog_id": "sample-course", "mode": {"type": "learn"}}
                context = engine.create_session({**spec, "filter": {}}, app="app-1")
                rec = None
                for k in range(steps):
                    events = []
                    if rec is not None:
                        at = {"timestamp": (T0 + timedelta(seconds=30 * k)).isoformat().replace("+00:00", "Z")}
                        at["recommendation_context"] = rec.recommendation_context
                        kind = {"type": "view_theory", "fraction_completed": 1.0}
                        events = [at | (kind if rec.item_id.endswith("-theory") else {"type": "attempt", "score": 1.0})]
                    mark(k >= skip)
                    rec = engine.adaptive_step(context, events, app="app-1").recommendation
                    mark(False)
                    counted += k >= skip
                    if rec is None:
                        break
    finally:
        psycopg.Cursor.execute, psycopg.Connection._exec_command = execute, command  # type: ignore[method-assign]
        psycopg.Connection.connect = connect  # type: ignore[method-assign]
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    trips, on, last = 0, False, ""
    trace.seek(0)
    for line in trace:
        if line.startswith("MARK"):
            on, last = line.split()[1] == "1", ""
            continue
        if on and line[:1] == "B" and last == "F":
            trips += 1  # the client sent, then the server answered
        last = line[:1]
    os.unlink(trace.name)
    total = sum(statements.values())
    print(f"{counted} steps counted: {total / counted:.2f} statements and {trips / counted:.2f} round trips a step")
    for text, n in statements.most_common():
        print(f"  {n / counted:5.2f}  {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL where databases may be created")
    args = parser.parse_args()
    server = args.postgres or os.environ.get("LEARNLOOP_TEST_POSTGRES")
    if not server:
        inner = shlex.join([sys.executable, *sys.argv])
        script = ROOT / "scripts" / "_postgres.sh"
        raise SystemExit(subprocess.call(["bash", "-c", f"source {shlex.quote(str(script))} && {inner}"]))
    count(server)


if __name__ == "__main__":
    main()
