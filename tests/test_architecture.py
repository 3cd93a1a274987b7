"""The shape of the code: no mixins, no oversized modules, the import contracts kept."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "learnloop"
MODULES = sorted(SRC.rglob("*.py"))


def test_no_class_is_named_or_used_as_a_mixin() -> None:
    classes: dict[str, ast.ClassDef] = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = node
    assert not [name for name in classes if "mixin" in name.lower()]
    # a mixin is a base class without a constructor of its own that reads attributes set by its subclass:
    # every learnloop base class that a learnloop class extends must be a standalone class (it has
    # an __init__, or it is a dataclass / pydantic model / protocol / exception / policy interface)
    bases = {b.id for c in classes.values() for b in c.bases if isinstance(b, ast.Name) and b.id in classes}
    for name in sorted(bases):
        node = classes[name]
        methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
        decorated = any(ast.unparse(d).startswith("dataclass") for d in node.decorator_list)
        base_names = {ast.unparse(b) for b in node.bases}
        standalone = (
            "__init__" in methods
            or decorated
            or base_names
            & {"BaseModel", "Protocol", "Exception", "ValueError", "LearnloopError", "RuleBasedStateMachine"}
            or name in {"Policy", "LearnloopError"}
        )
        assert standalone, f"class {name} is used as a base without being a standalone class"


def test_no_module_is_longer_than_500_lines() -> None:
    long = {str(p.relative_to(SRC)): n for p in MODULES if (n := len(p.read_text().splitlines())) > 500}
    assert long == {}


def test_the_import_contracts_are_kept() -> None:
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if linter is None:
        pytest.fail("lint-imports is not installed (pip install 'learnloop[dev]')")
    done = subprocess.run([linter, "--no-cache"], capture_output=True, text=True, cwd=SRC.parents[1], timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
