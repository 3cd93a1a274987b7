"""Memory of an engine on the memory store, on real learning logs: how much, and where it goes.

    python benchmarks/bench_memory.py DATA_DIR [--logs assist2015,assist2009,statics]
                                      [--against REV] [--no-heap] [--no-status]

``DATA_DIR`` holds the DKVMN benchmark files (``assist2015/assist2015_train.csv``,
``assist2009_updated/assist2009_updated_train.csv``, ``STATICS/STATICS_train.csv``
with ``STATICS_qid_sid_sname``). Each log is ingested (``Engine.upsert_events``,
one call per learner) into a fresh ``Engine()`` in a subprocess, which reports:

* the events stored; peak RSS (``ru_maxrss``) and RSS growth (``VmRSS``, after
  the log was read and before the engine was made);
* with tracemalloc (in a second subprocess, as tracing costs memory of its own):
  the growth of the Python heap and its peak;
* the bytes held, by where they go: the store (event documents, event keys and
  indexes, learner revision documents, the rest), the learner-state cache (the
  state arrays, their checkpoints, the rest of the entries) and the content
  (items, catalog, compiled catalog), per event and as MB per million events;

then the same after reading every learner's status once
(``engine.user_status(user, "c", [{}])``), which fills the learner-state cache up
to its bound (``learner_cache_bytes``: the default, 256 MB, unless
``--cache-mb`` says otherwise). ``--against REV`` measures, in the same run, the
memory store of git revision ``REV`` (``src/learnloop/store/memory.py`` as it was
then) beside the current one. Ctrl-C stops the run and its subprocess.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

LOGS = {
    "assist2015": ("assist2015/assist2015_train.csv", None),
    "assist2009": ("assist2009_updated/assist2009_updated_train.csv", None),
    "statics": ("STATICS/STATICS_train.csv", "STATICS/STATICS_qid_sid_sname"),
}
MB = 2**20


def vm_rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


# -- sizes ------------------------------------------------------------------------------
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType)


def deep_size(root: object, seen: set[int]) -> int:
    """Bytes reachable from ``root`` (objects in ``seen`` excluded; classes, modules and
    functions not followed), each object counted once."""
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _OPAQUE):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def store_breakdown(store: Any) -> dict[str, dict[str, int]]:
    """Per table: rows, encoded documents and keys/indexes (bytes)."""
    if hasattr(store, "footprint"):
        out: dict[str, dict[str, int]] = store.footprint()
        return out
    # the dict-of-rows layout (a key tuple -> (seq, encoded doc), prefix groups of keys)
    size = sys.getsizeof
    seen: set[int] = set()
    out = {}
    for (table, _), rows in store._data.items():
        into = out.setdefault(table, {"rows": 0, "documents": 0, "keys": 0})
        into["keys"] += size(rows)
        for key, row in rows.items():
            into["rows"] += 1
            into["documents"] += size(row[1])
            into["keys"] += size(key) + size(row) + size(row[0])
            into["keys"] += sum(size(p) for p in key if id(p) not in seen and not seen.add(id(p)))  # type: ignore[func-returns-value]
    for (table, _), groups in store._groups.items():
        into = out.setdefault(table, {"rows": 0, "documents": 0, "keys": 0})
        into["keys"] += deep_size(groups, seen)
    return out


def cache_breakdown(engine: Any) -> dict[str, int]:
    """The learner-state cache: state arrays (by array), checkpoints, the rest."""
    cache = engine._learners.tracker._cache
    out = {"entries": 0, "ability": 0, "memory": 0, "items": 0, "signature": 0, "checkpoints": 0, "accounted": 0}
    # a state holds the topics and the items the learner met: their numbers and rows (ability,
    # memory, "items"), and the signatures of the items' last events ("signature")
    parts = {
        "ability": ("ability_topics", "ability_rows", "overall_row"),
        "memory": ("memory_topics", "memory_rows"),
        "items": ("touched", "rows"),
        "signature": ("sig",),
    }
    seen: set[int] = set()
    with cache._lock:
        entries = [value for value, _ in cache._data.values()]
        out["accounted"] = cache._nbytes
    rest = 0
    for entry in entries:
        out["entries"] += 1
        state = entry.state
        for name, fields in parts.items():
            for field in fields:
                array = getattr(state, field)
                out[name] += sys.getsizeof(array)
                seen.add(id(array))
        seen.add(id(state))
        for checkpoint in entry.checkpoints:
            if id(checkpoint.state) not in seen:
                out["checkpoints"] += deep_size(checkpoint.state, seen)
        rest += deep_size(entry, seen)
    out["rest"] = rest + sys.getsizeof(cache._data)
    return out


# -- one measurement (in a subprocess) ---------------------------------------------------------
def baseline_store(rev: str) -> Any:
    """The memory store of git revision ``rev``."""
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(
        ["git", "show", f"{rev}:src/learnloop/store/memory.py"], cwd=root, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("learnloop.store._baseline_memory")
    exec(compile(source, f"{rev}:memory.py", "exec"), module.__dict__)
    return module.MemoryStore()


def measure(engine: Any, users: list[str], rss0: int, heap0: int, traced: bool) -> dict[str, Any]:
    import tracemalloc

    gc.collect()
    out: dict[str, Any] = {"rss_growth": vm_rss() - rss0, "peak_rss": peak_rss()}
    if traced:
        current, peak = tracemalloc.get_traced_memory()
        out["heap_growth"] = current - heap0
        out["heap_peak"] = peak - heap0
        return out
    out["store"] = store_breakdown(engine.store)
    out["cache"] = cache_breakdown(engine)
    seen = {id(engine.store), id(engine._learners.tracker)}
    out["content"] = deep_size(engine._content, seen)
    out["cache_nbytes"] = engine.learner_cache_nbytes()
    out["predictions"] = engine._learners._predictions.nbytes
    return out


def child(data_dir: Path, log_name: str, against: str | None, traced: bool, status: bool, cache_mb: int | None) -> None:
    import tracemalloc

    from learnloop import Engine
    from learnloop.datasets import read_item_skills, read_three_line

    path, skills = LOGS[log_name]
    log = read_three_line(data_dir / path, item_skills=read_item_skills(data_dir / skills) if skills else None)
    items, catalog = log.catalog("c")
    streams = list(log.events("c"))
    users = [user for user, _ in streams]
    store = baseline_store(against) if against else None
    gc.collect()
    rss0, heap0 = vm_rss(), 0
    if traced:
        tracemalloc.start()
        heap0 = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    options = {} if cache_mb is None else {"learner_cache_bytes": cache_mb * MB}
    engine = Engine(store=store, **options)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    for user, events in streams:
        engine.upsert_events(user, events)
    result: dict[str, Any] = {"events": engine.store.count("events", "default"), "learners": len(users)}
    result["ingest_s"] = time.perf_counter() - started
    result["ingested"] = measure(engine, users, rss0, heap0, traced)
    if status:
        started = time.perf_counter()
        for user in users:
            engine.user_status(user, "c", [{}])
        result["status_s"] = time.perf_counter() - started
        result["after_status"] = measure(engine, users, rss0, heap0, traced)
    print(json.dumps(result))


# -- the report ---------------------------------------------------------------------------------
def per_million(nbytes: float, events: int) -> float:
    return nbytes / MB / events * 1e6


def report(log_name: str, label: str, plain: dict[str, Any], heap: dict[str, Any] | None) -> None:
    events = plain["events"]
    print(f"\n## {log_name} - {label}: {events:,} events, {plain['learners']:,} learners")
    timing = f"ingest {plain['ingest_s']:.1f} s" + (
        f", statuses {plain['status_s']:.1f} s" if "status_s" in plain else ""
    )
    print(f"   {timing}")
    for phase in ("ingested", "after_status"):
        if phase not in plain:
            continue
        m = plain[phase]
        store = m["store"]
        events_t = store.get("events", {"documents": 0, "keys": 0})
        learners_t = store.get("learners", {"documents": 0, "keys": 0})
        other = sum(t["documents"] + t["keys"] for name, t in store.items() if name not in ("events", "learners"))
        cache = m["cache"]
        arrays = sum(cache[k] for k in ("ability", "memory", "items", "signature"))
        parts = [
            ("store: event documents", events_t["documents"]),
            ("store: event keys + indexes", events_t["keys"]),
            ("store: learner revision docs (with keys)", learners_t["documents"] + learners_t["keys"]),
            ("store: other tables", other),
            (
                f"learner cache: state arrays ({cache['entries']:,} learners; items met "
                f"{per_million(cache['items'], events):.0f}, signature {per_million(cache['signature'], events):.0f}, "
                f"ability {per_million(cache['ability'], events):.0f}, memory {per_million(cache['memory'], events):.0f})",
                arrays,
            ),
            ("learner cache: checkpoints", cache["checkpoints"]),
            ("learner cache: rest of the entries", cache["rest"]),
            ("latest predictions per learner (bounded cache)", m.get("predictions", 0)),
            ("content (items, catalog, compiled)", m["content"]),
        ]
        total = sum(n for _, n in parts)
        title = "after ingestion" if phase == "ingested" else "after one status per learner (default cache bound)"
        print(f"   {title}:")
        print(f"   {'where':<100} {'B/event':>8} {'MB/M events':>12}")
        for name, n in parts:
            print(f"   {name:<100} {n / events:>8.1f} {per_million(n, events):>12.1f}")
        print(f"   {'total held (sum of the above)':<100} {total / events:>8.1f} {per_million(total, events):>12.1f}")
        print(
            f"   RSS growth {m['rss_growth'] / MB:.0f} MB ({per_million(m['rss_growth'], events):.0f} MB/M events), "
            f"peak RSS {m['peak_rss'] / MB:.0f} MB; cache as accounted {cache['accounted'] / MB:.1f} MB"
        )
        if heap is not None and phase in heap:
            h = heap[phase]
            print(
                f"   tracemalloc: heap growth {h['heap_growth'] / MB:.0f} MB "
                f"({per_million(h['heap_growth'], events):.0f} MB/M events), peak {h['heap_peak'] / MB:.0f} MB"
            )


def run_child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate()
    except KeyboardInterrupt:
        proc.kill()
        proc.wait()
        raise
    if proc.returncode != 0:
        raise SystemExit(f"measurement failed: {' '.join(args)}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--logs", default=",".join(LOGS))
    parser.add_argument("--against", help="also measure the memory store of this git revision")
    parser.add_argument("--no-heap", action="store_true", help="skip the tracemalloc pass")
    parser.add_argument("--no-status", action="store_true", help="skip reading the statuses")
    parser.add_argument("--cache-mb", type=int, help="learner_cache_bytes in MB (default: the engine's)")
    parser.add_argument("--child", nargs=2, metavar=("LOG", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        log_name, mode = args.child
        kind, _, rev = mode.partition(":")
        child(args.data_dir, log_name, rev or None, kind == "heap", not args.no_status, args.cache_mb)
        return
    started = time.perf_counter()
    try:
        for log_name in args.logs.split(","):
            for rev in ([args.against] if args.against else []) + [None]:
                common = [str(args.data_dir)] + (["--no-status"] if args.no_status else [])
                common += ["--cache-mb", str(args.cache_mb)] if args.cache_mb is not None else []
                plain = run_child([*common, "--child", log_name, f"plain:{rev or ''}"])
                heap = None if args.no_heap else run_child([*common, "--child", log_name, f"heap:{rev or ''}"])
                report(log_name, f"memory store of {rev}" if rev else "memory store (this checkout)", plain, heap)
                sys.stdout.flush()
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        raise SystemExit(130) from None
    print(f"\n{time.perf_counter() - started:.0f} s in all (pid {os.getpid()})")


if __name__ == "__main__":
    main()
