"""BKT fit: learnloop beside pyBKT's C++ build, on the same generated data, in the same run.

    .venv/bin/python benchmarks/bench_bkt_vs_pybkt.py [--sizes 10000 100000 1000000] [--repeats 3]

Data: 10 skills, 20 attempts per student per skill, drawn from BKT with known
parameters (learnloop.sim.generate_bkt); 80/20 split by student. pyBKT 1.4.3
runs single-threaded with 5 restarts in its own environment
(benchmarks/.venv-peers, built on first use, see _peers_env.py); learnloop's
BKT fits with 5 restarts (the best after 5 EM iterations is carried on).
Both fit times include turning the event arrays into the model's own layout.
Each size is repeated on ``--repeats`` data sets drawn with different seeds.
Printed per size: median fit time and time ratio, the mean absolute error of
prior/learn/guess/slip against the truth, and the held-out AUC of one-step
predictions (and the AUC the true parameters reach), averaged over the data sets.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers_env import peer_python

from learnloop.sim import generate_bkt
from learnloop.tracing import BKT, Sequences, auc, predict_sequences

N_SKILLS, SEQ_LEN = 10, 20


def run_once(n_interactions: int, seed: int, python: Path, workdir: Path) -> dict[str, float]:
    n_students = n_interactions // (N_SKILLS * SEQ_LEN)
    data = generate_bkt(n_students, N_SKILLS, SEQ_LEN, seed=seed)
    train = data.student < int(0.8 * n_students)
    test = ~train
    y_test = data.correct[test]

    t = time.perf_counter()
    seqs = Sequences.from_events(data.skill[train], data.student[train], data.correct[train], n_skills=N_SKILLS)
    model = BKT(n_restarts=5, seed=seed).fit(seqs)
    ours_s = time.perf_counter() - t
    test_seqs = data.sequences(test)
    ours_pred = model.predict_sequences(test_seqs)
    true_pred = predict_sequences(data.true_params, test_seqs)

    path = workdir / f"bkt_{n_interactions}_{seed}.npz"
    out = workdir / f"pybkt_{n_interactions}_{seed}.npz"
    np.savez(
        path,
        n_skills=N_SKILLS,
        train_user=data.student[train],
        train_skill=data.skill[train],
        train_correct=data.correct[train],
        test_user=data.student[test],
        test_skill=data.skill[test],
        test_correct=y_test,
    )
    runner = str(Path(__file__).with_name("_peers_pybkt_run.py"))
    subprocess.run(
        [str(python), runner, str(path), str(out), "1"], check=True, env=dict(os.environ, OMP_NUM_THREADS="1")
    )
    with np.load(out) as z:
        peer_s, peer_params, peer_pred = float(z["times"][0]), z["params"], z["pred"]
    truth = data.true_params[:, :4]
    return {
        "ours_s": ours_s,
        "peer_s": peer_s,
        "ours_err": float(np.abs(model.params_[:, :4] - truth).mean()),
        "peer_err": float(np.abs(peer_params - truth).mean()),
        "ours_auc": auc(y_test, ours_pred),
        "peer_auc": auc(y_test, peer_pred),
        "true_auc": auc(y_test, true_pred),
    }


def run_size(n_interactions: int, repeats: int, python: Path, workdir: Path) -> dict[str, float]:
    """Median times and mean errors/AUCs over ``repeats`` data sets (different seeds)."""
    runs = [run_once(n_interactions, 1000 * n_interactions + r, python, workdir) for r in range(repeats)]
    row: dict[str, float] = {"n": n_interactions}
    for key in runs[0]:
        values = [run[key] for run in runs]
        row[key] = statistics.median(values) if key.endswith("_s") else statistics.fmean(values)
    row["ratio"] = statistics.median([run["peer_s"] / run["ours_s"] for run in runs])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    python = peer_python()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            rows.append(run_size(n, args.repeats, python, Path(tmp)))
    print()
    print(f"BKT fit, 10 skills x 20 attempts, 80/20 split by student, 5 restarts, {args.repeats} data sets per size")
    print("times and ratio: medians; errors and AUCs: means over the data sets")
    head = f"{'interactions':>12} | {'learnloop':>9} | {'pyBKT':>7} | {'ratio':>5} | {'abs err ll':>10} | {'abs err py':>10} | {'AUC ll':>6} | {'AUC py':>6} | {'AUC true':>8}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['n']:>12,} | {r['ours_s']:>8.3f}s | {r['peer_s']:>6.3f}s | {r['ratio']:>4.1f}x | "
            f"{r['ours_err']:>10.4f} | {r['peer_err']:>10.4f} | {r['ours_auc']:>6.3f} | {r['peer_auc']:>6.3f} | {r['true_auc']:>8.3f}"
        )
    print("ratio = pyBKT time / learnloop time (above 1: learnloop is faster)")


if __name__ == "__main__":
    main()
