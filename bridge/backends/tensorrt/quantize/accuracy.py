"""Accuracy of a reduced-precision ONNX against its FP32 source, both run by ONNX Runtime (CPU).

Per output role (slices applied, as pipelines see them): mean absolute error, RMSE, max abs error, MSE
and MSE normalized by the FP32 output's variance. The headline figure is the task's: FLAME expression
mean absolute error for face models, joint-pose MSE (radians^2 and normalized) for motion models.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import onnx

from bridge.runtime.manifest import ModelManifest

__all__ = ["AccuracyReport", "RoleError", "compare"]

Feeds = dict[str, np.ndarray]


@dataclass(frozen=True)
class RoleError:
    mae: float
    rmse: float
    max_abs: float
    mse: float
    normalized_mse: float  # mse / var(fp32 output): 0 is exact, 1 is as bad as predicting the mean


@dataclass(frozen=True)
class AccuracyReport:
    model: str
    precision: str
    method: str
    calibration: str
    holdout_samples: int
    evaluated_as: str
    roles: dict[str, RoleError]
    low_precision_ops: dict[str, int]
    high_precision_ops: dict[str, int]
    notes: list[str] = field(default_factory=list)

    @property
    def headline(self) -> str:
        face = self.roles.get("flame.expression")
        if face is not None:
            return f"FLAME expression MAE {face.mae:.5f} (max {face.max_abs:.4f})"
        pose = self.roles["pose.axis_angle"]  # a validated manifest has one of the two
        return f"joint-pose MSE {pose.mse:.3e} rad^2, normalized {pose.normalized_mse:.2e}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"headline": self.headline}

    def render(self) -> str:
        lines = [
            f"{self.model}: {self.precision} ({self.method})",
            f"  vs FP32 on {self.holdout_samples} held-out inputs [{self.evaluated_as}]",
            f"  calibration: {self.calibration}",
            f"  {self.headline}",
        ]
        for role, e in self.roles.items():
            lines.append(
                f"  {role:<24} MAE {e.mae:.2e}  RMSE {e.rmse:.2e}  max {e.max_abs:.2e}  "
                f"normalized MSE {e.normalized_mse:.2e}"
            )
        fmt = ", ".join
        lines.append(
            f"  low precision: {fmt(f'{k} x{v}' for k, v in sorted(self.low_precision_ops.items()))}"
        )
        lines.append(
            f"  kept FP32:     {fmt(f'{k} x{v}' for k, v in sorted(self.high_precision_ops.items()))}"
        )
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _session(model: onnx.ModelProto) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    # BASIC, not ALL: an extended CPU fusion of ONNX Runtime 1.32 crashes on the FP16 LSTM graph.
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _run(session: Any, feeds: list[Feeds]) -> dict[str, np.ndarray]:
    names = [o.name for o in session.get_outputs()]
    runs = [dict(zip(names, session.run(None, f), strict=True)) for f in feeds]
    return {n: np.concatenate([r[n] for r in runs]) for n in names}


def _role_errors(
    manifest: ModelManifest, ref: dict[str, np.ndarray], got: dict[str, np.ndarray]
) -> dict[str, RoleError]:
    out = {}
    for spec in manifest.outputs:
        sl = slice(*spec.slice) if spec.slice else slice(None)
        r = ref[spec.tensor][..., sl].astype(np.float64)
        d = got[spec.tensor][..., sl].astype(np.float64) - r
        mse = float(np.mean(d**2))
        var = float(np.var(r))
        out[spec.role] = RoleError(
            mae=float(np.mean(np.abs(d))),
            rmse=mse**0.5,
            max_abs=float(np.max(np.abs(d))),
            mse=mse,
            normalized_mse=mse / var if var > 0 else float("inf") if mse > 0 else 0.0,
        )
    return out


def compare(
    manifest: ModelManifest, fp32: onnx.ModelProto, low: onnx.ModelProto, holdout: list[Feeds]
) -> dict[str, RoleError]:
    return _role_errors(manifest, _run(_session(fp32), holdout), _run(_session(low), holdout))
