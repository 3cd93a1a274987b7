"""The learnloop demo: a simulated cohort takes the sample course in each mode.

Run it with ``python -m learnloop.demo`` (or ``./scripts/demo``). Everything is
stored in an SQLite file, the embedded default store; the table printed at the
end reads:

- *learn*: the true learning gain of each learner (mean probability of
  success over the course, after minus before), per interaction, and the
  number of interactions until the engine judged the first chapter mastered
  (learn mode moves into chapter 2 only then);
- *review*: a week later, the gain per item of a review session (up to 20 items: it
  serves the items answered whose predicted recall fell below 0.9, and stops when none is left);
- *assess*: the error of the engine's proficiency estimate after an adaptive
  test, against the simulated truth.

The plot (``learning-curves.png``, with the ``plot`` extra; :func:`figure`) draws the
learn and review curves, each with the level before its session that its gain is
measured from, and the assessment's estimates against the truth.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from learnloop.engine import Engine
from learnloop.sim import SimClock, learner_for, run_session, sample_course, true_proficiency

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["figure", "main"]


#: the modes of the table whose gain per interaction the plot draws, with their colours
CURVE_COLOURS = {"learn": "tab:blue", "review": "tab:orange"}


def figure(curves: Mapping[str, np.ndarray], assess_true: np.ndarray, assess_est: np.ndarray) -> Figure:
    """The demo's figure: left, the mean learning curve of each mode of ``curves`` (learners x
    (steps + 1) true proficiencies, as the table's gain reads them) with its baseline, the mean
    proficiency before the session (dashed; the table's gain is the curve's rise above it, per
    interaction); right, the assessment's estimate against the truth, the diagonal its baseline."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.8))
    left, right = fig.subplots(1, 2)
    for name, curve in curves.items():
        mean = np.asarray(curve, dtype=np.float64).mean(axis=0)
        colour = CURVE_COLOURS.get(name)
        left.plot(np.arange(mean.size), mean, color=colour, label=f"{name} mode")
        left.plot([0, mean.size - 1], [mean[0], mean[0]], color=colour, linestyle="--", linewidth=1,
                  label=f"{name}: before the session")  # fmt: skip
    left.set_xlabel("interaction in the session")
    left.set_ylabel("true proficiency (mean P(correct))")
    left.set_title("Learning curves: gain above the level before the session")
    left.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    right.scatter(assess_true, assess_est, s=14, label="learners")
    right.plot([0, 1], [0, 1], color="grey", linewidth=1, label="estimate = truth")
    right.set_xlabel("true proficiency")
    right.set_ylabel("estimated after the adaptive test")
    right.set_title("Assessment")
    right.legend(fontsize="small")
    fig.tight_layout()
    return fig


def _plot(path: Path, curves: Mapping[str, np.ndarray], assess_true: np.ndarray, assess_est: np.ndarray) -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    figure(curves, assess_true, assess_est).savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m learnloop.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("demo-output"), help="folder for the database and the plot")
    parser.add_argument("--learners", type=int, default=30, help="size of the simulated cohort")
    parser.add_argument("--steps", type=int, default=80, help="interactions per learn session")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    db = args.out / "learnloop-demo.db"
    for leftover in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        leftover.unlink(missing_ok=True)
    clock = SimClock()
    engine = Engine.open(db, seed=args.seed, clock=clock)
    items, catalog = sample_course()
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    cid = catalog.catalog_id
    index = engine.catalog_index(cid)
    all_items = np.ones(index.n_items, dtype=bool)

    learn_curves, review_curves = [], []
    review_count: list[int] = []
    learn_gain, review_gain, to_mastery, assess_true, assess_est = [], [], [], [], []
    learner_options = {"prerequisite_gating": 1.0, "mastery_margin": 0.5}
    with tqdm(total=args.learners, desc="simulated learners", unit="learner", file=sys.stderr) as bar:
        for k in range(args.learners):
            learner = learner_for(index, seed=args.seed * 1000 + k, **learner_options)
            user = f"learner-{k:03d}"
            trace = run_session(
                engine, catalog_id=cid, user_id=user, learner=learner, mode="learn", steps=args.steps, clock=clock
            )
            learn_curves.append(trace.true_proficiency)
            learn_gain.append(trace.gain / args.steps)
            # learn mode enters chapter 2 only once chapter 1 is mastered
            steps_to = next((i for i, t in enumerate(trace.topic_ids) if t.startswith("ch2")), None)
            to_mastery.append(np.nan if steps_to is None else steps_to)
            clock.advance(7 * 86400)
            trace = run_session(
                engine, catalog_id=cid, user_id=user, learner=learner, mode="review", steps=20, clock=clock
            )
            # review serves only what is due, and stops when nothing is: the curve stays level after
            reviewed = len(trace.item_ids)
            curve = trace.true_proficiency
            review_curves.append(curve + [curve[-1]] * (21 - len(curve)))
            review_gain.append(trace.gain / reviewed if reviewed else 0.0)
            review_count.append(reviewed)

            tester = learner_for(index, seed=args.seed * 7919 + k)
            trace = run_session(
                engine,
                catalog_id=cid,
                user_id=f"candidate-{k:03d}",
                learner=tester,
                mode="assess",
                steps=30,
                clock=clock,
            )
            assess_true.append(true_proficiency(tester, index, all_items, clock()))
            assess_est.append(trace.estimated_proficiency[-1])
            clock.advance(3600)
            bar.update()

    error = np.abs(np.asarray(assess_est, dtype=float) - np.asarray(assess_true))
    reached = np.asarray(to_mastery, dtype=float)
    rows = [
        (
            "learn",
            f"{np.mean(learn_gain) * 100:.2f} pp",
            f"median {np.nanmedian(reached):.0f} ({np.isfinite(reached).mean():.0%} of learners)"
            if np.isfinite(reached).any()
            else "not reached",
            "-",
        ),
        ("review", f"{np.mean(review_gain) * 100:.2f} pp ({np.mean(review_count):.1f} items due)", "-", "-"),
        ("assess", "-", "-", f"{error.mean():.3f} mean, {np.quantile(error, 0.9):.3f} p90"),
    ]
    header = ("mode", "gain per interaction", "interactions to master chapter 1", "proficiency error (30 items)")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(4)]
    print()
    print(
        f"learnloop demo: {args.learners} simulated learners on '{catalog.display_name}' "
        f"({index.n_items} items, {index.n_topics} topics)"
    )
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
    plot = args.out / "learning-curves.png"
    curves = {"learn": np.asarray(learn_curves), "review": np.asarray(review_curves)}
    drawn = _plot(plot, curves, np.asarray(assess_true), np.asarray(assess_est, dtype=float))
    print()
    print(f"database: {db.resolve()}")
    print(f"plot:     {plot.resolve()}" if drawn else "plot:     skipped (pip install 'learnloop[plot]')")
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
