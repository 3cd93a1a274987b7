"""Build and locate the separate virtual environment that holds peer libraries.

Peers (pyBKT) are never dependencies of learnloop: they live in
``benchmarks/.venv-peers``, made on first use by :func:`peer_python`.

pyBKT 1.4.3 must be built from source to get its C++ extension (the wheel on
PyPI is a pure-Python fallback that is hundreds of times slower): install
``numpy<2.4`` first, then pyBKT with ``--no-build-isolation --no-binary pyBKT``.
Its ``setup.py`` silently falls back to pure Python when the compile fails, so
:func:`peer_python` checks that ``pyBKT.fit.E_step`` is a compiled module.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

__all__ = ["PEER_VENV", "peer_python"]

PEER_VENV = Path(__file__).resolve().parent / ".venv-peers"

_CHECK = (
    "import importlib.machinery as m, pyBKT.fit.E_step as e, pyBKT.models, numpy, sklearn;"
    "assert e.__file__.endswith(tuple(m.EXTENSION_SUFFIXES)), e.__file__;"
    "print(e.__file__, numpy.__version__, sklearn.__version__)"
)


def _run(args: list[str]) -> None:
    print("+", " ".join(args), flush=True)
    subprocess.run(args, check=True)


def _compiled(python: Path) -> bool:
    done = subprocess.run([str(python), "-c", _CHECK], capture_output=True, text=True)
    if done.returncode == 0:
        print("pyBKT C++ extension in use:", done.stdout.strip(), flush=True)
    return done.returncode == 0


def peer_python() -> Path:
    """Return the peer environment's interpreter, building the environment if needed."""
    python = PEER_VENV / "bin" / "python"
    if python.exists() and _compiled(python):
        return python
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(PEER_VENV)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "numpy<2.4", "scikit-learn==1.7.2", "pandas", "setuptools<75", "wheel"])
    _run([*pip, "--no-build-isolation", "--no-cache-dir", "--no-binary", "pyBKT", "pyBKT==1.4.3"])
    if not _compiled(python):
        sys.exit("pyBKT was installed without its C++ extension (pure-Python fallback); see above")
    return python


if __name__ == "__main__":
    print(peer_python())
