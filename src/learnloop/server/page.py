"""The learner page: one HTML page (``GET /``) and its script and style sheet (``/static/``).

Plain HTML, JavaScript and CSS shipped with the package (``static/``), with
no build step and nothing loaded from elsewhere; the page only calls learning
API v2 and the voice API of the server that served it. Its
``Content-Security-Policy`` lets it load and call nothing else.

The API key comes from the address: ``/#key=<key>`` fills it in (a fragment
never reaches the server, so it stays out of access logs), ``&user=<id>``
names the learner (shown at the top of the page, where it can be changed) and
``&catalog=<id>`` the course shown first (see ``docs/page.md``).
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

__all__ = ["DOCS_CSP", "STATIC", "docs_routes", "page_routes"]

STATIC = Path(__file__).with_name("static")

_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; media-src 'self' blob:; "
        "object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


#: the API reference's policy: Swagger UI's script and style sheets from this server only; no inline script or
#: style element, no eval, no other host
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)


def docs_routes(*, static: bool = True) -> list[BaseRoute]:
    """``GET /docs``: the API reference, Swagger UI over the contracts' OpenAPI documents.

    Swagger UI's files are shipped in the package (``static/swagger-ui/``,
    Apache-2.0) and served under ``/static`` with the page's initialiser
    (``static/docs.js``); ``static=False`` when :func:`page_routes` already
    serves ``/static``.

    >>> [route.path for route in docs_routes()]
    ['/docs', '/static']
    """

    async def docs(request: Request) -> Response:
        headers = {**_HEADERS, "Content-Security-Policy": DOCS_CSP}
        return FileResponse(STATIC / "docs.html", headers=headers, media_type="text/html; charset=utf-8")

    routes: list[BaseRoute] = [Route("/docs", docs, methods=["GET", "HEAD"])]
    if static:
        routes.append(Mount("/static", app=StaticFiles(directory=STATIC), name="static"))
    return routes


def page_routes() -> list[BaseRoute]:
    """``GET /`` (the page) and ``/static/...`` (its files).

    >>> [route.path for route in page_routes()]
    ['/', '/static']
    """

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=_HEADERS, media_type="text/html; charset=utf-8")

    return [
        Route("/", index, methods=["GET", "HEAD"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
