"""A Triton model repository from the bridge's manifests (`avatar-bridge triton-repo`).

One folder per model: `config.pbtxt` and version `1/` holding the ONNX file. Runtimes:
- `onnxruntime`: `platform: "onnxruntime_onnx"` — what a Triton deployment with the ONNX Runtime backend
  (every NGC Triton image) runs;
- `python`: Triton's Python backend running the same ONNX file through ONNX Runtime
  (bridge/backends/triton/python_model.py, copied in as `model.py`) — for Triton builds that carry only
  the Python backend, such as the one inside the `nvidia-pytriton` wheel the tests run.

A model given a TensorRT plan (`--plan MODEL=PLAN`) is hosted as `platform: "tensorrt_plan"` instead.
A plan runs only where it was built for (TensorRT version, GPU, platform: its plan manifest says), and
Triton cannot say which GPU or TensorRT it has, so the Triton machine is described on the command line
and every plan is checked against it with the builder's own compatibility check before anything is
written: a mismatch is refused with the rebuild command. The plan's facts are carried into the config's
parameters, and its profiles (not the ONNX's) give the batch sizes.

Every config carries the manifest's `onnx_sha256`; the Triton backend compares it with its own manifest
when it activates, so a bridge never serves through a stale repository.

Recurrent state is explicit: each state pair is one more input and output, so Triton sees a stateless
model and the bridge keeps every session's state (docs/deployment.md says why). The batch tiers of the
manifest's profiles become `max_batch_size` and dynamic batching's preferred sizes, so requests from
several bridge front ends are batched by Triton too.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from bridge.backends.tensorrt.builder.compat import raise_on_mismatch
from bridge.backends.tensorrt.builder.host import HostSnapshot
from bridge.backends.tensorrt.builder.plan_manifest import PlanManifest
from bridge.runtime.manifest import ModelManifest, Profile, Shape

__all__ = ["Runtime", "checked_plans", "model_config", "write_repository"]

Runtime = Literal["onnxruntime", "python"]
PYTHON_MODEL = Path(__file__).with_name("python_model.py")

# numpy dtype names -> Triton's config data types
_TRITON_TYPES = {
    "float32": "TYPE_FP32",
    "float16": "TYPE_FP16",
    "bfloat16": "TYPE_BF16",
    "float64": "TYPE_FP64",
    "int64": "TYPE_INT64",
    "int32": "TYPE_INT32",
    "int8": "TYPE_INT8",
    "uint8": "TYPE_UINT8",
    "bool": "TYPE_BOOL",
}


def _tensors(
    manifest: ModelManifest,
) -> tuple[list[tuple[str, Shape, str, int]], list[tuple[str, Shape, str, int]]]:
    """(name, shape, dtype, batch axis) of every graph input and output, each tensor once."""
    inputs = {s.tensor: (s.tensor, s.shape, s.dtype, 0) for s in manifest.inputs}
    outputs = {s.tensor: (s.tensor, s.shape, s.dtype, 0) for s in manifest.outputs}
    for pair in manifest.state:
        inputs[pair.input] = (pair.input, pair.shape, pair.dtype, pair.batch_axis)
        outputs[pair.output] = (pair.output, pair.shape, pair.dtype, pair.batch_axis)
    return list(inputs.values()), list(outputs.values())


def _batch_tiers(profiles: Iterable[Profile]) -> list[int]:
    return sorted({p.max_batch for p in profiles}) or [1]


def _dims(shape: Sequence[int | str], drop_batch: bool) -> str:
    dims = [d if isinstance(d, int) else -1 for d in shape[1 if drop_batch else 0 :]]
    return ", ".join(str(d) for d in dims)


def _tensor_entry(name: str, shape: Shape, dtype: str, batched: bool) -> str:
    dims = _dims(shape, batched)
    # A batched tensor with no other axis ([B], e.g. a style id) is declared [1] and reshaped to [].
    shape_text = "dims: [ 1 ], reshape: { shape: [ ] }" if not dims else f"dims: [ {dims} ]"
    return f'  {{ name: "{name}", data_type: {_TRITON_TYPES[dtype]}, {shape_text} }}'


def model_config(
    manifest: ModelManifest,
    runtime: Runtime = "onnxruntime",
    *,
    gpu: bool = False,
    plan: PlanManifest | None = None,
) -> str:
    """config.pbtxt text for `manifest` (protobuf text format), hosting `plan` when one is given."""
    inputs, outputs = _tensors(manifest)
    # Triton batches on axis 0 only; a model with state batched elsewhere is served unbatched.
    batched = all(axis == 0 for *_, axis in inputs + outputs)
    tiers = _batch_tiers(plan.profiles if plan is not None else manifest.profiles)
    lines = [f'name: "{manifest.name}"']
    if plan is not None:
        lines.append('platform: "tensorrt_plan"')
    else:
        lines.append('backend: "python"' if runtime == "python" else 'platform: "onnxruntime_onnx"')
    lines.append(f"max_batch_size: {max(tiers) if batched else 0}")
    for section, tensors in (("input", inputs), ("output", outputs)):
        lines.append(f"{section} [")
        entries = [_tensor_entry(name, shape, dtype, batched) for name, shape, dtype, _ in tensors]
        lines.append(",\n".join(entries))
        lines.append("]")
    if batched:
        preferred = ", ".join(str(t) for t in tiers)
        lines.append(
            f"dynamic_batching {{ preferred_batch_size: [ {preferred} ], max_queue_delay_microseconds: 100 }}"
        )
    on_gpu = gpu or plan is not None
    lines.append(f"instance_group [ {{ count: 1, kind: {'KIND_GPU' if on_gpu else 'KIND_CPU'} }} ]")
    facts = {"bridge_task": manifest.task, "onnx_sha256": manifest.onnx_sha256, "fps": f"{manifest.fps:g}"}
    if plan is not None:
        facts |= {
            "plan_sha256": plan.plan_sha256,
            "tensorrt_version": plan.tensorrt_version,
            "compute_capabilities": ",".join(plan.targets),
            "precision": plan.precision,
        }
    lines += [f'parameters {{ key: "{k}" value: {{ string_value: "{v}" }} }}' for k, v in facts.items()]
    return "\n".join(lines) + "\n"


def checked_plans(
    manifests: Iterable[ModelManifest], plans: Mapping[str, Path], triton_host: HostSnapshot
) -> dict[str, tuple[Path, PlanManifest]]:
    """Every plan in `plans` (model name -> plan file) with its plan manifest, checked against the
    Triton machine: a plan of an unknown model, of other weights, or that cannot run there raises
    (PlanMismatchError lists why and how to rebuild; ValueError for the rest)."""
    by_name = {m.name: m for m in manifests}
    checked = {}
    for model, plan in plans.items():
        manifest = by_name.get(model)
        if manifest is None:
            raise ValueError(f"--plan {model}={plan}: no model {model!r} among the manifests")
        pm = PlanManifest.read(plan)
        if pm.onnx_sha256 != manifest.onnx_sha256:
            raise ValueError(
                f"--plan {model}={plan}: built from ONNX sha256 {pm.onnx_sha256[:12]}, the model's is "
                f"{manifest.onnx_sha256[:12]}; rebuild with:\n  {pm.rebuild_command_line}"
            )
        raise_on_mismatch(pm, plan, triton_host)
        checked[model] = (plan, pm)
    return checked


def write_repository(
    manifests: Iterable[ModelManifest],
    out: Path,
    runtime: Runtime = "onnxruntime",
    *,
    gpu: bool = False,
    plans: Mapping[str, tuple[Path, PlanManifest]] | None = None,
) -> list[Path]:
    """Write one model folder per manifest under `out`; returns the folders. `plans` (model name ->
    plan file and its manifest, from `checked_plans`) are hosted instead of those models' ONNX."""
    folders = []
    for manifest in manifests:
        folder = out / manifest.name
        version = folder / "1"
        version.mkdir(parents=True, exist_ok=True)
        plan_file, plan = (plans or {}).get(manifest.name, (None, None))
        config = model_config(manifest, runtime, gpu=gpu, plan=plan)
        (folder / "config.pbtxt").write_text(config, encoding="utf-8")
        if plan_file is not None:
            shutil.copyfile(plan_file, version / "model.plan")
        else:
            shutil.copyfile(manifest.onnx_path, version / "model.onnx")
            if runtime == "python":
                shutil.copyfile(PYTHON_MODEL, version / "model.py")
        folders.append(folder)
    return folders
