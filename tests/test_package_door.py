"""The package door is lazy: the voice scorer does not load the learning core."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def test_import_learnloop_voice_leaves_the_engine_scipy_and_tqdm_unloaded() -> None:
    loaded = _loaded_after("import learnloop.voice")
    assert "learnloop.voice" in loaded
    for module in ("learnloop.engine", "learnloop.tracing", "learnloop.recommend", "scipy", "tqdm"):
        assert module not in loaded, f"import learnloop.voice loaded {module}"


def test_import_learnloop_alone_loads_nothing_heavy() -> None:
    loaded = _loaded_after("import learnloop")
    assert not {"learnloop.engine", "numpy", "scipy", "networkx", "pydantic"} & loaded


@pytest.mark.parametrize("name", ["Engine", "Limits"])
def test_the_public_names_still_import_from_the_package(name: str) -> None:
    import learnloop

    assert getattr(learnloop, name).__name__ == name
    assert name in dir(learnloop)
    with pytest.raises(AttributeError):
        learnloop.NoSuchName  # noqa: B018
