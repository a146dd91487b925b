"""`avatar-bridge triton-repo`: a Triton model repository from the manifests in the engine folders."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import get_args

from bridge.backends.tensorrt.builder.compat import PlanMismatchError
from bridge.backends.tensorrt.builder.host import HostSnapshot
from bridge.backends.tensorrt.builder.plan_manifest import PlanManifestError
from bridge.backends.triton.repository import Runtime, checked_plans, write_repository
from bridge.paths import default_models_dir
from bridge.runtime.cuda import CudaEnvironment, DeviceInfo
from bridge.runtime.manifest import ManifestError, find_manifests

log = logging.getLogger("avatar-bridge")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--models",
        type=Path,
        action="append",
        help="folder of models with manifests (repeatable)",
    )
    parser.add_argument(  # the name before 0.2
        "--engines", dest="models", type=Path, action="append", help=argparse.SUPPRESS
    )
    parser.add_argument("--out", type=Path, required=True, help="the repository folder to write")
    parser.add_argument(
        "--runtime",
        choices=get_args(Runtime),
        default="onnxruntime",
        help="onnxruntime: Triton's ONNX Runtime backend (default); python: ORT in its Python backend",
    )
    parser.add_argument("--gpu", action="store_true", help="instance groups on the GPU (KIND_GPU)")
    plans = parser.add_argument_group(
        "TensorRT plans", "host a model's plan (built with `avatar-bridge build-engine --flavour tensorrt`); "
        "the Triton machine must be described, because a plan runs only where it was built for"
    )  # fmt: skip
    plans.add_argument("--plan", action="append", default=[], metavar="MODEL=PLAN", help="repeatable")
    plans.add_argument("--triton-tensorrt", metavar="VERSION", help="TensorRT of the Triton image, 10.13.3.9")
    plans.add_argument("--triton-gpu", metavar="CC", help="compute capability of its GPU, 9.0")
    plans.add_argument("--triton-cuda", metavar="X.Y", help="CUDA its driver supports (nvidia-smi), 13.0")
    plans.add_argument(
        "--triton-platform", default="Linux x86_64", help="system and machine (default: %(default)s)"
    )


def _triton_host(args: argparse.Namespace) -> HostSnapshot:
    missing = [f"--triton-{n}" for n in ("tensorrt", "gpu", "cuda") if not getattr(args, f"triton_{n}")]
    if missing:
        raise ValueError(f"--plan needs the Triton machine described: {', '.join(missing)}")
    major, minor = (int(x) for x in args.triton_gpu.split("."))
    cuda_major, cuda_minor = (int(x) for x in args.triton_cuda.split("."))
    system, machine = args.triton_platform.split()
    gpu = DeviceInfo(0, f"the Triton GPU (compute capability {args.triton_gpu})", (major, minor), 0)
    return HostSnapshot(
        flavours={"tensorrt": args.triton_tensorrt},  # Triton's TensorRT backend runs full TensorRT
        system=system,
        machine=machine.lower(),
        cuda=CudaEnvironment(driver_cuda=cuda_major * 1000 + cuda_minor * 10, devices=(gpu,)),
    )


def _model_and_plan(entry: str) -> tuple[str, str]:
    model, sep, plan = entry.partition("=")
    if not (sep and model and plan):
        raise ValueError(f"--plan {entry!r}: expected MODEL=PLAN")
    return model, plan


def run(args: argparse.Namespace) -> int:
    try:
        manifests = [m for folder in args.models or [default_models_dir()] for m in find_manifests(folder)]
    except (ManifestError, OSError) as exc:
        log.error("cannot read the manifests: %s", exc)
        return 2
    try:
        plans = dict(_model_and_plan(entry) for entry in args.plan)
        checked = (
            checked_plans(manifests, {m: Path(p) for m, p in plans.items()}, _triton_host(args))
            if plans
            else {}
        )
    except (PlanMismatchError, PlanManifestError, ValueError) as exc:
        log.error("%s", exc)
        return 2
    for folder in write_repository(manifests, args.out, args.runtime, gpu=args.gpu, plans=checked):
        print(folder)
    return 0
