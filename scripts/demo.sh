#!/usr/bin/env bash
# Install avatar-bridge and run the demo on the embedded default (ONNX Runtime on the CPU).
# Usage: bash scripts/demo.sh [OUT_DIR]   (default: demo-out)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec "${PYTHON:-python3}" -m bridge.cli.main demo --out "${1:-demo-out}"
