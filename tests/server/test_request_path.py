"""The direct route to a contract's endpoint: the same path, root and answers as through Starlette's router."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from httpserve import InProcess
from starlette.applications import Starlette
from starlette.routing import Mount

from learnloop import Engine
from learnloop._http import ApiResponse
from learnloop.server import create_app


class Recorder:
    def __init__(self) -> None:
        self.paths: list[str] = []

    def handle(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        self.paths.append(path)
        return ApiResponse(200, {"data": {}})


@pytest.fixture
def clients() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for client in made:
        client.close()


@pytest.mark.parametrize("mount", ["", "/learning", "/v2", "/v1"])
def test_the_facade_gets_the_path_relative_to_where_the_application_is_mounted(mount: str, clients: list[Any]) -> None:
    v1, v2 = Recorder(), Recorder()
    app = create_app(Engine(), v1=v1, v2=v2, voice=False, page=False, docs=False)
    outer = Starlette(routes=[Mount(mount, app=app)]) if mount else app
    client = InProcess(outer)
    clients.append(client)
    assert client.request("POST", f"{mount}/v2/query-catalog-ids", json={}).status_code == 200
    odd = "/v2/a%2Fb" + ("%0Ac" if not mount else "")  # (an outer Mount of Starlette's stops at a newline)
    assert client.request("POST", mount + odd, json={}).status_code == 200
    assert client.request("GET", f"{mount}/v1/assets?asset_ids=a").status_code == 200
    assert client.request("GET", f"{mount}/v1").status_code == 200
    assert client.request("POST", f"{mount}/v2/openapi.json").status_code == 200  # not a GET: the façade's
    assert v2.paths == ["/v2/query-catalog-ids", odd, "/v2/openapi.json"]
    assert v1.paths == ["/v1/assets", "/v1"]
    document = client.request("GET", f"{mount}/v2/openapi.json")  # the document, served by the router
    assert document.status_code == 200 and document.json()["servers"][0]["url"] == (mount or "/")
    assert client.request("GET", f"{mount}/v2x/query").status_code == 404  # another path: not the contract's
    assert v2.paths[-1] == "/v2/openapi.json"


def test_the_servers_own_voice_facade_scores_in_a_child_process(clients: list[Any]) -> None:
    from learnloop.server import Keys
    from learnloop.voice import VoiceApi
    from learnloop.voice.synthesis import synthesize

    keys = Keys(api_keys={"k-1": "app-1"})
    app = create_app(Engine(), keys=keys, v1=False, v2=False, page=False, docs=False)
    client = InProcess(app)
    clients.append(client)
    form = {"target_phrase": "good morning", "dialect": "en-us", "user_id": "u1"}
    audio = synthesize("good morning")
    over_http = client.request(
        "POST", "/api/v1/score", data=form, files={"audio": ("a.wav", audio)}, headers={"X-API-KEY": "k-1"}
    )
    endpoint = app.contracts[-1][1].app  # type: ignore[attr-defined]
    try:
        assert endpoint.processes is not None and endpoint.processes._executor is not None  # a child scored it
        assert over_http.status_code == 200, over_http.text
        here = VoiceApi(api_keys={"k-1": "app-1"}).handle(
            "POST", "/api/v1/score", form=form, files={"audio": audio}, headers={"X-API-KEY": "k-1"}
        )
        assert over_http.json() == here.body  # the same answer as in this process
        wrong = client.request(
            "POST", "/api/v1/score", data=form, files={"audio": ("a.wav", audio)}, headers={"X-API-KEY": "no"}
        )
        assert wrong.status_code == 401  # the child's façade has the keys
    finally:
        endpoint.processes.close()


def test_the_scoring_processes_run_below_the_servers_cpu_priority() -> None:
    import os

    from learnloop.server.throttle import SCORING_NICENESS, ScoringProcesses, voice_facade

    processes = ScoringProcesses(1, voice_facade, ({"k-1": "app-1"}, None, {}))
    try:
        answer, _ = processes.call("GET", "/api/v1/nowhere", None, None, {"X-API-KEY": "k-1"})
        assert answer.status == 404  # answered by the child's own façade
        children = list(processes._executor._processes)
        assert children
        here = os.getpriority(os.PRIO_PROCESS, 0)
        assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in children} == {min(here + SCORING_NICENESS, 19)}
        if os.path.isdir("/proc/self/task"):  # Linux: every thread of the child, not only its first one
            threads = [int(t) for pid in children for t in os.listdir(f"/proc/{pid}/task")]
            assert len(threads) > len(children)
            assert {os.getpriority(os.PRIO_PROCESS, t) for t in threads} == {min(here + SCORING_NICENESS, 19)}
    finally:
        processes.close()


def test_a_scoring_is_charged_the_cpu_of_every_thread_of_its_process() -> None:
    import threading

    from learnloop.server.throttle import _child_call

    def spin(seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    def facade_with_a_helper_thread() -> Any:
        class Facade:
            def handle(self, method: str, path: str, **_: Any) -> str:
                helper = threading.Thread(target=spin, args=(0.2,))  # work done off the calling thread
                helper.start()
                helper.join()
                return "done"

        return Facade()

    answer, seconds = _child_call(facade_with_a_helper_thread, (), "GET", "/", None, None, {})
    assert answer == "done"
    assert seconds >= 0.15  # the calling thread alone spent next to nothing


_SCORING_PARENT = """
import sys
from learnloop.server.throttle import ScoringProcesses, voice_facade

processes = ScoringProcesses(1, voice_facade, ({"k-1": "app-1"}, None, {}))
answer, _ = processes.call("GET", "/api/v1/nowhere", None, None, {"X-API-KEY": "k-1"})
print(answer.status, *processes._executor._processes, flush=True)
sys.stdin.read()  # until killed
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, ended but not yet reaped, is not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_the_scoring_processes_end_when_the_serving_process_is_killed() -> None:
    # a worker killed outright (SIGKILL: no shutdown of its own) must not leave its scoring processes behind,
    # each holding an acoustic model, waiting for calls that will never come
    with subprocess.Popen(
        [sys.executable, "-c", _SCORING_PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as parent:
        try:
            assert parent.stdout is not None
            status, *children = parent.stdout.readline().split()
            assert status == "404" and children
            assert all(_running(int(pid)) for pid in children)
        finally:
            parent.kill()
    deadline = time.monotonic() + 120  # a bound on the wait, not a measured time: they get a core when one is idle
    while any(_running(int(pid)) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(int(pid)) for pid in children)
