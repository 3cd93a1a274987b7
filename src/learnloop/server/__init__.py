"""learnloop.server: learning API v1, v2 and the voice API over HTTP (ASGI, Starlette).

>>> from learnloop import Engine
>>> from learnloop.server import create_app
>>> app = create_app(Engine(), voice=False)     # serve it with uvicorn, or mount it in your own app

``learnloop serve`` (or ``python -m learnloop.server``) runs it under uvicorn;
see ``docs/deploy.md``. Install with ``pip install 'learnloop[server]'``.
"""

from __future__ import annotations

try:
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("learnloop.server needs the 'server' extra: pip install 'learnloop[server]'") from exc

from learnloop.server.app import BodyLimits, Capacity, FormFacade, JsonFacade, create_app
from learnloop.server.cli import Settings, StoreUrlError, create_app_from_env, load_sample_course, open_engine
from learnloop.server.keys import Keys, KeysFileError, RateLimit

__all__ = [
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
]
