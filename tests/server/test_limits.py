"""Per-key rate limits and bounded queues: 429 where a contract lists it, an answer at once when a queue is full.

The rates are chosen so that no refill can happen during a test (a token a
thousand seconds): the outcomes do not depend on how fast the machine is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from httpserve import InProcess, Uvicorn

from learnloop import Engine
from learnloop._http import ApiResponse
from learnloop.server import Capacity, Keys, KeysFileError, create_app
from learnloop.server.keys import RateLimit
from learnloop.server.throttle import Limits, TokenBucket, retry_after

SLOW = RateLimit(requests_per_second=0.001, burst=2)  # two requests, then one every 1000 s
KEYS = Keys(api_keys={"k-busy": "app-1", "k-calm": "app-2"}, rate_limits={"k-busy": SLOW})
BUSY, CALM = {"X-API-KEY": "k-busy"}, {"X-API-KEY": "k-calm"}


class Answering:
    """A façade (JSON or form) that answers 200 and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def handle(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        self.calls += 1
        return ApiResponse(200, {"data": {}})


class Busy(Answering):
    """Scorings that take 20 ms of CPU time each (of this thread's own: whatever else the machine runs)."""

    def handle(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        until = time.thread_time() + 0.02
        while time.thread_time() < until:
            pass
        return super().handle(method, path, **kwargs)


class Blocking(Answering):
    """Calls that wait until the test lets them go."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()

    def handle(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        self.entered.release()
        self.release.wait(60)
        return super().handle(method, path, **kwargs)


@pytest.fixture(params=["asgi", "uvicorn"])
def serve(request: pytest.FixtureRequest) -> Iterator[Any]:
    clients: list[Any] = []

    def start(app: Any) -> Any:
        client = (InProcess if request.param == "asgi" else Uvicorn)(app)
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.close()


def score(client: Any, headers: dict[str, str]) -> Any:
    return client.request("POST", "/api/v1/score", data={"target_phrase": "hi"}, files={"audio": b"x"}, headers=headers)


def test_a_v1_key_over_its_rate_gets_429_with_retry_after_while_another_key_is_served(serve: Any) -> None:
    v1 = Answering()
    client = serve(create_app(Engine(), keys=KEYS, v1=v1, v2=False, voice=False))
    first = [client.request("GET", "/v1/assets", headers=BUSY).status_code for _ in range(2)]
    over = client.request("GET", "/v1/assets", headers=BUSY)
    calm = [client.request("GET", "/v1/assets", headers=CALM).status_code for _ in range(5)]
    assert first == [200, 200] and calm == [200] * 5
    assert over.status_code == 429
    assert int(over.headers["retry-after"]) >= 900  # a token a thousand seconds
    (error,) = over.json()["errors"]  # v1's error shape, with its link
    assert error["status"] == 429 and "rate limit" in error["detail"] and error["link"].endswith("429")
    assert v1.calls == 7  # the refused request never reached the façade


def test_a_voice_key_over_its_rate_gets_429_in_the_voice_shape(serve: Any) -> None:
    voice = Answering()
    client = serve(create_app(Engine(), keys=KEYS, v1=False, v2=False, voice=voice))
    statuses = [score(client, BUSY).status_code for _ in range(2)]
    over = score(client, BUSY)
    assert statuses == [200, 200] and score(client, CALM).status_code == 200
    assert over.status_code == 429 and over.headers["retry-after"].isdigit()
    assert over.json() == {"errors": [{"status": 429, "detail": over.json()["errors"][0]["detail"]}]}


def test_a_spent_scoring_budget_gets_429_and_other_voice_requests_go_on(serve: Any) -> None:
    budget = RateLimit(requests_per_second=1000, burst=1000, scoring_seconds_per_minute=0.001)
    keys = Keys(api_keys={"k-busy": "app-1", "k-calm": "app-2"}, rate_limits={"k-busy": budget})
    voice = Busy()
    client = serve(create_app(Engine(), keys=keys, v1=False, v2=False, voice=voice))
    assert score(client, BUSY).status_code == 200  # let in; its 20 ms of CPU are charged to the budget of 1 ms
    over = score(client, BUSY)
    assert over.status_code == 429 and "scoring budget" in over.json()["errors"][0]["detail"]
    assert int(over.headers["retry-after"]) >= 1
    syllables = client.request("POST", "/api/v1/syllables", data={"target_phrase": "hi"}, headers=BUSY)
    assert syllables.status_code == 200  # no scoring: not charged to the budget
    assert score(client, CALM).status_code == 200


def test_v2_lists_no_429_a_request_that_would_wait_too_long_gets_500_with_retry_after(serve: Any) -> None:
    v2 = Answering()
    client = serve(create_app(Engine(), keys=KEYS, v1=False, v2=v2, voice=False))
    statuses = [client.request("POST", "/v2/query-catalog-ids", json={}, headers=BUSY).status_code for _ in range(2)]
    over = client.request("POST", "/v2/query-catalog-ids", json={}, headers=BUSY)
    assert statuses == [200, 200]
    assert client.request("POST", "/v2/query-catalog-ids", json={}, headers=CALM).status_code == 200
    assert over.status_code == 500 and int(over.headers["retry-after"]) >= 900
    assert over.json()["error"]["status"] == 500 and "rate limit" in over.json()["error"]["message"]


def test_a_v2_request_a_little_over_the_rate_waits_its_turn() -> None:
    # the bucket's arithmetic, without the clock: a request within V2_PACE_SECONDS is let in after its wait
    limits = Limits({"k": RateLimit(requests_per_second=1.0, burst=1)})
    assert limits.pace("k", 2.0) == 0.0  # the burst
    waits = [limits.pace("k", 2.0) for _ in range(3)]
    assert 0.9 < waits[0] <= 1.0 and 1.9 < waits[1] <= 2.0  # each takes the next token, in turn
    assert waits[2] > 2.0  # refused: nothing taken
    assert limits.pace("other", 2.0) == 0.0  # a key without a rate never waits


def test_the_token_bucket_and_retry_after() -> None:
    bucket = TokenBucket(rate=10.0, burst=3, now=0.0)
    assert [bucket.take(now=0.0) for _ in range(4)][:3] == [0.0, 0.0, 0.0]
    assert bucket.take(now=0.05) == pytest.approx(0.05)
    assert bucket.take(now=0.1) == 0.0
    assert retry_after(0.01) == "1" and retry_after(2.5) == "3"


@pytest.mark.parametrize("contract", ["v1", "v2"])
def test_a_full_queue_is_answered_at_once_in_the_contracts_shape(serve: Any, contract: str) -> None:
    facade = Blocking()
    app = create_app(Engine(), v1=facade, v2=facade, voice=False, capacity=Capacity(threads=1, waiting=1))
    client = serve(app)
    path = "/v1/assets" if contract == "v1" else "/v2/query-catalog-ids"
    method = "GET" if contract == "v1" else "POST"
    answers: list[Any] = []
    held = [threading.Thread(target=lambda: answers.append(client.request(method, path, json={}))) for _ in range(2)]
    try:
        held[0].start()
        assert facade.entered.acquire(timeout=60)  # one runs
        held[1].start()  # one waits for the thread
        pool = app.contracts[0][1].app.pool  # type: ignore[attr-defined]
        while pool.pending < 2:  # the second is in the queue
            threading.Event().wait(0.01)
        full = client.request(method, path, json={})
    finally:
        facade.release.set()
        for thread in held:
            thread.join(60)
    if contract == "v1":
        assert full.status_code == 503 and full.json()["errors"][0]["status"] == 503
        assert "busy" in full.json()["errors"][0]["detail"]
    else:  # v2's document lists no 503: its server-side error
        assert full.status_code == 500 and "busy" in full.json()["error"]["message"]
    assert full.headers["retry-after"] == "1"
    assert sorted(a.status_code for a in answers) == [200, 200]  # the two taken in were served


def test_a_flood_of_scorings_waits_in_its_own_bounded_queue_and_json_calls_go_on(serve: Any) -> None:
    scorer = Blocking()
    v2 = Answering()
    capacity = Capacity(threads=2, waiting=4, scoring=1, scoring_waiting=1)
    app = create_app(Engine(), keys=KEYS, v1=False, v2=v2, voice=scorer, capacity=capacity)
    client = serve(app)
    answers: list[Any] = []
    flood = [threading.Thread(target=lambda: answers.append(score(client, CALM))) for _ in range(2)]
    try:
        flood[0].start()
        assert scorer.entered.acquire(timeout=60)  # one scores
        flood[1].start()  # one waits for the scoring slot
        voice_endpoint = app.contracts[-1][1].app  # type: ignore[attr-defined]
        while voice_endpoint.scoring.pending < 2:
            threading.Event().wait(0.01)
        refused = score(client, CALM)
        served = client.request("POST", "/v2/query-catalog-ids", json={}, headers=CALM)
    finally:
        scorer.release.set()
        for thread in flood:
            thread.join(60)
    assert refused.status_code == 503 and "scorings queued" in refused.json()["errors"][0]["detail"]
    assert refused.headers["retry-after"] == "1"
    assert served.status_code == 200  # the JSON calls have threads of their own
    assert sorted(a.status_code for a in answers) == [200, 200]


def test_rate_limits_in_the_keys_file(tmp_path: Path) -> None:
    text = '[api_keys]\n"k-1" = "app-1"\n"k-2" = "app-2"\n[rate_limits]\n'
    keys = Keys.from_toml(text + '"k-1" = { requests_per_second = 20, burst = 40, scoring_seconds_per_minute = 30 }\n')
    assert keys.rate_limits == {"k-1": RateLimit(20.0, 40, 30.0)}
    bad = {
        '"k-9" = { requests_per_second = 1, burst = 1 }': "entry number 1 names a key that is not in [api_keys]",
        '"k-1" = { requests_per_second = 0, burst = 1 }': "requests_per_second must be a number above 0",
        '"k-1" = { requests_per_second = 1, burst = 0.5 }': "burst must be an integer of at least 1",
        '"k-1" = { requests_per_second = 1 }': "burst must be an integer of at least 1",
        '"k-1" = { requests_per_second = 1, burst = 1, per_hour = 3 }': "unknown field(s) per_hour",
        '"k-1" = 5': "must be a table",
        '"k-1" = { requests_per_second = 1, burst = 1, scoring_seconds_per_minute = -1 }': "scoring_seconds",
    }
    for line, problem in bad.items():
        with pytest.raises(KeysFileError) as caught:
            Keys.from_toml(text + line + "\n")
        assert problem in str(caught.value) and "k-1" not in str(caught.value).split("[rate_limits]")[-1]


def test_the_pool_counts_calls_in_and_out_and_its_idle_threads_end_and_come_back() -> None:
    import asyncio

    from learnloop.server.throttle import Full, Pool

    pool = Pool(threads=2, waiting=1, name="test-pool")
    pool.idle_seconds = 0.05

    async def scenario() -> list[Any]:
        pool.admit()
        first = await pool.run(lambda x: x * 2, 21)
        for _ in range(3):
            pool.admit()
        with pytest.raises(Full):  # 2 threads + 1 waiting are in
            pool.admit()
        for _ in range(3):
            pool.release()
        deadline = time.monotonic() + 60  # (a bound on a hang only)
        while pool._threads and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        idle = list(pool._threads)
        pool.admit()
        again = await pool.run(lambda: "again")
        pool.admit()
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 / 0)
        return [first, idle, again, pool.pending]

    assert asyncio.run(scenario()) == [42, [], "again", 0]
