"""The ``learnloop`` command: ``learnloop serve`` runs the three HTTP contracts under uvicorn.

``python -m learnloop.server`` takes the same options as ``learnloop serve``.
With ``--workers N`` (N > 1) uvicorn starts N processes; each builds its
application with :func:`create_app_from_env` and opens its own engine on the
same store, from settings the parent passes in the environment (the path of
the keys file, never the keys themselves).
"""

from __future__ import annotations

import argparse
import inspect
import os
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette

from learnloop import __version__
from learnloop.engine import Engine
from learnloop.server.app import create_app
from learnloop.server.keys import Keys, KeysFileError
from learnloop.server.throttle import Capacity
from learnloop.sim import sample_course

__all__ = ["Settings", "StoreUrlError", "create_app_from_env", "load_sample_course", "main", "open_engine"]

DEFAULT_STORE = "sqlite:///learnloop.db"
_ENV = {
    "store": "LEARNLOOP_STORE",
    "keys": "LEARNLOOP_KEYS",
    "no_auth": "LEARNLOOP_NO_AUTH",
    "seed": "LEARNLOOP_SEED",
    "voice": "LEARNLOOP_VOICE",
    "threads": "LEARNLOOP_THREADS",
}


class StoreUrlError(ValueError):
    """A store URL that names no store learnloop can open."""


def open_engine(url: str, *, seed: int | None = None) -> Engine:
    """An engine on the store at ``url``.

    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or a bare
    path: the SQLite store. ``memory://``: an in-memory store (one process
    only). ``postgresql://...``: the PostgreSQL store, where this version of
    learnloop has one. A store that cannot be opened raises
    :class:`StoreUrlError`, its message one line naming the problem (never a
    PostgreSQL password).

    >>> open_engine("memory://").store.__class__.__name__
    'MemoryStore'
    >>> open_engine("mysql://db/x")
    Traceback (most recent call last):
    ...
    learnloop.server.cli.StoreUrlError: unknown store URL scheme 'mysql'; use sqlite:///path.db, postgresql://... or memory://
    >>> open_engine("sqlite:/x.db")
    Traceback (most recent call last):
    ...
    learnloop.server.cli.StoreUrlError: a SQLite URL is sqlite:///relative/path.db or sqlite:////absolute/path.db, not 'sqlite:/x.db'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        if not url.strip():
            raise StoreUrlError("the store URL is empty")
        named, colon, _ = url.partition(":")
        if colon and named.lower() in _SCHEMES:  # sqlite:/x.db, memory:, postgresql:x: a URL missing its //
            raise StoreUrlError(_malformed(named.lower(), url))
        return _open_sqlite(url, seed)
    scheme = scheme.lower()
    if scheme == "memory":
        if rest:
            raise StoreUrlError(_malformed(scheme, url))
        return Engine(seed=seed)
    if scheme == "sqlite":
        if not rest.startswith("/") or len(rest) < 2:
            raise StoreUrlError(_malformed(scheme, url))
        return _open_sqlite(rest[1:], seed)
    if scheme in ("postgresql", "postgres"):
        return _open_postgres(url, seed)
    raise StoreUrlError(f"unknown store URL scheme {scheme!r}; use sqlite:///path.db, postgresql://... or memory://")


_SCHEMES = ("sqlite", "memory", "postgresql", "postgres")


def _malformed(scheme: str, url: str) -> str:
    if scheme == "sqlite":
        return f"a SQLite URL is sqlite:///relative/path.db or sqlite:////absolute/path.db, not {url!r}"
    if scheme == "memory":
        return f"the in-memory store is memory:// with nothing after it, not {url!r}"
    return "a PostgreSQL URL is postgresql://user@host:port/database (the URL given has no '//')"


def _open_sqlite(path: str, seed: int | None) -> Engine:
    file = Path(path)
    folder = file.parent
    if not folder.is_dir():
        problem = f"{folder} is not a directory" if folder.exists() else f"the directory {folder} does not exist"
        raise StoreUrlError(f"cannot open the SQLite store {path}: {problem}")
    if file.is_dir():
        raise StoreUrlError(f"cannot open the SQLite store {path}: it is a directory")
    try:
        return Engine.open(file, seed=seed)
    except (sqlite3.Error, OSError) as exc:
        # e.g. "file is not a database", "unable to open database file", "attempt to write a readonly database"
        raise StoreUrlError(f"cannot open the SQLite store {path}: {_one_line(str(exc))}") from None


def _open_postgres(url: str, seed: int | None) -> Engine:
    import importlib.util

    if importlib.util.find_spec("learnloop.store.postgres") is None:
        raise StoreUrlError("this version of learnloop has no PostgreSQL store; use sqlite:///path.db")
    try:
        return Engine.open(url, seed=seed)
    except ImportError as exc:  # the store's own message names the extra and its install line
        cause = f" ({_one_line(str(exc.__cause__))})" if exc.__cause__ is not None else ""
        raise StoreUrlError(_one_line(str(exc)) + cause) from None
    except Exception as exc:
        if type(exc).__module__.partition(".")[0] not in ("psycopg", "psycopg_pool"):
            raise
        # psycopg's message names the host and the database, never the password
        raise StoreUrlError(f"cannot open the PostgreSQL store: {_one_line(str(exc))}") from None


def _one_line(text: str) -> str:
    """``text`` with its line breaks and runs of blanks made single spaces.

    >>> _one_line("connection failed\\n\\tIs the server running?")
    'connection failed Is the server running?'
    """
    return " ".join(text.split())


def load_sample_course(engine: Engine, applications: Sequence[str]) -> list[str]:
    """Load the sample course (:func:`learnloop.sim.sample_course`) for each application that has no catalog yet.

    Returns the applications it was loaded for.
    """
    items, catalog = sample_course()
    loaded = []
    for app in applications:
        if engine.catalog_ids(app=app):
            continue
        with engine.atomic():
            engine.upsert_items(items, app=app)
            engine.upsert_catalog(catalog, app=app)
        loaded.append(app)
    return loaded


@dataclass(frozen=True)
class Settings:
    """What every worker needs to build its application (passed to workers in the environment)."""

    store: str = DEFAULT_STORE
    keys_file: Path | None = None
    no_auth: bool = False
    seed: int | None = None
    voice: bool = True
    threads: int = Capacity.threads

    def keys(self) -> Keys:
        """The credentials: read from ``keys_file``, or none at all with ``no_auth``."""
        if self.keys_file is None:
            if not self.no_auth:
                raise KeysFileError("no keys file: pass --keys keys.toml (or --no-auth to serve without credentials)")
            return Keys()
        return Keys.load(self.keys_file)

    def to_env(self) -> dict[str, str]:
        env = {_ENV["store"]: self.store, _ENV["voice"]: "1" if self.voice else "0"}
        if self.keys_file is not None:
            env[_ENV["keys"]] = str(self.keys_file.resolve())
        if self.no_auth:
            env[_ENV["no_auth"]] = "1"
        if self.seed is not None:
            env[_ENV["seed"]] = str(self.seed)
        if self.threads != Capacity.threads:
            env[_ENV["threads"]] = str(self.threads)
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        seed = env.get(_ENV["seed"])
        keys = env.get(_ENV["keys"])
        threads = env.get(_ENV["threads"])
        return cls(
            store=env.get(_ENV["store"], DEFAULT_STORE),
            keys_file=Path(keys) if keys else None,
            no_auth=env.get(_ENV["no_auth"]) == "1",
            seed=int(seed) if seed else None,
            voice=env.get(_ENV["voice"], "1") != "0",
            threads=int(threads) if threads else Capacity.threads,
        )


def _app(settings: Settings, keys: Keys, engine: Engine) -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            engine.close()

    capacity = Capacity(threads=settings.threads)
    return create_app(engine, keys=keys, voice=settings.voice, lifespan=lifespan, capacity=capacity)


def create_app_from_env() -> Starlette:
    """An application from ``LEARNLOOP_*`` environment variables; it closes its engine at shutdown.

    The factory of the worker processes (``uvicorn --factory
    learnloop.server:create_app_from_env``): ``LEARNLOOP_STORE`` (a store URL),
    ``LEARNLOOP_KEYS`` (the path of a keys file) or ``LEARNLOOP_NO_AUTH=1``,
    optionally ``LEARNLOOP_SEED``, ``LEARNLOOP_VOICE=0`` and ``LEARNLOOP_THREADS``.
    """
    settings = Settings.from_env(os.environ)
    keys = settings.keys()
    return _app(settings, keys, open_engine(settings.store, seed=settings.seed))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="learnloop", description="learnloop: an adaptive learning engine.")
    parser.add_argument("--version", action="version", version=f"learnloop {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _serve_options(commands.add_parser("serve", help="serve learning API v1, v2 and the voice API over HTTP"))
    _fit_options(commands.add_parser("fit", help="fit a catalog's learner model to the events of a store"))
    return parser


def _fit_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = (
        "Fit a catalog's learner model to the scored attempts a store holds (Engine.fit) and store the fitted "
        "settings if they predict held-out learners better than those in use; safe while servers run on the store. "
        "Ctrl-C stops it and changes nothing."
    )
    parser.add_argument("--store", required=True, help="store URL: sqlite:///path.db or postgresql://...")
    parser.add_argument("--catalog", required=True, help="the catalog id")
    parser.add_argument("--app", default="default", help="the application owning the catalog (default: %(default)s)")
    parser.add_argument("--folds", type=int, default=3, help="folds of the learners (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the search (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the held-out learners and folds (default: %(default)s)")
    parser.add_argument(
        "--holdout", type=float, default=0.2, help="share of learners the guard compares on (default: %(default)s)"
    )
    parser.add_argument("--no-forgetting", action="store_true", help="do not try the forgetting term")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def fit(args: argparse.Namespace) -> int:
    """Run Engine.fit on a store; prints what was kept (exit 0), 130 when interrupted, 2 on a bad call."""
    from learnloop.errors import LearnloopError

    if args.store.lower().startswith("memory:"):
        return _fail("a memory:// store starts empty: there is nothing to fit; use sqlite:///path.db", "fit")
    try:
        engine = open_engine(args.store)
        result = engine.fit(
            args.catalog,
            folds=args.folds,
            rounds=args.rounds,
            seed=args.seed,
            holdout=args.holdout,
            forgetting=not args.no_forgetting,
            progress=not args.no_progress,
            app=args.app,
        )
    except (StoreUrlError, LearnloopError) as exc:
        return _fail(str(exc), "fit")
    print(f"learnloop fit: {result}")
    return 130 if result.interrupted else 0


def _serve_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = (
        "Serve learning API v1 (/v1), v2 (/v2) and the voice API (/api/v1) over one store, with uvicorn. "
        "Health: GET /healthz (process up), GET /readyz (store reachable)."
    )
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        metavar="URL",
        help="where the state is kept: sqlite:///relative/path.db, sqlite:////absolute/path.db, "
        "postgresql://user@host/database (the 'postgres' extra) or memory:// (in memory, one process only; "
        "lost at exit) (default: %(default)s)",
    )
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument(
        "--keys",
        type=Path,
        metavar="FILE",
        help="TOML file of API keys and JWT issuers (see docs/deploy.md); one of --keys and --no-auth is required "
        "(default: none)",
    )
    auth.add_argument(
        "--no-auth",
        action="store_true",
        help="serve without credentials, every request belonging to application 'default' (default: off)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default: %(default)s)")
    parser.add_argument(
        "--threads",
        type=int,
        default=Capacity.threads,
        help="façade calls each worker runs at once; more wait in a bounded queue (default: %(default)s)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="load the sample course for every application that has no catalog yet (default: off)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the engine's recommendations, the same in every worker (default: none, each session draws its own)",
    )
    parser.add_argument(
        "--no-voice", action="store_true", help="do not serve the voice API at /api/v1 (default: off, it is served)"
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn's log level (default: %(default)s)",
    )
    return parser


def serve(args: argparse.Namespace) -> int:
    """Run the server (blocks until it is stopped)."""
    if args.workers < 1:
        return _fail("--workers must be at least 1")
    if args.threads < 1:
        return _fail("--threads must be at least 1")
    settings = Settings(
        store=args.store,
        keys_file=args.keys,
        no_auth=args.no_auth,
        seed=args.seed,
        voice=not args.no_voice,
        threads=args.threads,
    )
    if settings.store.lower().startswith("memory:") and args.workers > 1:
        return _fail("memory:// holds the state in one process; with several workers use sqlite:///path.db")
    try:
        keys = settings.keys()
        engine = open_engine(settings.store, seed=settings.seed)
    except (KeysFileError, StoreUrlError) as exc:
        return _fail(str(exc))
    if args.demo:
        for app in load_sample_course(engine, keys.applications):
            print(f"learnloop serve: the sample course is loaded for application {app!r}", file=sys.stderr)
    base = f"http://{args.host}:{args.port}"
    print(
        f"learnloop serve: {base} on {settings.store}, {args.workers} worker(s), "
        + (f"keys from {settings.keys_file}" if keys.authenticated else "no authentication")
        + f"\n  learning API v1  {base}/v1\n  learning API v2  {base}/v2"
        + ("" if args.no_voice else f"\n  voice API        {base}/api/v1")
        + f"\n  API reference    {base}/docs"
        + f"\n  health           {base}/healthz, {base}/readyz",
        file=sys.stderr,
        flush=True,
    )
    if args.workers == 1:
        uvicorn.run(_app(settings, keys, engine), host=args.host, port=args.port, log_level=args.log_level)
        return 0
    engine.close()
    os.environ.update(settings.to_env())
    _run_workers(args.host, args.port, args.workers, args.log_level)
    return 0


class _TcpConfig(uvicorn.Config):
    """uvicorn's configuration, binding a listening socket whose ``proto`` says TCP.

    asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on accepted
    sockets whose listening socket reports ``IPPROTO_TCP``. The socket uvicorn
    binds for its workers reports 0, and every response (its head and its body
    written apart) then waits for the client's delayed ACK: about 40 ms a
    request on Linux instead of about one.
    """

    def bind_socket(self) -> socket.socket:
        sock = super().bind_socket()
        if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.proto != socket.IPPROTO_TCP:
            # the same descriptor, its family, type and protocol read back from it
            sock = socket.socket(fileno=sock.detach())
            sock.set_inheritable(True)
        return sock


def _run_workers(host: str, port: int, workers: int, log_level: str) -> None:
    """``uvicorn.run("learnloop.server:create_app_from_env", factory=True, workers=N)``, on a TCP socket."""
    from uvicorn.supervisors import Multiprocess

    app = "learnloop.server:create_app_from_env"
    config = _TcpConfig(app, factory=True, host=host, port=port, workers=workers, log_level=log_level)
    sock = config.bind_socket()
    supervisor: Any = Multiprocess
    if "target" in inspect.signature(Multiprocess).parameters:  # uvicorn < 0.30
        supervisor(config, target=uvicorn.Server(config).run, sockets=[sock]).run()  # pragma: no cover
    else:
        supervisor(config, sockets=[sock]).run()


def _fail(message: str, command: str = "serve") -> int:
    print(f"learnloop {command}: {_one_line(message)}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """The ``learnloop`` console script."""
    args = _parser().parse_args(argv)
    return fit(args) if args.command == "fit" else serve(args)


def serve_main(argv: Sequence[str] | None = None) -> int:
    """``python -m learnloop.server``: the options of ``learnloop serve``."""
    parser = _serve_options(argparse.ArgumentParser(prog="python -m learnloop.server"))
    return serve(parser.parse_args(argv))
