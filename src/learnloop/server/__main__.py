"""``python -m learnloop.server``: the same as ``learnloop serve``."""

from learnloop.server.cli import serve_main

if __name__ == "__main__":
    raise SystemExit(serve_main())
