"""`avatar-bridge triton-repo`: a Triton model repository from the manifests in the engine folders."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import get_args

from bridge.paths import default_engines_dir
from bridge.runtime.manifest import ManifestError, find_manifests
from bridge.runtime.triton.repository import Runtime, write_repository

log = logging.getLogger("avatar-bridge")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engines", type=Path, action="append", help="folder of models with manifests (repeatable)"
    )
    parser.add_argument("--out", type=Path, required=True, help="the repository folder to write")
    parser.add_argument(
        "--runtime",
        choices=get_args(Runtime),
        default="onnxruntime",
        help="onnxruntime: Triton's ONNX Runtime backend (default); python: ORT in its Python backend",
    )
    parser.add_argument("--gpu", action="store_true", help="instance groups on the GPU (KIND_GPU)")


def run(args: argparse.Namespace) -> int:
    try:
        manifests = [m for folder in args.engines or [default_engines_dir()] for m in find_manifests(folder)]
    except (ManifestError, OSError) as exc:
        log.error("cannot read the manifests: %s", exc)
        return 2
    for folder in write_repository(manifests, args.out, args.runtime, gpu=args.gpu):
        print(folder)
    return 0
