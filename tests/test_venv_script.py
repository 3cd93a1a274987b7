"""``scripts/_venv.sh``: pip runs only when pyproject.toml or the extras asked for changed since the last install.

Each test copies the script into a temporary project root whose ``.venv/bin/python`` is a shim that records
its arguments (and fails when told to), so no package index, network or real install is involved.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "_venv.sh"
SHIM = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$(dirname "$0")/../../calls.log"
exit "${FAKE_PIP_STATUS:-0}"
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "_venv.sh")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(SHIM)
    python.chmod(0o755)
    return tmp_path


def setup(root: Path, extras: str, *, pip_fails: bool = False) -> tuple[int, list[str]]:
    """Source the script as scripts/demo does; returns its exit status and the shim's calls it made."""
    log = root / "calls.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "FAKE_PIP_STATUS": "1" if pip_fails else "0"}
    command = 'source scripts/_venv.sh "$1"; test "$VPY" = "$PWD/.venv/bin/python"'
    done = subprocess.run(["bash", "-c", command, "_", extras], cwd=root, env=env, capture_output=True, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, calls


def install(root: Path, extras: str) -> str:
    return f"-m pip install --quiet -e {root}[{extras}]" if extras else f"-m pip install --quiet -e {root}"


def test_pip_runs_once_and_not_again_while_nothing_changed(root: Path) -> None:
    assert setup(root, "plot") == (0, [install(root, "plot")])
    assert setup(root, "plot") == (0, [])
    assert setup(root, "plot") == (0, [])


def test_fewer_extras_than_installed_need_no_install(root: Path) -> None:
    assert setup(root, "voice,server") == (0, [install(root, "server,voice")])
    assert setup(root, "server") == (0, [])
    assert setup(root, " voice , server,voice") == (0, [])
    assert setup(root, "") == (0, [])


def test_a_new_extra_installs_it_with_those_installed_before(root: Path) -> None:
    assert setup(root, "plot") == (0, [install(root, "plot")])
    assert setup(root, "server,voice") == (0, [install(root, "plot,server,voice")])
    assert setup(root, "plot,voice") == (0, [])


def test_a_changed_pyproject_installs_again_with_the_extras_asked_for(root: Path) -> None:
    assert setup(root, "plot,server") == (0, [install(root, "plot,server")])
    with (root / "pyproject.toml").open("a") as file:
        file.write("# changed\n")
    assert setup(root, "plot") == (0, [install(root, "plot")])
    assert setup(root, "plot") == (0, [])
    assert setup(root, "server") == (0, [install(root, "plot,server")])


def test_no_extras_installs_the_package_alone(root: Path) -> None:
    assert setup(root, "") == (0, [install(root, "")])
    assert setup(root, "") == (0, [])


def test_a_failed_install_is_tried_again_next_time(root: Path) -> None:
    assert setup(root, "plot") == (0, [install(root, "plot")])
    with (root / "pyproject.toml").open("a") as file:
        file.write("# changed\n")
    # no package index: pip fails, and so does the script (set -e)
    status, calls = setup(root, "plot", pip_fails=True)
    assert status != 0 and calls == [install(root, "plot")]
    assert not (root / ".venv" / ".learnloop-install").exists()
    assert setup(root, "plot") == (0, [install(root, "plot")])
    assert setup(root, "plot") == (0, [])
