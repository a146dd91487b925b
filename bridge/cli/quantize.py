"""`avatar-bridge quantize`: FP32 ONNX + manifest -> FP16/BF16/INT8 ONNX + manifest + accuracy report."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

import onnx

from bridge.backends.tensorrt.quantize.accuracy import AccuracyReport, compare
from bridge.backends.tensorrt.quantize.calibration import load_samples
from bridge.backends.tensorrt.quantize.int8 import int8_op_split, quantize_int8
from bridge.backends.tensorrt.quantize.mixed import convert_mixed, emulate_bf16
from bridge.runtime.manifest import ModelManifest, load_manifest, sha256_file, validate_against_onnx

__all__ = ["PRECISIONS", "QuantizeRequest", "QuantizeResult", "quantize"]

PRECISIONS = ("fp16", "bf16", "int8")


@dataclass(frozen=True)
class QuantizeRequest:
    source: Path  # FP32 .onnx (with its manifest beside it) or the manifest
    precision: str
    calibration: Path | None = None
    out: Path | None = None
    calibration_samples: int = 64
    holdout_samples: int = 16
    seed: int = 0


@dataclass(frozen=True)
class QuantizeResult:
    onnx_path: Path
    manifest_path: Path
    report_path: Path
    report: AccuracyReport


def _load(source: Path) -> tuple[ModelManifest, onnx.ModelProto]:
    """The source's manifest, validated, and its ONNX model, parsed once."""
    if not source.exists():
        raise FileNotFoundError(f"no such file: {source}")
    if source.suffix not in (".onnx", ".json"):
        raise ValueError(f"{source}: expected an .onnx file or a model manifest (.manifest.json)")
    manifest = load_manifest(source)  # given an .onnx, the manifest beside it: roles drive calibration
    try:
        model = onnx.load(str(manifest.onnx_path))
    except Exception as e:  # onnx raises DecodeError, ValueError, ... for a damaged file
        raise ValueError(f"{manifest.onnx_path} is not a readable ONNX model: {e}") from None
    validate_against_onnx(manifest)
    return manifest, model


def quantize(request: QuantizeRequest) -> QuantizeResult:
    precision = request.precision.lower()
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {request.precision!r}; choose one of {', '.join(PRECISIONS)}")
    started = time.perf_counter()
    manifest, fp32 = _load(request.source)
    src = manifest.onnx_path
    out = request.out or src.with_name(f"{src.stem}.{precision}.onnx")
    out.parent.mkdir(parents=True, exist_ok=True)
    samples = load_samples(
        manifest,
        request.calibration,
        calibration=request.calibration_samples,
        holdout=request.holdout_samples,
        seed=request.seed,
    )
    notes: list[str] = []
    if precision == "int8":
        quantize_int8(src, out, samples.calibration)
        low_model = onnx.load(str(out))
        low_ops, high_ops = int8_op_split(low_model)
        method = "symmetric INT8 Q/DQ, entropy (KL) calibration, per-channel weights (ONNX Runtime)"
        evaluated, evaluated_as = low_model, "ONNX Runtime CPU, INT8 Q/DQ"
    else:
        mixed = convert_mixed(fp32, precision)
        onnx.save(mixed.model, str(out))
        low_ops, high_ops = mixed.low_ops, mixed.high_ops
        method = f"{precision.upper()} mixed precision, FP32 inputs/outputs (bridge AutoCast-style converter)"
        calibrated = samples.source if request.calibration else "not needed"
        samples = replace(samples, source=calibrated)
        if precision == "bf16":
            evaluated, evaluated_as = (
                emulate_bf16(mixed.model),
                "ONNX Runtime CPU, BF16 emulated (FP32 compute on BF16-rounded tensors)",
            )
            notes.append(
                "ONNX Runtime's CPU provider has no BF16 kernels; "
                "TensorRT accumulates in FP32, as the emulation does"
            )
        else:
            evaluated, evaluated_as = mixed.model, "ONNX Runtime CPU, FP16"
    roles = compare(manifest, fp32, evaluated, samples.holdout)
    if not manifest.trained:
        notes.append(
            "the model is untrained (seeded weights): errors show the method, not production accuracy"
        )
    report = AccuracyReport(
        model=manifest.name,
        precision=precision,
        method=method,
        calibration=samples.source,
        holdout_samples=len(samples.holdout),
        evaluated_as=evaluated_as,
        roles=roles,
        low_precision_ops=low_ops,
        high_precision_ops=high_ops,
        notes=notes,
    )
    new_manifest = replace(
        manifest,
        name=f"{manifest.name}_{precision}",
        onnx_path=out.resolve(),
        onnx_sha256=sha256_file(out),
        description=f"{manifest.description} [{precision}: {method}]".strip(),
    )
    manifest_path = new_manifest.write()
    report_path = out.with_name(f"{out.stem}.quantize.json")
    report_path.write_text(
        json.dumps(report.to_dict() | {"seconds": round(time.perf_counter() - started, 2)}, indent=2) + "\n"
    )
    return QuantizeResult(out, manifest_path, report_path, report)
