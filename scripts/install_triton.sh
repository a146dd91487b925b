#!/usr/bin/env bash
# A Triton Inference Server for the tests, in its own virtual environment (.venv-triton; it needs
# numpy < 2): the tritonserver binary bundled in the nvidia-pytriton wheel, and ONNX Runtime for the
# Python-backend models that `avatar-bridge triton-repo --runtime python` writes. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${AVATAR_BRIDGE_TRITON_VENV:-.venv-triton}
BASE=${PYTHON:-python3}
stamp="$VENV/.installed-$(sha256sum constraints-triton.txt | cut -c1-16)"
[[ -f $stamp ]] && exit 0
[[ -x $VENV/bin/python ]] || "$BASE" -m venv "$VENV"
# pytriton's own Python dependencies serve its Python API, which the tests do not use: only the binary.
"$VENV/bin/pip" install -q --no-deps -c constraints-triton.txt nvidia-pytriton
"$VENV/bin/pip" install -q -c constraints-triton.txt numpy onnxruntime
touch "$stamp"
