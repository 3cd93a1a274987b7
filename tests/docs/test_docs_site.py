"""The documentation site builds without a warning, and the code on its pages runs.

``mkdocs build --strict`` runs in a subprocess (its plugins' own deprecation
warnings stay out of this process); any warning, such as a broken link, an
unknown anchor, a page left out or a docstring the API reference cannot
render, fails the build.
"""

from __future__ import annotations

import doctest
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

pytest.importorskip("mkdocs", reason="the site needs the 'docs' extra")


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=config.parent,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    return out


def text_of(page: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text()))


def test_every_page_is_built(site: Path) -> None:
    pages = {p.relative_to(DOCS).with_suffix("") for p in DOCS.rglob("*.md")}
    for page in pages:
        built = site / ("" if page.name == "index" else page) / "index.html"
        if page.name == "index":
            built = site / page.parent / "index.html"
        assert built.is_file(), page
    for required in ("getting-started", "models", "content", "voice", "stores", "performance"):
        assert (site / required / "index.html").is_file()


def test_the_api_reference_is_generated_from_the_docstrings(site: Path) -> None:
    engine = text_of(site / "api" / "engine" / "index.html")
    for method in ("create_session", "adaptive_step", "user_status", "upsert_events", "calibrate", "open"):
        assert method in engine
    assert "An adaptive learning engine over one store" in engine  # Engine's docstring
    testing = (site / "api" / "testing" / "index.html").read_text()
    assert "assert_session_invariants" in testing
    # doctests are rendered as code, not as block quotes, and no reST role is left raw
    assert "<blockquote" not in testing and ":func:" not in testing
    assert 'class="gp">&gt;&gt;&gt; </span>' in testing


def test_every_public_package_has_an_api_page() -> None:
    documented = set()
    for page in (DOCS / "api").glob("*.md"):
        documented |= set(re.findall(r"^::: (learnloop[\w.]*)", page.read_text(), flags=re.M))
    for package in ("api", "content", "tracing", "recommend", "store", "sim", "testing", "plot", "voice"):
        assert f"learnloop.{package}" in documented, package
    assert "learnloop.engine.Engine" in documented


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The check above can fail: the same site with one broken link does not build."""
    copy = tmp_path / "project"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "src").symlink_to(ROOT / "src", target_is_directory=True)
    page = copy / "docs" / "stores.md"
    page.write_text(page.read_text() + "\nSee [nowhere](no-such-page.md).\n")
    done = build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)


@pytest.mark.parametrize("name", ["index.md", "getting-started.md"])
def test_the_code_on_the_page_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks(DOCS / name)
    assert blocks
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs.{name}"}
    for k, block in enumerate(blocks):
        exec(compile(block, f"{name}, python block {k + 1}", "exec"), namespace)


def load_extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_docstrings", DOCS / "api" / "_docstrings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docstrings_become_markdown() -> None:
    module = load_extension()
    failed, attempted = doctest.testmod(module, report=True)
    assert attempted > 0 and failed == 0
    md = module.to_markdown(
        "Intro :class:`~learnloop.sim.SimulatedLearner`.\n\n    >>> f(1)\n    2\n\nText, then::\n\n    a = 1\n    b = 2\n"
    )
    assert md.splitlines() == [
        "Intro `learnloop.sim.SimulatedLearner`.",
        "",
        "    ```pycon",
        "    >>> f(1)",
        "    2",
        "    ```",
        "",
        "Text, then:",
        "",
        "```python",
        "a = 1",
        "b = 2",
        "```",
    ]
