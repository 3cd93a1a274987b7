# Shared by scripts/demo and scripts/test: create .venv (once) and install learnloop with the given extras.
# usage: source scripts/_venv.sh "dev,voice"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
    "$PY" -m venv "$ROOT/.venv"
    "$ROOT/.venv/bin/python" -m pip install --quiet --upgrade pip
fi
extras="${1:-}"
if [ -n "$extras" ]; then
    "$ROOT/.venv/bin/python" -m pip install --quiet -e "$ROOT[$extras]"
else
    "$ROOT/.venv/bin/python" -m pip install --quiet -e "$ROOT"
fi
VPY="$ROOT/.venv/bin/python"
