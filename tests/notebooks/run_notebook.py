"""Execute one notebook top to bottom; the notebook test calls this in a subprocess.

Usage: ``python run_notebook.py NOTEBOOK.ipynb EXECUTED.ipynb [CELL_TIMEOUT_S]``

The kernel is this interpreter (a ``python3`` kernel spec pointing at
``sys.executable`` is written to a temporary ``JUPYTER_PATH``, which takes
precedence over any other), so the notebooks run against the learnloop of
this environment. A last cell is appended that prints the notebook's
``results`` dict as one JSON line starting with ``RESULTS=``. The executed
notebook, outputs included, is written to ``EXECUTED.ipynb``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

RESULTS_CELL = "import json as _json\nprint('RESULTS=' + _json.dumps(results, default=float))"


def execute(source: Path, target: Path, *, cell_timeout: int) -> None:
    import nbformat
    from ipykernel.kernelspec import write_kernel_spec
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory() as jupyter_path:
        write_kernel_spec(Path(jupyter_path) / "kernels" / "python3")
        os.environ["JUPYTER_PATH"] = jupyter_path
        notebook = nbformat.read(source, as_version=4)
        notebook.cells.append(nbformat.v4.new_code_cell(RESULTS_CELL))
        client = NotebookClient(
            notebook,
            timeout=cell_timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(source.parent)}},
        )
        try:
            client.execute()
        finally:
            nbformat.write(notebook, target)


if __name__ == "__main__":
    timeout = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    execute(Path(sys.argv[1]), Path(sys.argv[2]), cell_timeout=timeout)
