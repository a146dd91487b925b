"""The `serve` TOML config file as a typed schema: an unknown key or a wrong type fails at start, naming it.

Keys mirror the `serve` flags (dashes become underscores); every key is optional and a flag given on the
command line wins over the file. Numbers are checked for range (ports 0-65535, counts >= 1, times and rates
finite and positive): NaN, a negative limit or port 99999 fails at start like a wrong type, and so does
the same value given as a flag (`check_flags`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from bridge.backends.tensorrt.builder.plan_manifest import Precision

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

__all__ = ["ConfigError", "ServeTable", "TensorRTTable", "TorchTable", "check_flags", "load_serve_table"]

# Ranged value types: NaN fails every bound, so each float has both.
Port = Annotated[int, msgspec.Meta(ge=0, le=65535)]  # 0: any free port
Count = Annotated[int, msgspec.Meta(ge=1, le=1_000_000)]
Seconds = Annotated[float, msgspec.Meta(gt=0, le=86_400)]
Hertz = Annotated[float, msgspec.Meta(gt=0, le=10_000)]
Microseconds = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]
Fraction = Annotated[float, msgspec.Meta(gt=0, le=1)]


class ConfigError(ValueError):
    """The config file cannot be read, is not TOML, or breaks the schema (the message names the key)."""


class TensorRTTable(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The `[serve.tensorrt]` table: options of the `tensorrt` backend (bridge.backends.tensorrt.runner),
    for every model it serves. None means "not in the file" (the backend's default)."""

    cuda_graphs: bool | None = None
    lanes: Annotated[int, msgspec.Meta(ge=1)] | None = None  # batches that may run at once, per plan
    precision: Precision | None = None  # which plans to load
    device: Annotated[int, msgspec.Meta(ge=0)] | None = None  # CUDA device index
    device_post: bool | None = None  # motion post-processing on the GPU (needs torch)

    def present(self) -> dict[str, Any]:
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class TorchTable(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The `[serve.torch]` table: options of the `torch` backend (bridge.backends.torch.runner).
    None means "not in the file" (the backend's default)."""

    compile: bool | None = None  # torch.compile (Inductor) at activation: GPU serving
    precision: Literal["float32", "float16", "bfloat16"] | None = None  # compute precision
    device_post: bool | None = None  # motion post-processing on the GPU
    max_batch: int | None = None  # top batch tier of every torch engine (powers of two up to it)

    def present(self) -> dict[str, Any]:
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class ServeTable(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """The `[serve]` table. None means "not in the file"."""

    host: str | None = None
    request_port: Port | None = None
    frames_port: Port | None = None
    models: str | None = None
    engines: str | None = None  # the key's name before 0.2, still read
    backend: str | None = None
    backend_for: dict[str, str] | None = None  # model name -> backend, e.g. {dance_lstm = "choreographer"}
    rebuild_on_mismatch: bool | None = None
    tensorrt: TensorRTTable | None = None
    torch: TorchTable | None = None
    triton_url: str | None = None
    face_model: str | None = None
    motion_model: str | None = None
    idle_timeout: Seconds | None = None
    max_sessions: Count | None = None
    max_sessions_per_client: Count | None = None
    max_load: Fraction | None = None  # busy fraction past which a model refuses new sessions
    max_queue_delay_us: Microseconds | None = None
    prepare_workers: Annotated[int, msgspec.Meta(ge=1, le=256)] | None = None
    scheduler: Literal["adaptive", "tick"] | None = None
    tick_hz: Annotated[float, msgspec.Meta(ge=0, le=10_000)] | None = None
    gather_window_us: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] | None = None
    client_fair_work: Annotated[int, msgspec.Meta(ge=0)] | None = None
    frames_hwm: Count | None = None
    insecure_remote: bool | None = None
    curve_secret_key: str | None = None
    curve_client_keys: str | None = None
    ports_file: str | None = None
    metrics_port: Port | None = None
    metrics_host: str | None = None
    gpu_metrics: bool | None = None
    workers: Annotated[int, msgspec.Meta(ge=1, le=256)] | None = None
    worker_gpus: str | None = None
    # Outputs (bridge.cli.outputs reads these under the same names as its flags).
    osc: str | list[str] | None = None
    livelink_face: str | list[str] | None = None
    osc_no_bundle: bool | None = None
    output_rate: Hertz | None = None
    # Live sources (bridge.cli.sources reads these under the same names as its flags).
    camera: str | list[str] | None = None
    camera_size: str | None = None
    camera_fps: Hertz | None = None
    camera_format: str | None = None
    jpeg_quality: Annotated[int, msgspec.Meta(ge=1, le=100)] | None = None
    video: str | list[str] | None = None
    microphone: str | list[str] | None = None
    audio: str | list[str] | None = None
    loop: bool | None = None
    audio_pipeline: str | None = None
    separate_speech: bool | None = None
    dance_style: str | None = None
    play: bool | None = None
    play_offset_ms: Annotated[float, msgspec.Meta(ge=-60_000, le=60_000)] | None = None
    preview: str | None = None
    # The live viewer (bridge.clients.viewer.cli reads these under the same names as its flags).
    viewer: str | Port | None = None  # [HOST:]PORT, or a port on loopback
    avatar: str | None = None  # a VRM file

    def present(self) -> dict[str, Any]:
        """The keys the file set, by name."""
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class _ConfigFile(msgspec.Struct, forbid_unknown_fields=True):
    serve: ServeTable = msgspec.field(default_factory=ServeTable)


def load_serve_table(path: Path | None) -> ServeTable:
    """The `[serve]` table of `path` (an empty one without a file)."""
    if path is None:
        return ServeTable()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        return msgspec.convert(raw, _ConfigFile).serve
    except OSError as exc:
        raise ConfigError(f"config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path}: not TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(f"config {path}: nested too deeply to be a serve config") from None
    except msgspec.ValidationError as exc:
        # msgspec names the key as a path, e.g. "Expected `int`, got `str` - at `$.serve.request_port`".
        raise ConfigError(f"config {path}: {exc}") from None


def check_flags(args: argparse.Namespace) -> None:
    """The schema's checks for the `serve` flags of its keys (ConfigError names the flag): a flag
    wins over the file, so it must pass the same ranges."""
    for name, value in vars(args).items():
        if value is None or name not in ServeTable.__struct_fields__ or not isinstance(value, (int, float)):
            continue
        try:
            msgspec.convert({name: value}, ServeTable)
        except msgspec.ValidationError as exc:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag} {value}: {str(exc).split(' - at ')[0]}") from None
