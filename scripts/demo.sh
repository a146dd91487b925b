#!/usr/bin/env bash
# Install avatar-bridge into the project's virtual environment (./.venv, see scripts/install.sh) and
# run the demo on the embedded default (ONNX Runtime on the CPU).
# Usage: bash scripts/demo.sh [OUT_DIR]   (default: demo-out)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
bash "$ROOT/scripts/install.sh"
exec "${AVATAR_BRIDGE_VENV:-$ROOT/.venv}/bin/avatar-bridge" demo --out "${1:-demo-out}"
