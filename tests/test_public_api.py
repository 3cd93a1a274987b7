"""The public surface: each package's ``__all__``, and what ``import learnloop`` loads."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

# Update these lists on purpose when the public surface changes.
EXPECTED = {
    "learnloop": ["Engine", "Limits", "__version__"],
    "learnloop.api": ["ApiResponse", "V1Api", "V1Limits", "V2Api"],
    "learnloop.content": [
        "Catalog",
        "CatalogIndex",
        "Filter",
        "Item",
        "ItemAnnotation",
        "ItemDatabaseAnnotation",
        "ItemList",
        "TheoryItemRef",
        "Topic",
        "TopicItemRef",
        "TopicRef",
        "compile_catalog",
        "compile_filter",
        "validate_catalog",
    ],
    "learnloop.engine": [
        "CatalogModel",
        "ContextEvents",
        "DueItem",
        "Engine",
        "EventColumns",
        "FitOptions",
        "FitRecipe",
        "FitResult",
        "LearnerOptions",
        "LogModel",
        "PlainEvents",
        "Responses",
        "Search",
        "search_options",
    ],
    "learnloop.plot": [
        "ReliabilityBins",
        "by_opportunity",
        "learning_curves",
        "padded",
        "reliability_bins",
        "reliability_diagram",
        "topic_graph",
        "topic_layout",
        "topic_mastery",
    ],
    "learnloop.server": [
        "BodyLimits",
        "Capacity",
        "FormFacade",
        "JsonFacade",
        "Keys",
        "KeysFileError",
        "RateLimit",
        "Settings",
        "StoreUrlError",
        "create_app",
        "create_app_from_env",
        "load_sample_course",
        "open_engine",
    ],
    "learnloop.store": ["Doc", "Key", "MemoryStore", "PostgresStore", "SQLiteStore", "Store", "TABLES"],
    "learnloop.testing": [
        "Answer",
        "CONTENT_TYPES",
        "FILTER_FIELDS",
        "LearnerSpec",
        "MODES",
        "REASON_KEYWORDS",
        "SessionMachine",
        "SessionRun",
        "answers",
        "assert_session_invariants",
        "catalogs",
        "check_policy",
        "constraints",
        "content",
        "events",
        "filters",
        "identifiers",
        "item_databases",
        "items",
        "learners",
        "matching_filters",
        "play_session",
        "scores",
        "session_specs",
        "session_violations",
        "stopping_conditions",
    ],
}


@pytest.mark.parametrize("module_name", sorted(EXPECTED))
def test_all_is_exactly_the_public_surface(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__all__ == EXPECTED[module_name]


@pytest.mark.parametrize("module_name", sorted(EXPECTED))
def test_all_is_sorted_and_every_name_exists(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert list(module.__all__) == sorted(module.__all__)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_public_classes_say_where_they_live() -> None:
    import learnloop
    from learnloop import api, content, store

    assert learnloop.Engine.__module__ == "learnloop.engine"
    assert api.V1Api.__module__ == "learnloop.api.v1"
    assert api.V2Api.__module__ == "learnloop.api.v2"
    assert content.Catalog.__module__ == "learnloop.content.catalog"
    assert store.SQLiteStore.__module__ == "learnloop.store.sqlite"
    assert store.PostgresStore.__module__ == "learnloop.store.postgres"


HEAVY = ["pocketsphinx", "av", "jwt", "matplotlib", "hypothesis", "pytest", "psycopg", "psycopg_pool"]


def test_import_learnloop_does_not_import_optional_dependencies() -> None:
    code = (
        "import sys, learnloop, learnloop.api, learnloop.content, learnloop.store\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == ""


def test_the_probe_would_see_an_imported_module() -> None:
    """The check above is able to fail: a module that is imported shows up."""
    code = "import sys, json, learnloop.engine\nprint(','.join(m for m in ['json', 'numpy'] if m in sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "json,numpy"
