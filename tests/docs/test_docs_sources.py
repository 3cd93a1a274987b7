"""What the documentation cites exists in the repository, and the site reads in order."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TEXTS = [*DOCS.rglob("*.md"), ROOT / "README.md", ROOT / "notebooks" / "README.md"]
CITED_FILE = re.compile(r"`([\w./-]+\.(?:md|ipynb|json|toml|csv|py))`")


def _repository_files() -> set[str]:
    skip = {".git", ".venv", "demo-output", "site", "node_modules", "__pycache__"}
    return {p.name for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)}


def test_every_file_a_page_cites_is_in_the_repository() -> None:
    files = _repository_files()
    missing = []
    for text in TEXTS:
        for name in CITED_FILE.findall(text.read_text(encoding="utf-8")):
            if name.startswith("/") or name.startswith("demo-output/"):
                continue  # a URL path the server answers, or a file the demo writes
            if Path(name).name not in files:
                missing.append(f"{text.relative_to(ROOT)}: {name}")
    assert missing == []


def test_no_page_points_outside_the_repository() -> None:
    for text in TEXTS:
        body = text.read_text(encoding="utf-8")
        assert "../shared" not in body and "spec/" not in body, text


def _nav_pages(entries: list) -> list[str]:
    out: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return out


def test_the_navigation_lists_every_page_and_starts_with_getting_started() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _nav_pages(config["nav"])
    assert pages[:2] == ["index.md", "getting-started.md"]
    assert sorted(pages) == sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
