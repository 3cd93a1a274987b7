"""Learn mode beside a random-order and a fixed-order baseline, on simulated learners.

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

Run: ``.venv/bin/python benchmarks/bench_learn_vs_baselines.py`` (``--learners``, ``--steps``).
"""

from __future__ import annotations

import argparse

import numpy as np
from tqdm import tqdm

from learnloop import Engine
from learnloop.recommend import LearnPolicy
from learnloop.recommend.baselines import FixedOrderPolicy, RandomPolicy
from learnloop.sim import SimClock, learner_for, run_session, sample_course

WORLDS = {
    "prerequisites gate learning (gating 2, margin 1)": {"prerequisite_gating": 2.0, "mastery_margin": 1.0},
    "prerequisites gate learning (gating 1, margin 0.5)": {"prerequisite_gating": 1.0, "mastery_margin": 0.5},
    "no gating (order does not matter)": {},
}
POLICIES = {"learn": LearnPolicy(), "fixed order": FixedOrderPolicy(), "random order": RandomPolicy()}


def gains(world: dict, policy: object, learners: int, steps: int, seed: int, bar: tqdm) -> np.ndarray:
    items, catalog = sample_course()
    clock = SimClock()
    engine = Engine(seed=seed, clock=clock, policies={"learn": policy})
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    index = engine.catalog_index(catalog.catalog_id)
    out = []
    for k in range(learners):
        learner = learner_for(index, seed=seed * 10_000 + k, **world)
        trace = run_session(
            engine,
            catalog_id=catalog.catalog_id,
            user_id=f"learner-{k}",
            learner=learner,
            mode="learn",
            steps=steps,
            clock=clock,
        )
        out.append(100.0 * trace.gain / steps)
        bar.update()
    return np.asarray(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=60)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    total = len(WORLDS) * len(POLICIES) * args.learners
    results: dict[str, dict[str, np.ndarray]] = {}
    with tqdm(total=total, desc="simulated sessions", unit="learner") as bar:
        for world_name, world in WORLDS.items():
            results[world_name] = {
                name: gains(world, policy, args.learners, args.steps, args.seed, bar)
                for name, policy in POLICIES.items()
            }
    print(
        f"\nlearning gain per interaction (percentage points of true mean P(correct)); "
        f"{args.learners} learners x {args.steps} interactions"
    )
    for world_name, by_policy in results.items():
        print(f"\n{world_name}")
        learn = by_policy["learn"]
        for name, values in by_policy.items():
            line = f"  {name:13s} {values.mean():.4f} ± {values.std(ddof=1) / np.sqrt(values.size):.4f}"
            if name != "learn":
                diff = learn - values
                line += (
                    f"   learn - {name}: {diff.mean():+.4f} ± {diff.std(ddof=1) / np.sqrt(diff.size):.4f}"
                    f" (ratio {learn.mean() / values.mean():.2f})"
                )
            print(line)


if __name__ == "__main__":
    main()
