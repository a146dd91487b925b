#!/usr/bin/env bash
# Builds the Unity package's UPM tarball, com.avatarbridge.unity-<version>.tgz, with `npm pack` (the layout
# Package Manager's "Add package from tarball..." reads: everything under package/). It packs exactly the files
# git tracks under unity_package/, so nothing a local build or an editor left in the folder ships, less the two
# folders only CI uses (Tests/Tools~, Tests/UnityStub~; Unity ignores `~` folders anyway). Samples~ and
# Documentation~ are part of the UPM layout and stay. tests/test_unity_tarball.py checks the result.
# Usage: scripts/pack_unity.sh [OUT_DIR]    (default: ./out); prints the tarball's path.
# Needs: git, npm (scripts/install.sh --dev installs Node.js where npm is missing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/out}" && cd "${1:-$ROOT/out}" && pwd)
command -v npm >/dev/null || { echo "npm not found: run scripts/install.sh --dev" >&2; exit 2; }

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/avatar-bridge-upm.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT

cd "$ROOT"
while IFS= read -r -d '' path; do
    relative=${path#unity_package/}
    case $relative in
        Tests/Tools~/* | Tests/UnityStub~/*) continue ;;
    esac
    mkdir -p "$STAGE/$(dirname "$relative")"
    cp -p "$path" "$STAGE/$relative"
done < <(git ls-files -z -- unity_package)

# --ignore-scripts: the package has none, and packing must never run code from it; --offline and
# --no-update-notifier: packing a folder needs no registry, and nothing may reach one here.
name=$(cd "$STAGE" && npm pack --silent --ignore-scripts --offline --no-update-notifier --pack-destination "$OUT" | tail -n 1)
echo "$OUT/$name"
