"""Content benchmarks: upsert of a maximal catalog, and filter compilation.

Run with ``.venv/bin/python benchmarks/bench_content.py``. Prints one line per
figure and whether it meets its target:

- ``POST /v2/upsert-catalog`` through :class:`~learnloop.api.V2Api` with a
  catalog at the documented maxima (2500 topics, 20000 topic item refs), on the
  in-memory and on the SQLite store; target under 1 s.
- :func:`~learnloop.content.compile_filter` over a 10000-item catalog, with all
  eight filter conditions; median of many runs; target under 1 ms.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from learnloop import Engine, Limits
from learnloop.api import V2Api
from learnloop.content import Filter, compile_filter

HEADERS = {"X-API-KEY": "bench-key"}
LIMITS = Limits()


def make_items(n: int) -> list[dict[str, Any]]:
    """``n`` items with a few tags and content types, a tenth of them theory."""
    ctypes = ("mcq", "text", "cloze", "theory")
    return [
        {
            "item_id": f"item-{i}",
            "display_name": f"Item {i}",
            "scorable": i % 10 != 0,
            "difficulty": round((i % 97) / 97, 4),
            "content_type": "theory" if i % 10 == 0 else ctypes[i % 3],
            "tags": [f"tag-{i % 50}", f"level-{i % 3}"],
        }
        for i in range(n)
    ]


def make_catalog(*, n_topics: int, n_refs: int, catalog_id: str = "course") -> dict[str, Any]:
    """A two-level catalog: chapters holding sections, items spread over the sections.

    Each chapter needs the previous chapter, each section the previous section
    of its chapter.
    """
    per_chapter = 25
    n_chapters = n_topics // per_chapter
    n_sections = n_topics - n_chapters
    topics: list[dict[str, Any]] = []
    ref = 0
    section = 0
    for c in range(n_chapters):
        children = []
        sections = []
        count = n_sections // n_chapters + (1 if c < n_sections % n_chapters else 0)
        for s in range(count):
            sid = f"sec-{c}-{s}"
            children.append({"topic_id": sid})
            take = n_refs // n_sections + (1 if section < n_refs % n_sections else 0)
            refs = [{"item_id": f"item-{ref + k}"} for k in range(take)]
            if refs:
                refs[0]["difficulty"] = 0.4
            ref += take
            section += 1
            topic: dict[str, Any] = {"topic_id": sid, "display_name": f"Section {c}.{s}", "item_refs": refs}
            if s:
                topic["prerequisite_topic_refs"] = [{"topic_id": f"sec-{c}-{s - 1}"}]
            sections.append(topic)
        chapter: dict[str, Any] = {
            "topic_id": f"ch-{c}",
            "display_name": f"Chapter {c}",
            "child_topic_refs": children,
        }
        if c:
            chapter["prerequisite_topic_refs"] = [{"topic_id": f"ch-{c - 1}"}]
        topics.append(chapter)
        topics.extend(sections)
    assert len(topics) == n_topics and ref == n_refs, (len(topics), ref)
    return {"catalog_id": catalog_id, "display_name": "Benchmark course", "topics": topics}


def bench_upsert(store: str, repeat: int = 5) -> list[float]:
    """Seconds per ``upsert-catalog`` of a maximal catalog (JSON bytes body)."""
    catalog = make_catalog(n_topics=LIMITS.max_topics_per_catalog, n_refs=LIMITS.max_topic_item_refs)
    body = json.dumps(catalog).encode()
    items = {"items": make_items(LIMITS.max_topic_item_refs)}
    timings = []
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine() if store == "memory" else Engine.open(Path(tmp) / "bench.db")
        with engine:
            api = V2Api(engine, api_keys={"bench-key": "app"})
            assert api.handle("POST", "/v2/upsert-items", body=items, headers=HEADERS).status == 200
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = api.handle("POST", "/v2/upsert-catalog", body=body, headers=HEADERS)
                timings.append(time.perf_counter() - t0)
                assert r.status == 200, r.body
            # the compiled index of the stored catalog, once (cached afterwards)
            t0 = time.perf_counter()
            index = engine.catalog_index("course", app="app")
            compile_s = time.perf_counter() - t0
            assert index.n_items == LIMITS.max_topic_item_refs
    print(f"  catalog_index (first compile, {store}): {compile_s * 1e3:8.1f} ms")
    return timings


def bench_filter(runs: int = 2000) -> list[float]:
    """Microseconds per ``compile_filter`` over a 10000-item catalog."""
    n = 10_000
    engine = Engine()
    engine.upsert_items(make_items(n))
    engine.upsert_catalog(make_catalog(n_topics=500, n_refs=n))
    index = engine.catalog_index("course")
    flt = Filter(
        include_topic_ids=["ch-1", "ch-2", "ch-3", "ch-4", "ch-5", "ch-6", "ch-7", "ch-8"],
        include_tags=[f"tag-{i}" for i in range(0, 50, 2)],
        include_content_types=["mcq", "text", "theory"],
        include_item_ids=[f"item-{i}" for i in range(0, n, 3)],
        exclude_topic_ids=["sec-2-3", "sec-5-0"],
        exclude_tags=["level-2"],
        exclude_content_types=["cloze"],
        exclude_item_ids=[f"item-{i}" for i in range(0, n, 7)],
    )
    mask = compile_filter(index, flt)
    assert 0 < int(mask.sum()) < n
    simple = Filter(include_topic_ids=["ch-3"], exclude_tags=["level-1"])
    timings_all = []
    timings_simple = []
    for _ in range(runs):
        t0 = time.perf_counter()
        compile_filter(index, flt)
        t1 = time.perf_counter()
        compile_filter(index, simple)
        t2 = time.perf_counter()
        timings_all.append((t1 - t0) * 1e6)
        timings_simple.append((t2 - t1) * 1e6)
    print(f"  compile_filter, 2 conditions (topic + tag):       median {statistics.median(timings_simple):8.1f} µs")
    return timings_all


def main() -> int:
    ok = True
    print(f"learnloop content benchmarks (python {sys.version.split()[0]})")
    for store in ("memory", "sqlite"):
        timings = bench_upsert(store)
        best, median = min(timings), statistics.median(timings)
        met = median < 1.0
        ok &= met
        print(
            f"upsert-catalog 2500 topics / 20000 refs, {store:6s}: median {median * 1e3:8.1f} ms "
            f"(best {best * 1e3:.1f} ms) target < 1000 ms: {'met' if met else 'MISSED'}"
        )
    timings = bench_filter()
    median = statistics.median(timings)
    met = median < 1000.0
    ok &= met
    print(
        f"compile_filter, 10000 items, all 8 conditions:    median {median:8.1f} µs "
        f"(p90 {statistics.quantiles(timings, n=10)[-1]:.1f} µs) target < 1000 µs: {'met' if met else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
