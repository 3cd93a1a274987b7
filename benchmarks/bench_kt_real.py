"""Knowledge tracing on public learning logs: learnloop's models beside baselines, pyBKT and published figures.

    .venv/bin/python benchmarks/bench_kt_real.py DATA_DIR [--splits assist2009 assist2015 statics builder]
                                                          [--no-pybkt] [--folds 3]

DATA_DIR holds the benchmark files (nothing is downloaded; searched recursively):
``assist2009_updated_{train,test}.csv``, ``assist2015_{train,test}.csv``,
``STATICS_{train,test}.csv`` with ``STATICS_qid_sid_sname`` (the DKVMN
repository's ``data/``, https://github.com/jennyzhang0215/DKVMN) and
``builder_{train,test}.csv`` (the DKT repository's ``data/assistments``,
https://github.com/chrispiech/DeepKnowledgeTracing).

Protocol, per split: every model is fitted on the train file only; the engine's
settings, whether its items are then refined to its own predictions
(``EngineModel(refine=...)``) and whether it learns at per-topic rates
(``EngineModel(topic_rates=True)``) and whether its predictions carry the answer echo
(``EngineModel(echo=True)``) are chosen by :func:`learnloop.evaluate.fit_options`
on 3 folds of the train file's learners; then every response of the test file is predicted once,
from the same learner's earlier test responses only (the next-response protocol of
:mod:`learnloop.evaluate`), and scored. The test file is read once per figure.
learnloop's per-skill BKT takes the guess/slip bound (0.3, 0.5 or none) that
``BKTModel.chosen`` finds best on 3 folds of the train file's learners.
STATICS is modelled with its 1,223 questions as items and their 98 skills as
topics (per-skill BKT and pyBKT on the skills); the other files' ids are skills.
Each model runs in its own process: fit and replay seconds are wall-clock, peak
memory is the process's peak RSS (interpreter and libraries included, ~60 MB
for learnloop's, ~150 MB for pyBKT's with pandas). pyBKT 1.4.3 (C++ build, 5
restarts, single thread) runs in its own environment (see ``_peers_env.py``).
BLAS threads are pinned to 1.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

#: test AUC published on the same DKVMN splits (Zhang et al., WWW 2017, table 3)
PUBLISHED = {
    "assist2009": {"DKT": 0.805, "DKVMN": 0.816},
    "assist2015": {"DKT": 0.725, "DKVMN": 0.727},
    "statics": {"DKT": 0.802, "DKVMN": 0.828},
}
FILES = {
    "assist2009": ("assist2009_updated_train.csv", "assist2009_updated_test.csv"),
    "assist2015": ("assist2015_train.csv", "assist2015_test.csv"),
    "statics": ("STATICS_train.csv", "STATICS_test.csv"),
    "builder": ("builder_train.csv", "builder_test.csv"),
}
MODELS = ("global mean", "per-skill mean", "per-item mean", "BKT per skill", "engine (defaults)", "engine (fitted)")


def find(root: Path, name: str) -> Path:
    found = sorted(root.rglob(name))
    if not found:
        sys.exit(f"{name} not found under {root}")
    return found[0]


def load(root: Path, split: str) -> tuple[Any, Any]:
    from learnloop.datasets import align, read_item_skills, read_three_line

    skills = read_item_skills(find(root, "STATICS_qid_sid_sname")) if split == "statics" else None
    train_file, test_file = (find(root, f) for f in FILES[split])
    return align(read_three_line(train_file, item_skills=skills), read_three_line(test_file, item_skills=skills))


# -- worker: one model, one split, in its own process ------------------------------------------
def worker(root: Path, split: str, model_name: str, options: str, out: Path) -> None:
    from learnloop import evaluate as ev

    train, test = load(root, split)
    model: Any = {
        "global mean": ev.GlobalMean,
        "per-skill mean": ev.SkillMean,
        "per-item mean": ev.ItemMean,
        "BKT per skill": lambda: ev.BKTModel(n_restarts=5, seed=0),
        "engine (defaults)": lambda: ev.EngineModel(),
        "engine (fitted)": lambda: ev.EngineModel(
            json.loads(options)["options"],
            refine=json.loads(options)["refine"],
            topic_rates=json.loads(options).get("topic_rates", False),
            echo=json.loads(options).get("echo", False),
        ),
    }[model_name]()
    if model_name == "BKT per skill":  # the guess/slip bound is chosen on folds of the training learners
        bound = ev.BKTModel.chosen(train, n_restarts=5, seed=0).options["max_guess"]
        print(f"BKT per skill: guess/slip bound chosen on 3 folds of the training learners: {bound}", file=sys.stderr)
        model = ev.BKTModel(n_restarts=5, seed=0, max_guess=bound, max_slip=bound)
    t0 = time.perf_counter()
    model.fit(train)
    t1 = time.perf_counter()
    p = model.predict(test)
    t2 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    np.savez(out, p=p, y=test.correct, fit=t1 - t0, replay=t2 - t1, rss=rss, n_train=train.n_responses)


def fit_worker(root: Path, split: str, out: Path, folds: int) -> None:
    import dataclasses

    from learnloop.evaluate import fit_options

    train, _ = load(root, split)
    t = time.perf_counter()
    fit = fit_options(train, folds=folds, progress=sys.stderr.isatty())
    chosen = {k: v for k, v in dataclasses.asdict(fit.options).items() if k != "memory_model" and v is not None}
    out.write_text(
        json.dumps(
            {
                "options": chosen,
                "refine": fit.refine,
                "topic_rates": fit.topic_rates,
                "echo": fit.echo,
                "log_loss": fit.log_loss,
                "seconds": time.perf_counter() - t,
            }
        )
    )


def run_worker(args: list[str]) -> None:
    subprocess.run([sys.executable, __file__, *args], check=True)


# -- pyBKT on the same pairs ----------------------------------------------------------------
def pybkt(root: Path, split: str, workdir: Path, python: Path) -> dict[str, float] | None:
    train, test = load(root, split)
    tr_rows, tr_skills = train.response_skills()
    te_rows, te_skills = test.response_skills()
    used = np.unique(tr_skills)  # pyBKT fits the skills seen in training; others get the training mean
    dense = np.full(train.n_skills, -1)
    dense[used] = np.arange(used.size)
    keep = dense[te_skills] >= 0
    path, out = workdir / f"{split}_pybkt_in.npz", workdir / f"{split}_pybkt_out.npz"
    np.savez(
        path,
        n_skills=used.size,
        train_user=train.learner[tr_rows],
        train_skill=dense[tr_skills],
        train_correct=train.correct[tr_rows].astype(int),
        test_user=test.learner[te_rows[keep]],
        test_skill=dense[te_skills[keep]],
        test_correct=test.correct[te_rows[keep]].astype(int),
    )
    runner = Path(__file__).with_name("_peers_pybkt_run.py")
    code = (
        "import resource, runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__'); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    t = time.perf_counter()
    done = subprocess.run(
        [str(python), "-c", code, str(runner), str(path), str(out), "1"],
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t
    with np.load(out) as z:
        per_pair, fit_s = z["pred"], float(z["times"][0])
    sums = np.bincount(te_rows[keep], weights=per_pair, minlength=test.n_responses)
    counts = np.bincount(te_rows[keep], minlength=test.n_responses)
    p = np.where(counts > 0, sums / np.maximum(counts, 1), float(train.correct.mean()))
    from learnloop.evaluate import metrics

    return {
        **metrics(test.correct, p),
        "fit": fit_s,
        "replay": wall - fit_s,
        "rss": float(done.stdout.strip().splitlines()[-1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--splits", nargs="+", default=list(FILES), choices=list(FILES))
    parser.add_argument("--no-pybkt", action="store_true", help="leave pyBKT out")
    parser.add_argument("--folds", type=int, default=3, help="folds of the training learners for fit_options")
    parser.add_argument(
        "--models", nargs="+", default=list(MODELS), choices=list(MODELS), help="learnloop's models to run"
    )
    parser.add_argument("--worker", nargs=4, metavar=("SPLIT", "MODEL", "OPTIONS", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--fit-worker", nargs=2, metavar=("SPLIT", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.data_dir, args.worker[0], args.worker[1], args.worker[2], Path(args.worker[3]))
    if args.fit_worker:
        return fit_worker(args.data_dir, args.fit_worker[0], Path(args.fit_worker[1]), args.folds)
    from learnloop.evaluate import metrics

    if not args.no_pybkt:  # build (or check) pyBKT's environment before any table is printed
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _peers_env import peer_python

        peer = peer_python()
    summary: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for split in args.splits:
            chosen: dict[str, Any] = {"options": {}, "refine": None, "topic_rates": False, "echo": False}
            print(f"\n## {split}\n")
            if "engine (fitted)" in args.models:
                fitted = workdir / f"{split}_options.json"
                run_worker([str(args.data_dir), "--fit-worker", split, str(fitted), "--folds", str(args.folds)])
                chosen = json.loads(fitted.read_text())
                print(f"engine settings chosen on {args.folds} folds of the training learners in "
                      f"{chosen['seconds']:.0f} s (validation log loss {chosen['log_loss']:.4f}): {chosen['options']}, "
                      f"items refined: {chosen['refine']}, per-topic rates: {chosen['topic_rates']}, "
                      f"answer echo: {chosen['echo']}\n")  # fmt: skip
            print("| model | AUC | RMSE | log loss | ECE | fit | replay | replay rate | peak RSS |")
            print("|---|---|---|---|---|---|---|---|---|")
            for name in args.models:
                out = workdir / f"{split}_{len(summary)}.npz"
                fitted_model = json.dumps({k: chosen[k] for k in ("options", "refine", "topic_rates", "echo")})
                run_worker([str(args.data_dir), "--worker", split, name, fitted_model, str(out)])
                with np.load(out) as z:
                    m = metrics(z["y"], z["p"])
                    fit_s, replay_s, rss, n = float(z["fit"]), float(z["replay"]), float(z["rss"]), z["y"].size
                print(f"| {name} | {m['auc']:.3f} | {m['rmse']:.3f} | {m['log_loss']:.3f} | {m['ece']:.3f} | "
                      f"{fit_s:.2f} s | {replay_s:.2f} s | {n / replay_s:,.0f}/s | {rss:.0f} MB |")  # fmt: skip
                summary.append((split, name, m["auc"]))
            if not args.no_pybkt:
                r = pybkt(args.data_dir, split, workdir, peer)
                if r is not None:
                    print(f"| pyBKT 1.4.3 | {r['auc']:.3f} | {r['rmse']:.3f} | {r['log_loss']:.3f} | {r['ece']:.3f} | "
                          f"{r['fit']:.2f} s | {r['replay']:.2f} s | | {r['rss']:.0f} MB |")  # fmt: skip
                    summary.append((split, "pyBKT", r["auc"]))
            for name, value in PUBLISHED.get(split, {}).items():
                print(f"| {name} (published) | {value:.3f} | | | | | | | |")
    print("\n## test AUC summary\n")
    splits = list(dict.fromkeys(s for s, _, _ in summary))
    names = list(dict.fromkeys(n for _, n, _ in summary))
    print("| model | " + " | ".join(splits) + " |")
    print("|---|" + "---|" * len(splits))
    table = {(s, n): a for s, n, a in summary}
    for name in names:
        print(
            f"| {name} | " + " | ".join(f"{table[(s, name)]:.3f}" if (s, name) in table else "" for s in splits) + " |"
        )


if __name__ == "__main__":
    main()
