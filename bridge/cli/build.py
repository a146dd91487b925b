"""`build-engine`, `quantize` and `doctor` subcommands for `avatar-bridge`.

`register_commands(subparsers)` adds them; each sets `func` (Namespace -> exit code) as its default, so
the main CLI runs `args.func(args)`. `python -m bridge.cli.build ...` runs them standalone.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

__all__ = ["main", "register_commands"]

# Expected, user-facing failures: print the message, no traceback.
_USER_ERRORS: tuple[type[Exception], ...] = (ValueError, RuntimeError, FileNotFoundError)


def _fail(e: Exception) -> int:
    print(f"error: {e}", file=sys.stderr)
    return 2


def _build(ns: argparse.Namespace) -> int:
    from bridge.backends.tensorrt.builder.arguments import request_from_args
    from bridge.backends.tensorrt.builder.builder import build_engine

    try:
        results = build_engine(request_from_args(ns))
    except _USER_ERRORS as e:
        return _fail(e)
    for r in results:
        m = r.manifest
        kind = "static" if m.static else f"{len(m.profiles)} tiers"
        print(
            f"{r.plan} ({r.plan.stat().st_size / 2**20:.1f} MiB, {m.flavour} {m.tensorrt_version}, "
            f"{m.precision}, {kind}, targets {', '.join(m.targets)}, {m.build_seconds:.2f} s)\n"
            f"  manifest: {r.manifest_path}"
        )
    return 0


def _quantize(ns: argparse.Namespace) -> int:
    from bridge.cli.quantize import QuantizeRequest, quantize

    try:
        result = quantize(
            QuantizeRequest(
                source=ns.model,
                precision=ns.precision,
                calibration=ns.calibration,
                out=ns.out,
                calibration_samples=ns.samples,
                holdout_samples=ns.holdout,
                seed=ns.seed,
            )
        )
    except _USER_ERRORS as e:
        return _fail(e)
    print(result.report.render())
    print(f"wrote {result.onnx_path}\n  manifest: {result.manifest_path}\n  report: {result.report_path}")
    return 0


def _doctor(ns: argparse.Namespace) -> int:
    from bridge.backends.tensorrt.builder.doctor import diagnose, render
    from bridge.paths import default_models_dir

    report = diagnose(ns.models or default_models_dir(), rebuild_on_mismatch=ns.rebuild_on_mismatch)
    if ns.json:
        print(json.dumps(asdict(report), default=str, indent=2))
    else:
        print(render(report))
    return 0


def register_commands(subparsers: Any) -> None:
    """Add build-engine and quantize to an argparse subparsers object (`avatar-bridge doctor` is
    bridge.cli.doctor, which includes this module's GPU doctor)."""
    from bridge.backends.tensorrt.builder.arguments import add_build_arguments

    p = subparsers.add_parser(
        "build-engine",
        help="build a TensorRT plan (+ plan manifest) from an ONNX model or its manifest",
        description="Build a strongly typed TensorRT plan. Precision comes from the ONNX (see `quantize`).",
    )
    add_build_arguments(p)
    p.set_defaults(func=_build)

    q = subparsers.add_parser(
        "quantize",
        help="write an FP16/BF16 mixed-precision or INT8 Q/DQ ONNX (+ manifest, accuracy report)",
    )
    q.add_argument("model", type=Path, help="the FP32 model's ONNX file or its .manifest.json")
    # Not `choices`: an unknown precision gets the same clear error from the API as from the CLI.
    q.add_argument("--precision", required=True, help="fp16, bf16 or int8")
    q.add_argument(
        "--calibration",
        type=Path,
        help="int8: a folder of face crops (images) or of .npy/.npz feature sequences; "
        "default: seeded synthetic inputs (say so in any result you publish)",
    )
    q.add_argument(
        "--out", type=Path, help="output ONNX (default: <model>.<precision>.onnx beside the input)"
    )
    q.add_argument("--samples", type=int, default=64, help="calibration samples (int8)")
    q.add_argument("--holdout", type=int, default=16, help="held-out samples for the accuracy report")
    q.add_argument("--seed", type=int, default=0)
    q.set_defaults(func=_quantize)


def _register_gpu_doctor(subparsers: Any) -> None:
    d = subparsers.add_parser("doctor", help="TensorRT, CUDA and GPUs here; which backends and plans can run")
    d.add_argument("--models", type=Path, help="folder of plans to check (default: the bundled models)")
    d.add_argument("--engines", dest="models", type=Path, help=argparse.SUPPRESS)  # the name before 0.2
    d.add_argument("--rebuild-on-mismatch", action="store_true", help="rebuild plans a rebuild can fix")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=_doctor)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="avatar-bridge")
    parser.add_argument("-v", "--verbose", action="store_true")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register_commands(subparsers)
    _register_gpu_doctor(subparsers)  # `python -m bridge.cli.build doctor`: the GPU part alone
    ns = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if ns.verbose else logging.WARNING)
    return int(ns.func(ns))


if __name__ == "__main__":
    sys.exit(main())  # untested here: tests call main(); run by hand and on the H200 (doctor)
