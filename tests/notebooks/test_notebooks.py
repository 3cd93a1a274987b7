"""The notebooks in ``notebooks/`` run top to bottom, draw their figures and find what they claim.

Each notebook is executed in a subprocess (``run_notebook.py``: a fresh
kernel on this interpreter) at the small size, ``LEARNLOOP_NOTEBOOK_SIZE=small``.
The executed copy is read back: no cell may fail or print a warning, the
figures must be there, and the notebook's ``results`` must show the models
doing what the notebook says they do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
RUNNER = Path(__file__).with_name("run_notebook.py")
CELL_TIMEOUT_S = 240
NOTEBOOK_TIMEOUT_S = 420

pytest.importorskip("nbclient", reason="the notebooks need the 'notebooks' extra")


def execute(name: str, tmp_path: Path) -> dict[str, Any]:
    """Run notebook ``name``; returns the executed notebook as JSON."""
    target = tmp_path / name
    env = {**os.environ, "LEARNLOOP_NOTEBOOK_SIZE": "small"}
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(NOTEBOOKS / name), str(target), str(CELL_TIMEOUT_S)],
        capture_output=True,
        text=True,
        timeout=NOTEBOOK_TIMEOUT_S,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stderr[-4000:]}"
    return json.loads(target.read_text())


def outputs(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for cell in notebook["cells"] if cell["cell_type"] == "code" for o in cell["outputs"]]


def figures(notebook: dict[str, Any]) -> int:
    return sum(1 for o in outputs(notebook) if "image/png" in o.get("data", {}))


def results(notebook: dict[str, Any]) -> dict[str, Any]:
    lines = [
        line
        for o in outputs(notebook)
        if o["output_type"] == "stream"
        for line in "".join(o["text"]).splitlines()
        if line.startswith("RESULTS=")
    ]
    assert len(lines) == 1
    return json.loads(lines[0][len("RESULTS=") :])


def check_clean(notebook: dict[str, Any]) -> None:
    """No error output, and no warning printed by any cell."""
    errors = [o for o in outputs(notebook) if o["output_type"] == "error"]
    assert errors == []
    stderr = "".join("".join(o["text"]) for o in outputs(notebook) if o.get("name") == "stderr")
    assert "Warning" not in stderr, stderr


def test_notebooks_are_committed_without_outputs() -> None:
    """The committed notebooks are sources: outputs are produced by running them."""
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert names == ["01-quickstart.ipynb", "02-knowledge-tracing.ipynb", "03-policies.ipynb", "04-real-data.ipynb"]
    for name in names:
        notebook = json.loads((NOTEBOOKS / name).read_text())
        code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code), name
        assert notebook["metadata"]["kernelspec"]["name"] == "python3"
        tagged = [c for c in code if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1 and "LEARNLOOP_NOTEBOOK_SIZE" in "".join(tagged[0]["source"]), name


def test_quickstart(tmp_path: Path) -> None:
    notebook = execute("01-quickstart.ipynb", tmp_path)
    check_clean(notebook)
    assert figures(notebook) == 3  # the catalog, the session, the mastery graph
    found = results(notebook)
    # the session ran and stopped on one of its conditions, telling why
    assert found["stopped"] and found["stop_keys"]
    assert 5 <= found["steps"] <= 40
    # learn mode followed the prerequisite chain
    assert found["topic_order"] == ["fractions", "decimals", "percentages"]
    assert abs(found["final_estimate"] - found["final_truth"]) < 0.15
    assert found["reopened_equal"] is True


def test_knowledge_tracing(tmp_path: Path) -> None:
    notebook = execute("02-knowledge-tracing.ipynb", tmp_path)
    check_clean(notebook)
    assert figures(notebook) == 4  # IRT recovery, learning curves, two reliability diagrams
    found = results(notebook)
    assert found["irt_b_corr"] >= 0.95
    assert found["irt_theta_rmse"] <= 0.4
    assert found["irt_2pl_a_corr"] >= 0.7
    assert found["bkt_mean_abs_error"] <= 0.03 and found["bkt_max_abs_error"] <= 0.08
    assert found["bkt_auc"] >= found["bkt_auc_true_params"] - 0.01
    assert found["bkt_ece"] <= 0.03
    assert found["online_auc"] >= 0.65 and found["online_ece"] <= 0.15


def test_policies(tmp_path: Path) -> None:
    notebook = execute("03-policies.ipynb", tmp_path)
    check_clean(notebook)
    assert figures(notebook) == 2
    found = results(notebook)
    gains = found["gain_per_interaction"]
    assert set(gains) == {"learn", "random", "fixed order"} and all(g > 0 for g in gains.values())
    # learn mode is ahead of random order (paired over the same learners)
    assert found["learn_minus_random"] > 0
    # the assessment converges, and stronger learners get harder items
    assert found["assess_mae_end"] < 0.6 * found["assess_mae_start"]
    assert found["assess_mae_end"] < 0.15
    assert found["assess_served_corr"] > 0.4


def test_real_data(tmp_path: Path) -> None:
    notebook = execute("04-real-data.ipynb", tmp_path)
    check_clean(notebook)
    assert figures(notebook) == 1  # the reliability diagram
    found = results(notebook)
    assert found["global mean"] == 0.5 and found["n_test"] > 1000
    # on the committed ASSIST2009 slice, the engine's fitted model is ahead of every baseline
    fitted = found["engine (fitted)"]
    assert fitted > max(found["per-item mean"], found["per-skill mean"], found["BKT per skill"])
    assert fitted >= found["engine (defaults)"]
