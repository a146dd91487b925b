#!/usr/bin/env bash
# Install everything the tests need into the project's virtual environment (./.venv, see
# scripts/install.sh), then run them all: lint and types, Python, C++ core, C# core.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

bash scripts/install.sh --dev || { echo "install failed"; exit 1; }

# Everything below runs inside the venv: its python, and its avatar-bridge on PATH for the C++/C# tests.
VENV=${AVATAR_BRIDGE_VENV:-$ROOT/.venv}
export VIRTUAL_ENV=$VENV PATH="$VENV/bin:$PATH" PYTHON="$VENV/bin/python"
PY=$PYTHON

status=0
step() {
    local name=$1; shift
    echo; echo "==== $name"
    local t0=$SECONDS
    if "$@"; then echo "---- $name: ok ($((SECONDS - t0)) s)"; else echo "---- $name: FAILED ($((SECONDS - t0)) s)"; status=1; fi
}

step "ruff" $PY -m ruff check bridge tests bench
step "mypy" $PY -m mypy
step "pytest" $PY -m pytest -q -p no:cacheprovider
[[ -f scripts/test_cpp.sh ]] && step "C++ core (GoogleTest)" bash scripts/test_cpp.sh
[[ -f scripts/test_csharp.sh ]] && step "C# core (NUnit)" bash scripts/test_csharp.sh

echo
[[ $status == 0 ]] && echo "ALL TESTS PASSED" || echo "SOME TESTS FAILED"
exit $status
