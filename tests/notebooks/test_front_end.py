"""The ``notebooks`` extra gives a notebook user what they need: a front end and ``jupyter nbconvert``."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def extra(name: str) -> set[str]:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][name]
    return {re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower() for requirement in declared}


def test_the_extra_installs_a_front_end_and_nbconvert() -> None:
    packages = extra("notebooks")
    assert packages & {"jupyterlab", "notebook"}, packages  # something to open the notebooks in
    assert {"nbconvert", "nbclient", "ipykernel", "matplotlib"} <= packages


def test_jupyter_nbconvert_converts_every_notebook(tmp_path: Path) -> None:
    pytest.importorskip("nbconvert", reason="the 'notebooks' extra")
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "script", "--output-dir", str(tmp_path)]
        + [str(NOTEBOOKS / name) for name in names],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for name in names:
        script = tmp_path / Path(name).with_suffix(".py").name
        ast.parse(script.read_text())  # the notebook's code, as one Python file


def test_jupyterlab_starts() -> None:
    pytest.importorskip("jupyterlab", reason="the 'notebooks' extra")
    done = subprocess.run(
        [sys.executable, "-m", "jupyterlab", "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and re.match(r"\d+\.\d+", done.stdout), done.stderr[-2000:]
