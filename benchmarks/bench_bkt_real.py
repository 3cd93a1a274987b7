"""Per-skill BKT on public learning logs: learnloop beside pyBKT's C++ build, same data, same run.

    .venv/bin/python benchmarks/bench_bkt_real.py DATA_DIR [--splits assist2009 assist2015 statics builder]
                                                           [--repeats 5] [--max-guess G]

DATA_DIR holds the benchmark files (nothing is downloaded; searched recursively):
``assist2009_updated_{train,test}.csv``, ``assist2015_{train,test}.csv``,
``STATICS_{train,test}.csv`` with ``STATICS_qid_sid_sname`` (the DKVMN
repository's ``data/``) and ``builder_{train,test}.csv`` (the DKT repository's
``data/assistments``). Three lines per student: the number of answers, the ids,
the 0/1 answers. For ASSISTments the ids are skills; STATICS' ids are its 1,223
questions, mapped to their 98 skills by ``STATICS_qid_sid_sname`` (BKT runs per skill).

Protocol, per split: both models are fitted on the train file; every response
of the test file is predicted from the same student's earlier test responses on
that skill (one step ahead); AUC and RMSE over all test responses. A test
response on a skill absent from the train file gets the train file's mean for
both models (the count is printed). learnloop: ``BKT(n_restarts=5, seed=0)``
with its defaults; pyBKT 1.4.3: ``Model(num_fits=5, parallel=False)``, driven by
``_peers_pybkt_run.py`` in its own environment (see ``_peers_env.py``).

Each model runs in its own process, which fits ``--repeats`` times: fit seconds
are the median (learnloop's include building its layout from the event arrays;
pyBKT's include its own data preparation from a DataFrame). Memory: the
process's peak RSS (``ru_maxrss``: interpreter, libraries and data included)
and the fit's part of it (peak RSS minus the RSS just before the first fit).
``ru_maxrss`` carries over from the parent process, so the files are read in
a child process and the parent, which starts both workers, holds only arrays.
BLAS threads are pinned to 1.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FILES = {
    "assist2009": ("assist2009_updated_train.csv", "assist2009_updated_test.csv"),
    "assist2015": ("assist2015_train.csv", "assist2015_test.csv"),
    "statics": ("STATICS_train.csv", "STATICS_test.csv"),
    "builder": ("builder_train.csv", "builder_test.csv"),
}


def find(root: Path, name: str) -> Path:
    found = sorted(root.rglob(name))
    if not found:
        sys.exit(f"{name} not found under {root}")
    return found[0]


def read_three_line(path: Path) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(student, id, correct) of every answer, students numbered by their order in the file."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    lines = [line for line in lines if line]
    student: list[int] = []
    ids: list[str] = []
    correct: list[int] = []
    for s, at in enumerate(range(0, len(lines) - 2, 3)):
        q = [t for t in lines[at + 1].split(",") if t.strip()]
        a = [t for t in lines[at + 2].split(",") if t.strip()]
        if len(q) != len(a):
            sys.exit(f"{path}:{at + 2}: {len(q)} ids but {len(a)} answers")
        student += [s] * len(q)
        ids += [t.strip() for t in q]
        correct += [int(float(t)) for t in a]
    return np.array(student), ids, np.array(correct)


def load(root: Path, split: str) -> dict[str, np.ndarray]:
    """Train and test answers with dense skill indices (skills of the train file first)."""
    to_skill: dict[str, str] = {}
    if split == "statics":
        rows = find(root, "STATICS_qid_sid_sname").read_text().splitlines()[1:]
        to_skill = {r.split("\t")[0]: r.split("\t")[1] for r in rows if r.strip()}
    train_file, test_file = (find(root, f) for f in FILES[split])
    tr_student, tr_ids, tr_correct = read_three_line(train_file)
    te_student, te_ids, te_correct = read_three_line(test_file)
    tr_sk = [to_skill.get(i, i) for i in tr_ids]
    te_sk = [to_skill.get(i, i) for i in te_ids]
    index: dict[str, int] = {}
    for s in tr_sk:
        index.setdefault(s, len(index))
    n_train_skills = len(index)
    for s in te_sk:
        index.setdefault(s, len(index))
    return {
        "train_user": tr_student,
        "train_skill": np.array([index[s] for s in tr_sk]),
        "train_correct": tr_correct,
        "test_user": te_student,
        "test_skill": np.array([index[s] for s in te_sk]),
        "test_correct": te_correct,
        "n_skills": np.array(n_train_skills),
    }


def _rss_now_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# -- worker: learnloop in its own process ---------------------------------------------------
def learnloop_worker(data: Path, out: Path, repeats: int, max_guess: float | None) -> None:
    from learnloop.tracing import BKT, Sequences, predict_sequences

    with np.load(data) as z:
        d = {k: z[k] for k in z.files}
    k = max(int(d["n_skills"]), int(d["test_skill"].max(initial=-1)) + 1)  # test-only skills: unfitted rows
    options = {} if max_guess is None else {"max_guess": max_guess, "max_slip": max_guess}
    rss_before = _rss_now_mb()
    times = []
    model = None
    for _ in range(repeats):
        t = time.perf_counter()
        seqs = Sequences.from_events(d["train_skill"], d["train_user"], d["train_correct"], n_skills=k)
        model = BKT(n_restarts=5, seed=0, **options).fit(seqs)
        times.append(time.perf_counter() - t)
    assert model is not None
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    test = Sequences.from_events(d["test_skill"], d["test_user"], d["test_correct"], n_skills=k)
    pred = predict_sequences(model.params_, test)
    np.savez(out, times=np.array(times), pred=pred, rss_before=rss_before, rss_peak=rss_peak)


def run_learnloop(path: Path, workdir: Path, repeats: int, max_guess: float | None) -> dict[str, object]:
    out = workdir / "learnloop_out.npz"
    extra = [] if max_guess is None else ["--max-guess", str(max_guess)]
    subprocess.run([sys.executable, __file__, "--worker", str(path), str(out), str(repeats), *extra], check=True)
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def run_pybkt(path: Path, workdir: Path, repeats: int, python: Path) -> dict[str, object]:
    out = workdir / "pybkt_out.npz"
    runner = Path(__file__).with_name("_peers_pybkt_run.py")
    subprocess.run([str(python), str(runner), str(path), str(out), str(repeats)], check=True)
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def scores(row: dict) -> None:
    """AUC and RMSE of both models' predictions, into ``row`` (after every worker ran: importing learnloop
    here would raise the workers' starting RSS)."""
    from learnloop.tracing import auc

    y, p_ours, p_peer = row.pop("predictions")
    row["auc_ll"], row["rmse_ll"] = auc(y, p_ours), float(np.sqrt(np.mean((y - p_ours) ** 2)))
    row["auc_py"], row["rmse_py"] = auc(y, p_peer), float(np.sqrt(np.mean((y - p_peer) ** 2)))


def run_split(root: Path, split: str, workdir: Path, repeats: int, python: Path, max_guess: float | None) -> dict:
    path = workdir / f"{split}.npz"
    # the files are read in a child process: a worker's peak RSS starts at its parent's (ru_maxrss survives
    # fork and exec), so the parent holds only the arrays
    subprocess.run([sys.executable, __file__, "--prepare", str(root), split, str(path)], check=True)
    with np.load(path) as z:
        d = {name: z[name] for name in z.files}
    k = int(d["n_skills"])
    seen = d["test_skill"] < k
    ours = run_learnloop(path, workdir, repeats, max_guess)
    # pyBKT predicts only skills it was fitted on: give it the test answers on train skills
    np.savez(
        path,
        **{**d, "test_user": d["test_user"][seen], "test_skill": d["test_skill"][seen],
           "test_correct": d["test_correct"][seen]},
    )  # fmt: skip
    peer = run_pybkt(path, workdir, repeats, python)
    y = d["test_correct"].astype(np.float64)
    mean = float(d["train_correct"].mean())
    p_ours = np.where(seen, np.asarray(ours["pred"]), mean)
    p_peer = np.full(y.size, mean)
    p_peer[seen] = np.asarray(peer["pred"])
    row: dict = {"split": split, "n_train": int(d["train_correct"].size), "n_test": int(y.size),
                 "unseen": int((~seen).sum()), "skills": k, "predictions": (y, p_ours, p_peer)}  # fmt: skip
    t_ll, t_py = np.asarray(ours["times"]), np.asarray(peer["times"])
    row["fit_ll"], row["fit_py"] = statistics.median(t_ll.tolist()), statistics.median(t_py.tolist())
    row["rss_ll"], row["rss_py"] = float(ours["rss_peak"]), float(peer["rss_peak"])
    row["fitmem_ll"] = float(ours["rss_peak"]) - float(ours["rss_before"])
    row["fitmem_py"] = float(peer["rss_peak"]) - float(peer["rss_before"])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path, nargs="?")
    parser.add_argument("--splits", nargs="+", default=list(FILES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-guess", type=float, default=None, help="learnloop's guess/slip bound (default: its own)")
    parser.add_argument("--worker", nargs=3, metavar=("DATA", "OUT", "REPEATS"), help=argparse.SUPPRESS)
    parser.add_argument("--prepare", nargs=3, metavar=("ROOT", "SPLIT", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:
        np.savez(args.prepare[2], **load(Path(args.prepare[0]), args.prepare[1]))
        return
    if args.worker:
        learnloop_worker(Path(args.worker[0]), Path(args.worker[1]), int(args.worker[2]), args.max_guess)
        return
    if args.data_dir is None:
        parser.error("DATA_DIR is required")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _peers_env import peer_python

    python = peer_python()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for split in args.splits:
            rows.append(run_split(args.data_dir, split, Path(tmp), args.repeats, python, args.max_guess))
            r = rows[-1]
            print(f"{split}: {r['n_train']:,} train / {r['n_test']:,} test answers, {r['skills']} skills, "
                  f"{r['unseen']} test answers on skills unseen in training", flush=True)  # fmt: skip
    for r in rows:
        scores(r)
    print()
    print(f"per-skill BKT, 5 restarts, fit on train, one-step-ahead on test; fit time: median of {args.repeats}")
    head = (
        f"{'split':<10} | {'AUC ll':>6} | {'AUC py':>6} | {'RMSE ll':>7} | {'RMSE py':>7} | {'fit ll':>7} | "
        f"{'fit py':>7} | {'speed':>5} | {'peak ll':>7} | {'peak py':>7} | {'fit mem ll':>10} | {'fit mem py':>10}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['split']:<10} | {r['auc_ll']:>6.4f} | {r['auc_py']:>6.4f} | {r['rmse_ll']:>7.4f} | "
            f"{r['rmse_py']:>7.4f} | {r['fit_ll']:>6.3f}s | {r['fit_py']:>6.3f}s | {r['fit_py'] / r['fit_ll']:>4.1f}x | "
            f"{r['rss_ll']:>5.0f}MB | {r['rss_py']:>5.0f}MB | {r['fitmem_ll']:>8.1f}MB | {r['fitmem_py']:>8.1f}MB"
        )
    print(
        "speed = pyBKT fit time / learnloop fit time; peak = process peak RSS; fit mem = peak RSS - RSS before the fit"
    )


if __name__ == "__main__":
    main()
