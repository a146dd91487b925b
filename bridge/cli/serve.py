"""`avatar-bridge serve`: run the bridge from a TOML config file and flags (flags win)."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import zmq

from bridge.backends.tensorrt.builder.plan_manifest import PRECISIONS
from bridge.cli.outputs import add_output_arguments, build_router
from bridge.cli.serve_config import ServeTable, TensorRTTable, TorchTable, check_flags, load_serve_table
from bridge.cli.sources import add_source_arguments, device_listing, source_specs, start_feeders
from bridge.clients.sources.base import SourceError
from bridge.clients.sources.feeder import SourceFeeder
from bridge.clients.sources.specs import check_sources
from bridge.clients.viewer.cli import add_viewer_arguments, start_viewer
from bridge.paths import default_models_dir
from bridge.serving.cluster.front_end import FrontEnd
from bridge.serving.heap import freeze_startup_heap
from bridge.serving.server import Bridge, ServeConfig
from bridge.transport.curve import load_public_keys, load_secret_key
from bridge.transport.zmq_sockets import TransportConfig

log = logging.getLogger("avatar-bridge")
DEFAULT_TRITON_URL = "127.0.0.1:8001"  # Triton's own default gRPC port


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML file with the keys below under [serve]")
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--request-port", type=int, help="ROUTER port for requests and inputs (default 5570; 0: any)"
    )
    parser.add_argument(
        "--frames-port", type=int, help="PUB port for frames and events (default 5571; 0: any)"
    )
    parser.add_argument("--models", type=Path, help="folder of models with manifests (default: bundled)")
    parser.add_argument("--engines", type=Path, help=argparse.SUPPRESS)  # --models before 0.2
    parser.add_argument("--backend", help="onnxruntime (default), tensorrt, torch or triton")
    parser.add_argument(
        "--backend-for",
        action="append",
        type=_model_backend,
        metavar="MODEL=BACKEND",
        help="serve one model on another backend than --backend (repeatable), e.g. dance_lstm=choreographer",
    )
    parser.add_argument(
        "--rebuild-on-mismatch",
        action="store_true",
        default=None,
        help="tensorrt: rebuild a plan that no longer matches this machine instead of refusing it",
    )
    parser.add_argument(
        "--tensorrt-precision",
        choices=PRECISIONS,
        help="tensorrt: load the plans of this precision and refuse others (default: the model's own ONNX)",
    )
    parser.add_argument("--tensorrt-device", type=int, help="tensorrt: CUDA device index (0)")
    parser.add_argument(
        "--tensorrt-lanes",
        type=int,
        help="tensorrt: batches one plan may run at once, each on its stream (1)",
    )
    parser.add_argument(
        "--tensorrt-cuda-graphs",
        action="store_true",
        default=None,
        help="tensorrt: replay each tier's enqueue as a CUDA graph",
    )
    parser.add_argument(
        "--tensorrt-device-post",
        action="store_true",
        default=None,
        help="tensorrt: motion post-processing on the GPU (torch; docs/scheduling.md section 4)",
    )
    parser.add_argument(
        "--torch-compile",
        action="store_true",
        default=None,
        help="torch: run the model through torch.compile (GPU; ~20 s at the first call, docs/scheduling.md)",
    )
    parser.add_argument(
        "--torch-precision",
        choices=("float32", "float16", "bfloat16"),
        help="torch: compute precision (default float16 on the GPU, float32 on the CPU)",
    )
    parser.add_argument(
        "--torch-device-post",
        action="store_true",
        default=None,
        help="torch: motion post-processing on the GPU (docs/scheduling.md section 4)",
    )
    parser.add_argument(
        "--torch-max-batch",
        type=int,
        help="torch: largest batch of one engine call (CUDA graphs at its powers of two; default the "
        "manifest's largest profile: 32 for face tracking, 64 for dance)",
    )
    parser.add_argument(
        "--triton-url", help=f"triton: the server's gRPC address (default {DEFAULT_TRITON_URL})"
    )
    parser.add_argument("--face-model", help="default model of the face pipeline")
    parser.add_argument(
        "--face-landmarker",
        type=Path,
        help="MediaPipe's face_landmarker.task for face tracking (default: the user cache, then installed "
        "packages; docs/face-tracking.md)",
    )
    parser.add_argument(
        "--no-face-tracking", action="store_true", help="do not look for the face-tracking model"
    )
    parser.add_argument("--motion-model", help="default model of the motion pipeline")
    parser.add_argument(
        "--idle-timeout", type=float, help="seconds without input before a session is reaped (10)"
    )
    parser.add_argument("--max-sessions", type=int, help="session limit (256)")
    parser.add_argument(
        "--max-sessions-per-client",
        type=int,
        help="sessions one client (connection or CURVE key) may hold open (64)",
    )
    parser.add_argument(
        "--max-load",
        type=float,
        help="a model busy this fraction of the time refuses new sessions: AT_CAPACITY (0.85)",
    )
    parser.add_argument(
        "--max-queue-delay-us", type=int, help="longest wait for sessions due before a call (1000; 0: none)"
    )
    parser.add_argument(
        "--prepare-workers", type=int, help="pre-processing threads per model (1; face: detection, crop)"
    )
    parser.add_argument(
        "--scheduler",
        choices=("adaptive", "tick"),
        help="adaptive (default): rounds start on arrival; tick: on each model's clock (docs/scheduling.md)",
    )
    parser.add_argument("--tick-hz", type=float, help="tick scheduler rate (0, default: each model's fps)")
    parser.add_argument(
        "--gather-window-us", type=int, help="tick scheduler: longest wait at a tick for sessions due (1000)"
    )
    parser.add_argument(
        "--client-fair-work",
        type=int,
        help="work units clients share in a scheduler while several queue work (0: its largest batch, >= 64)",
    )
    parser.add_argument(
        "--frames-hwm", type=int, help="frames queued per subscriber before old ones drop (64)"
    )
    parser.add_argument(
        "--insecure-remote",
        action="store_true",
        default=None,
        help="allow a non-loopback --host without CURVE",
    )
    parser.add_argument(
        "--curve-secret-key",
        type=Path,
        help="CURVE: the bridge's .key_secret file (from `avatar-bridge keys`); encrypts and authenticates",
    )
    parser.add_argument(
        "--curve-client-keys",
        type=Path,
        help="CURVE: folder of client public .key files to admit (default: any client with the bridge key)",
    )
    parser.add_argument("--ports-file", type=Path, help="write the bound ports as JSON here once ready")
    parser.add_argument(
        "--metrics-port", type=int, help="serve /metrics, /healthz, /readyz on this port (0: any)"
    )
    parser.add_argument("--metrics-host", help="address of the metrics endpoint (default 127.0.0.1)")
    parser.add_argument(
        "--no-gpu-metrics",
        dest="gpu_metrics",
        action="store_const",
        const=False,
        help="leave GPU memory (an nvidia-smi run every 5 s of scrapes) out of /metrics",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="serve from N worker processes behind one front end (same ports; docs/deployment.md)",
    )
    parser.add_argument(
        "--worker-gpus",
        help="with --workers: CUDA_VISIBLE_DEVICES per worker, round robin (e.g. 0,1)",
    )
    add_output_arguments(parser)
    add_source_arguments(parser)
    add_viewer_arguments(parser)


def config_from_args(args: argparse.Namespace, table: ServeTable | None = None) -> ServeConfig:
    """The bridge's config from the flags, falling back to the config file's `[serve]` keys."""
    check_flags(args)  # the file's ranges, for the flags that override it
    file_values = (table if table is not None else load_serve_table(args.config)).present()

    def pick(flag: str) -> Any:
        value = getattr(args, flag)
        return value if value is not None else file_values.get(flag)

    transport = TransportConfig()
    transport_values = {
        "host": pick("host"),
        "request_port": pick("request_port"),
        "frames_port": pick("frames_port"),
        "frames_hwm": pick("frames_hwm"),
        "insecure_remote": pick("insecure_remote"),
    }
    secret_file = pick("curve_secret_key")
    if secret_file is not None:
        transport_values["curve_secret_key"] = load_secret_key(Path(secret_file))[1]
    clients_dir = pick("curve_client_keys")
    if clients_dir is not None:
        transport_values["curve_client_keys"] = load_public_keys(Path(clients_dir))
    transport = replace(transport, **{k: v for k, v in transport_values.items() if v is not None})
    config = ServeConfig(
        transport=transport, models_dir=Path(pick("models") or pick("engines") or default_models_dir())
    )
    models = {k: v for k, v in (("face", pick("face_model")), ("motion", pick("motion_model"))) if v}
    # The file's per-model backends, then the flags' (a flag wins for its model).
    model_backends = {**file_values.get("backend_for", {}), **dict(args.backend_for or ())}
    tensorrt = _tensorrt_options(args, file_values.get("tensorrt"), pick("rebuild_on_mismatch"))
    options = {
        "tensorrt": tensorrt,
        "torch": _table_options(args, "torch", TorchTable, file_values.get("torch")),
        "triton": {"url": pick("triton_url") or DEFAULT_TRITON_URL},
    }
    values = {
        "backend": pick("backend"),
        "idle_timeout_s": pick("idle_timeout"),
        "max_sessions": pick("max_sessions"),
        "max_sessions_per_client": pick("max_sessions_per_client"),
        "max_load": pick("max_load"),
        "max_queue_delay_us": pick("max_queue_delay_us"),
        "prepare_workers": pick("prepare_workers"),
        "scheduler": pick("scheduler"),
        "tick_hz": pick("tick_hz"),
        "gather_window_us": pick("gather_window_us"),
        "client_fair_work": pick("client_fair_work"),
        "ports_file": pick("ports_file"),
        "metrics_port": pick("metrics_port"),
        "metrics_host": pick("metrics_host"),
        "gpu_metrics": pick("gpu_metrics"),
        "models": models or None,
        "backend_options": options.get(pick("backend")) or None,
        "model_backends": model_backends or None,
        "other_backend_options": {b: o for b in set(model_backends.values()) if (o := options.get(b))}
        or None,
    }
    return replace(config, **{k: v for k, v in values.items() if v is not None})


def _model_backend(text: str) -> tuple[str, str]:
    """--backend-for MODEL=BACKEND."""
    model, sep, backend = text.partition("=")
    if not (sep and model and backend):
        raise argparse.ArgumentTypeError(f"expected MODEL=BACKEND, got {text!r}")
    return model, backend


def _table_options(
    args: argparse.Namespace, backend: str, schema: type[TensorRTTable | TorchTable], table: Any
) -> dict[str, Any]:
    """A backend's constructor options: its `[serve.BACKEND]` table, then the --BACKEND-* flags."""
    options: dict[str, Any] = table.present() if table is not None else {}
    for key in schema.__struct_fields__:  # each key has its --BACKEND-KEY flag
        value = getattr(args, f"{backend}_{key}")
        if value is not None:
            options[key] = value
    return options


def _tensorrt_options(
    args: argparse.Namespace, table: TensorRTTable | None, rebuild: bool | None
) -> dict[str, Any]:
    """The tensorrt backend's options, checked (lanes and device index are counts)."""
    options = _table_options(args, "tensorrt", TensorRTTable, table)
    if options.get("lanes", 1) < 1:
        raise ValueError(f"--tensorrt-lanes must be >= 1, got {options['lanes']}")
    if options.get("device", 0) < 0:
        raise ValueError(f"--tensorrt-device must be >= 0, got {options['device']}")
    if rebuild:
        options["rebuild_on_mismatch"] = True
    return options


def face_tracking_dirs(bundle_path: Path | None) -> tuple[Path, ...]:
    """The folder of converted face-tracking models (converted on first use), or () with a warning
    when the model is missing. A path the user gave must work."""
    from bridge.models.mediapipe.convert import ensure_converted
    from bridge.models.mediapipe.locate import FaceModelError, locate

    try:
        bundle = locate(bundle_path)
    except FaceModelError as exc:
        if bundle_path is not None:
            raise
        log.warning("face tracking off: %s", exc)
        return ()
    folder = ensure_converted(bundle)
    log.info("face tracking: %s (%s), ONNX in %s", bundle.path, bundle.source, folder)
    return (folder,)


def run(args: argparse.Namespace) -> int:
    if args.list_devices:
        print(device_listing())
        return 0
    try:
        table = load_serve_table(args.config)
        config = config_from_args(args, table)
        specs = source_specs(args, table.present())
        check_sources(specs)  # PortAudio, video decoders: before any model converts or loads
        if not args.no_face_tracking:
            extra = face_tracking_dirs(args.face_landmarker)
            config = replace(config, extra_model_dirs=(*config.extra_model_dirs, *extra))
        workers = args.workers if args.workers is not None else table.workers
        if workers is not None and specs:
            raise ValueError("live sources feed a single bridge: leave out --workers")
    except (OSError, ValueError, ImportError, SourceError, zmq.ZMQError) as exc:
        log.error("cannot start: %s", exc)
        return 2
    if workers is not None:
        return run_front_end(args, table, config, workers)
    try:
        bridge = Bridge(config)
        bridge.start()
    except (OSError, ValueError, ImportError, zmq.ZMQError) as exc:
        log.error("cannot start: %s", exc)
        return 2
    t = config.transport
    ready = (
        f"avatar-bridge ready: requests tcp://{t.host}:{bridge.sockets.request_port} "
        f"frames tcp://{t.host}:{bridge.sockets.frames_port} "
        f"models {', '.join(f'{p}:{m}' for p, m in sorted(bridge.defaults.items()))}"
    )
    preview = args.preview or (Path(table.preview) if table.preview else None)
    return _serve(
        args,
        table,
        bridge,
        bridge.sockets.frames_endpoint,
        ready,
        lambda: start_feeders(
            specs,
            bridge,
            style=args.dance_style or table.dance_style,
            preview=preview,
            allow_untrained=args.allow_untrained,
            body=args.body,
            jpeg_quality=args.jpeg_quality if args.jpeg_quality is not None else table.jpeg_quality,
        ),
    )


def run_front_end(args: argparse.Namespace, table: ServeTable, config: ServeConfig, workers: int) -> int:
    """`serve --workers N`: the front end and its worker processes (bridge.serving.cluster.front_end)."""
    gpus = args.worker_gpus or table.worker_gpus
    envs = [{"CUDA_VISIBLE_DEVICES": g.strip()} for g in gpus.split(",")] if gpus else None
    try:
        front = FrontEnd(config, workers, envs)
        front.start()
    except (OSError, ValueError, RuntimeError, ImportError, zmq.ZMQError) as exc:
        log.error("cannot start: %s", exc)
        return 2
    t = config.transport
    ready = (
        f"avatar-bridge ready: requests tcp://{t.host}:{front.request_port} "
        f"frames tcp://{t.host}:{front.frames_port} workers {workers}"
    )
    return _serve(args, table, front, front.frames_endpoint, ready)


def _serve(
    args: argparse.Namespace,
    table: ServeTable,
    server: Bridge | FrontEnd,
    frames_endpoint: str,
    ready: str,
    feeders_for: Callable[[], list[SourceFeeder]] = list,
) -> int:
    """Start the outputs, then the live sources, and serve until SIGINT or SIGTERM; a started server
    is closed on every path, after what was started around it."""
    stopping = threading.Event()  # a signal while outputs start: no sources, and serve stops at once

    def stop(*_: object) -> None:
        stopping.set()
        server.stop()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    # The viewer and the outputs (VMC, Live Link Face) read the server's own frame stream, so they can
    # never slow it.
    try:
        insecure = bool(args.insecure_remote or table.insecure_remote)
        viewer = start_viewer(args, frames_endpoint, insecure, table.present())
    except (OSError, ValueError, RuntimeError) as exc:
        log.error("cannot start the viewer: %s", exc)
        server.close()
        return 2
    try:
        router = build_router(args, frames_endpoint, table.present())
    except ValueError as exc:
        log.error("bad output destination: %s", exc)
        if viewer is not None:
            viewer.stop()
        server.close()
        return 2
    if router is not None:
        router.start()
    try:
        feeders = [] if stopping.is_set() else feeders_for()
    except SourceError as exc:
        log.error("cannot open source: %s", exc)
        if router is not None:
            router.stop()
        if viewer is not None:
            viewer.stop()
        server.close()
        return 2
    print(ready, flush=True)
    if viewer is not None:
        print(f"viewer {viewer.url}", flush=True)
    for feeder in feeders:
        print(f"source {feeder.source.describe()}", flush=True)
    freeze_startup_heap()
    try:
        server.serve_forever()
    finally:
        for feeder in feeders:
            feeder.stop()
        if router is not None:
            router.stop()
        if viewer is not None:
            viewer.stop()
        server.close()
    return 0
