# Shared by scripts/demo, scripts/serve and scripts/test: create .venv (once) and install learnloop with the
# given extras, only when needed.
# usage: source scripts/_venv.sh "dev,voice"
#
# After a successful install, .venv/.learnloop-install holds the SHA-256 of pyproject.toml and the extras
# installed. A later start installs nothing (and needs no package index) while pyproject.toml is unchanged and
# the extras asked for are among those installed; otherwise it installs again, with the extras asked for plus
# those already installed when pyproject.toml is unchanged. Delete that file to force a new install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
VPY="$ROOT/.venv/bin/python"
STAMP="$ROOT/.venv/.learnloop-install"
if [ ! -x "$VPY" ]; then
    "$PY" -m venv "$ROOT/.venv"
    "$VPY" -m pip install --quiet --upgrade pip
fi

# the extras of a comma-separated list, sorted, without blanks and repeats, one a line
_venv_extras() { tr ',' '\n' <<<"$1" | tr -d ' \t\r' | sed '/^$/d' | LC_ALL=C sort -u; }

_venv_wanted="$(_venv_extras "${1:-}")"
_venv_hash="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
_venv_had_hash=""
_venv_had=""
if [ -f "$STAMP" ]; then
    _venv_had_hash="$(sed -n 1p "$STAMP")"
    _venv_had="$(_venv_extras "$(sed -n 2p "$STAMP")")"
fi
# the extras asked for that are not installed (all of them when pyproject.toml changed)
if [ "$_venv_had_hash" = "$_venv_hash" ]; then
    _venv_missing="$(LC_ALL=C comm -23 <(printf '%s\n' "$_venv_wanted") <(printf '%s\n' "$_venv_had") | sed '/^$/d')"
    _venv_install="$(printf '%s\n%s\n' "$_venv_had" "$_venv_wanted" | sed '/^$/d' | LC_ALL=C sort -u)"
else
    _venv_missing="changed"
    _venv_install="$_venv_wanted"
fi
if [ ! -f "$STAMP" ] || [ -n "$_venv_missing" ]; then
    _venv_list="$(paste -sd, <<<"$_venv_install")"
    rm -f "$STAMP"
    if [ -n "$_venv_list" ]; then
        "$VPY" -m pip install --quiet -e "$ROOT[$_venv_list]"
    else
        "$VPY" -m pip install --quiet -e "$ROOT"
    fi
    printf '%s\n%s\n' "$_venv_hash" "$_venv_list" >"$STAMP.tmp"
    mv "$STAMP.tmp" "$STAMP"
fi
unset -f _venv_extras
unset _venv_wanted _venv_hash _venv_had_hash _venv_had _venv_missing _venv_install _venv_list
