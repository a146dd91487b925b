#!/usr/bin/env bash
# Builds the Unreal plugin's engine-independent C++17 core (unreal_plugin/AvatarBridge/Core) with CMake in
# Release and runs its GoogleTest tests through ctest: decoding of every frame/reply/error/event type,
# axis conversion of known rotations, the jitter buffer, the FLAME->ARKit fallback, and a live integration
# test that starts a real `avatar-bridge serve` on free ports, talks to it over real sockets (including a
# bridge restart) and stops it. Unreal itself is not needed and not built here.
# Needs (installed by scripts/install.sh): g++, cmake, pkg-config, libzmq3-dev, cppzmq-dev,
# libmsgpack-cxx-dev, libgtest-dev, and the avatar-bridge Python package on PATH.
# Env: BUILD_DIR (default unreal_plugin/AvatarBridge/Core/build, git-ignored; reused between runs),
#      JOBS (default 2), AVATAR_BRIDGE_CMD (bridge executable, default avatar-bridge).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CORE="$ROOT/unreal_plugin/AvatarBridge/Source/AvatarBridgeCore"
BUILD_DIR=${BUILD_DIR:-"$CORE/build"}
JOBS=${JOBS:-2}

if ! command -v "${AVATAR_BRIDGE_CMD:-avatar-bridge}" >/dev/null; then
    echo "'${AVATAR_BRIDGE_CMD:-avatar-bridge}' not found: install the Python package first (scripts/install.sh)" >&2
    exit 2
fi

echo "== configure"
cmake -S "$CORE" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON >/dev/null
echo "== build (Release, -j$JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "== test"
cd "$BUILD_DIR"
ctest --output-on-failure
