#!/usr/bin/env bash
# Install everything the tests need, then run them all: lint and types, Python, C++ core, C# core.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

bash scripts/install.sh --dev || { echo "install failed"; exit 1; }

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
