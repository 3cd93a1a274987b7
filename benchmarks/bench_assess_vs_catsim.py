"""Adaptive assessment beside catsim on the same item bank and the same examinees.

Both run maximum-information computerized adaptive tests of 20 items on a
Rasch bank (a = 1, c = 0) of 10,000 items with b ~ N(0, 1), for examinees with
theta ~ N(0, 1); both draw each response from the same per-examinee seeded
stream. learnloop runs full adaptive-engine sessions (randomesque selection
among the 3 best items, online Bayesian ability); catsim runs its
``MaxInfoSelector`` and ``NumericalSearchEstimator``. Reported: ability RMSE
after 20 items, item selection time per item, and their ratios.

catsim is installed in its own virtual environment (benchmarks/.venv-catsim),
never as a dependency of learnloop. Run: ``.venv/bin/python benchmarks/bench_assess_vs_catsim.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PEER_VENV = HERE / ".venv-catsim"

CATSIM_RUNNER = r"""
import json, sys, time
import numpy as np
from catsim.item_bank import ItemBank
from catsim.selection import MaxInfoSelector
from catsim.estimation import NumericalSearchEstimator
data = np.load(sys.argv[1])
b, thetas, seed, length = data["b"], data["theta"], int(data["seed"]), int(data["length"])
bank = ItemBank(np.column_stack([np.ones_like(b), b, np.zeros_like(b), np.ones_like(b)]))
selector, estimator = MaxInfoSelector(), NumericalSearchEstimator()
estimates, select_s, estimate_s = [], 0.0, 0.0
for k, theta in enumerate(thetas):
    rng = np.random.default_rng((seed, k))
    administered, responses, est = [], [], 0.0
    for _ in range(length):
        t = time.perf_counter()
        item = selector.select(item_bank=bank, administered_items=administered, est_theta=est)
        select_s += time.perf_counter() - t
        p = 1.0 / (1.0 + np.exp(-(theta - b[item])))
        administered.append(int(item))
        responses.append(bool(rng.random() < p))
        t = time.perf_counter()
        est = float(estimator.estimate(item_bank=bank, administered_items=administered,
                                       response_vector=responses, est_theta=est))
        estimate_s += time.perf_counter() - t
    estimates.append(est)
n = len(thetas) * length
print(json.dumps({"estimates": estimates, "select_ms": 1000 * select_s / n, "estimate_ms": 1000 * estimate_s / n}))
"""


def ensure_catsim() -> Path:
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "catsim==0.21.*"], check=True)
    return python


def run_learnloop(b: np.ndarray, thetas: np.ndarray, seed: int, length: int, options: dict) -> dict:
    from learnloop import Engine
    from learnloop.events import format_timestamp
    from learnloop.recommend import AssessPolicy
    from learnloop.sim import SimClock

    select_time = [0.0]

    class TimedAssess(AssessPolicy):
        def select(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            try:
                return super().select(*args, **kwargs)
            finally:
                select_time[0] += time.perf_counter() - t

    clock = SimClock()
    engine = Engine(seed=seed, clock=clock, policies={"assess": TimedAssess()}, learner_options=options)
    d = 1.0 / (1.0 + np.exp(-b))
    engine.upsert_items(
        [
            {"item_id": f"i{k}", "display_name": f"item {k}", "scorable": True, "difficulty": float(v)}
            for k, v in enumerate(d)
        ]
    )
    engine.upsert_catalog(
        {
            "catalog_id": "bank",
            "display_name": "Bank",
            "topics": [
                {"topic_id": "all", "display_name": "All", "item_refs": [{"item_id": f"i{k}"} for k in range(b.size)]}
            ],
        }
    )
    position = {f"i{k}": k for k in range(b.size)}
    estimates, steps = [], []
    for k, theta in enumerate(thetas):
        rng = np.random.default_rng((seed, k))
        user = f"examinee-{k}"
        context = engine.create_session(
            {"user_id": user, "catalog_id": "bank", "mode": {"type": "assess"}, "filter": {}}
        )
        events: list[dict] = []
        for _ in range(length + 1):
            t = time.perf_counter()
            rec = engine.adaptive_step(context, events).recommendation
            steps.append(time.perf_counter() - t)
            p = 1.0 / (1.0 + np.exp(-(theta - b[position[rec.item_id]])))
            events = [
                {
                    "type": "attempt",
                    "timestamp": format_timestamp(clock.advance(30)),
                    "recommendation_context": rec.recommendation_context,
                    "score": float(rng.random() < p),
                }
            ]
        estimates.append(engine.ability(user, "bank", "all")[0])
    n = len(thetas) * (length + 1)
    return {"estimates": estimates, "select_ms": 1000 * select_time[0] / n, "step_ms": 1000 * float(np.median(steps))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--examinees", type=int, default=200)
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    b = rng.normal(0.0, 1.0, args.items)
    thetas = rng.normal(0.0, 1.0, args.examinees)
    python = ensure_catsim()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "bank.npz"
        np.savez(data, b=b, theta=thetas, seed=args.seed, length=args.length)
        script = Path(tmp) / "run_catsim.py"
        script.write_text(CATSIM_RUNNER)
        out = subprocess.run([str(python), str(script), str(data)], check=True, capture_output=True, text=True)
    peer = json.loads(out.stdout)
    ours = run_learnloop(b, thetas, args.seed, args.length, {})

    def rmse(est: list[float]) -> float:
        return float(np.sqrt(np.mean((np.asarray(est) - thetas) ** 2)))

    print(f"Rasch bank of {args.items} items, {args.examinees} examinees, {args.length} items each")
    print(f"{'':38s} {'RMSE':>7s} {'select ms/item':>15s}")
    print(
        f"{'catsim 0.21 MaxInfo + NumericalSearch':38s} {rmse(peer['estimates']):7.3f} {peer['select_ms']:15.3f}"
        f"   (estimation {peer['estimate_ms']:.3f} ms/item)"
    )
    print(
        f"{'learnloop assess (engine defaults)':38s} {rmse(ours['estimates']):7.3f} {ours['select_ms']:15.3f}"
        f"   (whole adaptive-engine step p50 {ours['step_ms']:.3f} ms)"
    )
    print(
        f"selection speed-up: {peer['select_ms'] / ours['select_ms']:.1f}x; "
        f"whole step vs catsim select + estimate: {(peer['select_ms'] + peer['estimate_ms']) / ours['step_ms']:.1f}x; "
        f"RMSE ratio (learnloop / catsim): {rmse(ours['estimates']) / rmse(peer['estimates']):.3f}"
    )


if __name__ == "__main__":
    main()
