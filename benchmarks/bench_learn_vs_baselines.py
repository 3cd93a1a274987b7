"""Learn mode beside a random-order and a fixed-order baseline, on simulated learners, with fitted settings.

Every policy teaches the same simulated learners (same seeds) the sample
course (12 topics of 8 exercises and a theory item, each topic a prerequisite
of the next) for the same number of interactions. The figure of merit is the
learning gain per interaction: the learner's true mean probability of success
over the whole course after the session minus before it, divided by the
number of interactions, in percentage points; the paired difference to learn
mode is given with its standard error.

Three simulated worlds are reported. In the first two, prerequisites gate
learning (knowledge space theory: practice on a topic teaches less while its
prerequisites are not mastered, a topic counting as mastered ``margin`` logits
above the mean difficulty of its exercises). In the third they do not: then
the order in which topics are practised does not matter, only how attempts are
spread, and spreading them evenly (what both baselines do) is close to
optimal for this simulator's diminishing returns.

The engine fits itself on each world's own log first, as a service would on
its learners' history: other simulated learners of the world (their own
seeds) answer the course in a random order (the random baseline as the learn
policy); each policy's engine ingests that log (its scored attempts, with
their topics and times, through ``Engine.upsert_events``) and runs
:meth:`learnloop.Engine.fit` on it, which chooses the learner model's settings
on folds of the log's learners (the prerequisite gating included), calibrates
the items, fits what the folds keep (per-topic rates, echo) and stores it
behind its guard; the evaluated learners then meet that engine. The first
policy's engine runs the search; the others put its recipe to their own
guard (``Engine.fit(candidate=...)``: the same log, so the same recipe,
refitted and stored in each). The log's times are the simulation clock's, so
the forgetting term is not tried (``forgetting=False``). Learn mode reads the
fitted gating: below ``LearnPolicy.spread_below`` it spreads practice across
the open topics, else it keeps its progression. ``--unfitted`` runs the
engine's defaults instead (no fit; learn mode's progression).

Run: ``.venv/bin/python benchmarks/bench_learn_vs_baselines.py`` (``--learners``, ``--steps``,
``--log-learners``; ``--write-docs`` puts the table into ``docs/performance.md`` between its
``bench_learn_vs_baselines`` markers).
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np
from tqdm import tqdm

from learnloop import Engine
from learnloop.engine import FitRecipe, FitResult
from learnloop.events import format_timestamp
from learnloop.recommend import LearnPolicy
from learnloop.recommend.baselines import FixedOrderPolicy, RandomPolicy
from learnloop.sim import SimClock, learner_for, run_session, sample_course

DOCS = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
WORLDS = {
    "prerequisites gate learning (gating 2, margin 1)": {"prerequisite_gating": 2.0, "mastery_margin": 1.0},
    "prerequisites gate learning (gating 1, margin 0.5)": {"prerequisite_gating": 1.0, "mastery_margin": 0.5},
    "no gating (order does not matter)": {},
}
POLICIES = {"learn": LearnPolicy(), "fixed order": FixedOrderPolicy(), "random order": RandomPolicy()}


def _engine(policy: Any, seed: int, clock: SimClock) -> tuple[Engine, str]:
    items, catalog = sample_course()
    engine = Engine(seed=seed, clock=clock, policies={"learn": policy})
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    return engine, catalog.catalog_id


def world_log(world: dict, learners: int, steps: int, seed: int, bar: tqdm) -> dict[str, list[dict[str, Any]]]:
    """The scored attempts of the world's log learners answering in a random order, by learner, as
    ``Engine.upsert_events`` takes them."""
    clock = SimClock()
    engine, catalog_id = _engine(RandomPolicy(), seed, clock)
    index = engine.catalog_index(catalog_id)
    for k in range(learners):
        learner = learner_for(index, seed=seed * 10_000 + 5_000 + k, **world)  # not the evaluated learners
        run_session(
            engine, catalog_id=catalog_id, user_id=f"log-{k}", learner=learner, mode="learn", steps=steps, clock=clock
        )
        bar.update()
    columns = engine.event_log(catalog_id)
    out: dict[str, list[dict[str, Any]]] = {}
    for user, item, topic, score, at in zip(*(columns[c] for c in ("user_id", "item_id", "topic_id", "score", "timestamp")), strict=True):  # fmt: skip
        out.setdefault(user, []).append(
            {
                "type": "attempt",
                "item_id": item,
                "catalog_id": catalog_id,
                "topic_id": topic,
                "score": score,
                "timestamp": format_timestamp(datetime.fromtimestamp(at, UTC)),
            }  # fmt: skip
        )
    return out


def gains(
    world: dict,
    policy: Any,
    log: dict[str, list[dict[str, Any]]] | None,
    candidate: FitRecipe | None,
    learners: int,
    steps: int,
    seed: int,
    bar: tqdm,
) -> tuple[np.ndarray, FitResult | None]:
    """Each evaluated learner's gain per interaction under ``policy``, on an engine that ingested ``log`` and
    ran ``Engine.fit`` on it (``candidate``: the recipe put to its guard instead of a search; no log: the
    engine's defaults)."""
    clock = SimClock()
    engine, catalog_id = _engine(policy, seed, clock)
    result = None
    if log is not None:
        for user, events in log.items():
            engine.upsert_events(user, events)
        result = engine.fit(catalog_id, progress=False, forgetting=False, candidate=candidate)
    index = engine.catalog_index(catalog_id)
    out = []
    for k in range(learners):
        learner = learner_for(index, seed=seed * 10_000 + k, **world)
        trace = run_session(
            engine,
            catalog_id=catalog_id,
            user_id=f"learner-{k}",
            learner=learner,
            mode="learn",
            steps=steps,
            clock=clock,
        )
        out.append(100.0 * trace.gain / steps)
        bar.update()
    return np.asarray(out), result


def _se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / np.sqrt(values.size))


def table(results: dict[str, dict[str, np.ndarray]], fitted: dict[str, FitResult | None]) -> list[str]:
    rows = [
        "| simulated world | fitted gating | learn | fixed order | random order | learn − fixed order | learn − random order |",
        "|---|---|---|---|---|---|---|",
    ]
    for world_name, by_policy in results.items():
        learn = by_policy["learn"]
        result = fitted[world_name]
        options = None if result is None or result.kept != "new" or result.chosen is None else result.chosen.options
        gating = (
            "not fitted"
            if options is None or options.prerequisite_gating is None
            else f"{options.prerequisite_gating:g}"
        )
        cells = [f"{v.mean():.3f} ± {_se(v):.3f}" for v in by_policy.values()]
        diffs = [
            f"{(learn - by_policy[n]).mean():+.3f} ± {_se(learn - by_policy[n]):.3f}"
            for n in ("fixed order", "random order")
        ]
        rows.append(f"| {world_name} | {gating} | " + " | ".join(cells + diffs).replace("-", "−") + " |")
    return rows


def replace_block(path: Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in ``path`` with ``body``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{path}: markers {begin} ... {end} not found")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{body}\n{end}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=60)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--log-learners", type=int, default=40, help="learners of each world's log to fit on")
    parser.add_argument("--unfitted", action="store_true", help="the engine's default settings (no fit)")
    parser.add_argument("--write-docs", action="store_true", help="write the table into the docs file's markers")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs file for --write-docs")
    args = parser.parse_args()
    started = time.perf_counter()
    logs: dict[str, dict[str, list[dict[str, Any]]] | None] = {name: None for name in WORLDS}
    if not args.unfitted:
        with tqdm(total=len(WORLDS) * args.log_learners, desc="simulated logs to fit on", unit="learner") as bar:
            for world_name, world in WORLDS.items():
                logs[world_name] = world_log(world, args.log_learners, args.steps, args.seed, bar)
    total = len(WORLDS) * len(POLICIES) * args.learners
    results: dict[str, dict[str, np.ndarray]] = {}
    fitted: dict[str, FitResult | None] = {}
    fits: dict[str, list[FitResult]] = {}
    with tqdm(total=total, desc="Engine.fit, then simulated sessions", unit="learner") as bar:
        for world_name, world in WORLDS.items():
            results[world_name] = {}
            fitted[world_name] = None
            fits[world_name] = []
            for name, policy in POLICIES.items():
                first = fitted[world_name]
                candidate = None if first is None else first.chosen
                results[world_name][name], result = gains(
                    world, policy, logs[world_name], candidate, args.learners, args.steps, args.seed, bar
                )
                if result is not None:
                    fits[world_name].append(result)
                    fitted[world_name] = fitted[world_name] or result
    print(
        f"\nlearning gain per interaction (percentage points of true mean P(correct)); "
        f"{args.learners} learners x {args.steps} interactions"
    )
    for world_name, by_policy in results.items():
        result = fitted.get(world_name)
        if result is None:
            print(f"\n{world_name}: engine defaults (not fitted)")
        else:
            print(f"\n{world_name}: Engine.fit kept {[r.kept for r in fits[world_name]]} "
                  f"(held-out log loss {result.old_log_loss:.4f} -> {result.new_log_loss:.4f}, {result.seconds:.0f} s); "
                  f"chose {result.chosen.describe() if result.chosen else None}")  # fmt: skip
        learn = by_policy["learn"]
        for name, values in by_policy.items():
            line = f"  {name:13s} {values.mean():.4f} ± {_se(values):.4f}"
            if name != "learn":
                diff = learn - values
                line += f"   learn - {name}: {diff.mean():+.4f} ± {_se(diff):.4f} (ratio {learn.mean() / values.mean():.2f})"
            print(line)
    rows = table(results, fitted)
    print("\n" + "\n".join(rows))
    print(f"\n{time.perf_counter() - started:.0f} s")
    if args.write_docs:
        replace_block(args.docs, "bench_learn_vs_baselines", "\n".join(rows))


if __name__ == "__main__":
    main()
