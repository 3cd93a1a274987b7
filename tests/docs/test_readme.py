"""The code of README.md runs as pasted: every python block, in order, in one namespace.

Run as from the root of a checkout: the real-data block reads the slice committed under
``tests/data`` by its relative path; the first block's database is written to a
temporary folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from learnloop import Engine
from learnloop.evaluate import OptionsFit

ROOT = Path(__file__).resolve().parents[2]


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)


def test_the_readme_has_the_blocks_a_new_user_tries_first() -> None:
    blocks = python_blocks(ROOT / "README.md")
    assert blocks[0].startswith("from learnloop import Engine\n")
    real = [b for b in blocks if "read_three_line(" in b]
    assert len(real) == 1
    # the file it reads is committed, and the public source of the full files is named beside it
    path = re.search(r'read_three_line\("([^"]+)"\)', real[0])
    assert path is not None and (ROOT / path.group(1)).is_file()
    assert "https://github.com/jennyzhang0215/DKVMN" in (ROOT / "README.md").read_text()


def test_the_code_of_the_readme_runs_as_pasted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = python_blocks(ROOT / "README.md")
    (tmp_path / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "README"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"README.md, python block {k + 1}", "exec"), namespace)
    engine, fit = namespace["engine"], namespace["fit"]
    assert isinstance(engine, Engine) and isinstance(fit, OptionsFit)
    try:
        # the fitted settings are the catalog's, and the prediction reads them
        assert engine.learner_options_for("arith") == fit.options
        assert set(engine.predict("ada", "arith", ["q1", "q2"])) == {"q1", "q2"}
    finally:
        engine.close()
    printed = capsys.readouterr().out
    assert "validation log loss" in printed  # print(fit): the summary
    assert "| learnloop engine model (fitted) |" in printed  # print(evaluate(...)): the table, fit.model() in it
