"""The contract tests of the three façades, unchanged, through the HTTP server.

Each run is a pytest subprocess over ``tests/api`` and the voice API tests with
the ``http_transport`` plugin, which sends every ``handle`` call as an HTTP
request to a real uvicorn server on 127.0.0.1 (the plugin can also send them in
process, through httpx's ASGI transport, with ``LEARNLOOP_TEST_TRANSPORT=asgi``;
the suite runs the server, which takes the same application and adds the real
HTTP stack, rather than both: the pair took about a seventh of the suite's
time). The tests parametrised by store run on PostgreSQL too (the server
``LEARNLOOP_TEST_POSTGRES`` names; without one the test fails).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONTRACT_TESTS = ["tests/api", "tests/voice/test_voice_api.py"]

# what HTTP cannot carry as those tests write it: calls of the Python API outside its type hints,
# and paths outside the façade's prefix, which the server routes elsewhere
EXPECTED_SKIPS = (
    "test_headers_that_are_not_strings_are_400",
    "test_v1_query_values_that_are_not_strings_are_400",
    "test_method_and_path_that_are_not_strings_are_400",
    "test_malformed_bodies_are_400",
    "test_unknown_path_is_404_before_the_key",
    "test_unknown_paths_and_methods",
    "test_routing_errors",
    "test_voice_arguments_outside_the_type_hints_are_400",
)


@pytest.mark.parametrize("transport", ["uvicorn"])
def test_the_contract_tests_pass_over_http(transport: str, tmp_path: Path, postgres_server: str) -> None:
    report = tmp_path / "report.json"
    env = {
        **os.environ,
        "LEARNLOOP_TEST_TRANSPORT": transport,
        "LEARNLOOP_TEST_REPORT": str(report),
        "LEARNLOOP_TEST_POSTGRES": postgres_server,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "http_transport"]
    command += CONTRACT_TESTS
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    passed = int(summary.split(" passed")[0].split()[-1])
    assert passed > 500, summary
    outcome = json.loads(report.read_text())
    # the façades were reached over HTTP, thousands of times
    assert outcome["requests"] > 3000, outcome["requests"]
    unexpected = {
        test: why for test, why in outcome["skipped"].items() if not test.split("::")[1].startswith(EXPECTED_SKIPS)
    }
    assert unexpected == {}
    assert len(outcome["skipped"]) < 50
    # the store-parametrised ones on every store, PostgreSQL included
    on_postgres = [test for test in outcome["passed"] if "[postgres" in test]
    assert len(on_postgres) >= 13, on_postgres
