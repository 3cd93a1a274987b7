"""Clients of a learnloop application over HTTP: in process (httpx's ASGI transport) and over a socket (uvicorn).

Both are synchronous, so that tests (and the façade adapter) call them like
``handle``: :class:`InProcess` runs the application on an event loop in a
background thread (an anyio blocking portal); :class:`Uvicorn` serves it with
a real uvicorn server on 127.0.0.1, on a free port, in a thread.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio.from_thread
import httpx
import uvicorn
from starlette.types import ASGIApp


class InProcess:
    """An ASGI application called in process through ``httpx.ASGITransport``."""

    base_url = "http://testserver"

    def __init__(self, app: ASGIApp) -> None:
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        transport = httpx.ASGITransport(app=app)
        self._client = httpx.AsyncClient(transport=transport, base_url=self.base_url, timeout=60)

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        content = kwargs.get("content")
        if content is not None and not isinstance(content, (bytes, str)):
            chunks = list(content)

            async def stream() -> AsyncIterator[bytes]:
                for chunk in chunks:
                    yield chunk

            kwargs["content"] = stream()

        async def send() -> httpx.Response:
            return await self._client.request(method, url, **kwargs)

        return self._portal.call(send)

    def send(self, request: httpx.Request) -> httpx.Response:
        async def send() -> httpx.Response:
            return await self._client.send(request)

        return self._portal.call(send)

    def build_request(self, method: str, url: Any, **kwargs: Any) -> httpx.Request:
        return self._client.build_request(method, url, **kwargs)

    def close(self) -> None:
        self._portal.call(self._client.aclose)
        self._portal_cm.__exit__(None, None, None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def uvicorn_thread(app: ASGIApp, **config: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in a thread; yields its base URL."""
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    settings = {"log_level": "warning", "lifespan": "off", **config}
    server = uvicorn.Server(uvicorn.Config(app, **settings))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


class Uvicorn:
    """An ASGI application served by uvicorn on 127.0.0.1, called with an ``httpx.Client``."""

    def __init__(self, app: ASGIApp) -> None:
        self._server = uvicorn_thread(app)
        self.base_url = self._server.__enter__()
        # without TCP_NODELAY, a request whose body goes out in a second write waits for a delayed ACK (~40 ms)
        nodelay = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self._client = httpx.Client(base_url=self.base_url, timeout=60, transport=nodelay)

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self._client.request(method, url, **kwargs)

    def send(self, request: httpx.Request) -> httpx.Response:
        return self._client.send(request)

    def build_request(self, method: str, url: Any, **kwargs: Any) -> httpx.Request:
        return self._client.build_request(method, url, **kwargs)

    def close(self) -> None:
        self._client.close()
        self._server.__exit__(None, None, None)
