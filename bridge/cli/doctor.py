"""`avatar-bridge doctor`: what each use of the bridge needs on this machine, one OK or MISSING line per
need, and the command that fixes each one missing.

Uses, in order: serving on the CPU (the main job: ONNX Runtime, the bundled models, the ports, the
compiled motion kernels), webcam face tracking (the face model found and converted, OpenCV's video
decoding, cameras), sound (PortAudio), `demo --video` (ffmpeg), other installable models, and GPU
serving (TensorRT, CUDA, GPUs, plans: backends/tensorrt/builder/doctor.py). It exits 0 when the main job
can run and 1 when it cannot; a missing optional piece only prints its fix. Nothing here changes the
machine: it reads, imports, opens a camera for a moment and binds a port for a moment.
"""

from __future__ import annotations

import argparse
import errno
import json
import shutil
import socket
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bridge import __version__
from bridge.cli.serve_config import load_serve_table
from bridge.paths import default_models_dir
from bridge.protocol.versions import DEFAULT_FRAMES_PORT, DEFAULT_REQUEST_PORT
from bridge.system_packages import FFMPEG, OPENCV_FFMPEG, PORTAUDIO

__all__ = ["Check", "add_arguments", "check_port", "collect", "run"]

CAMERA_INDICES = (0, 1, 2)  # a few: each index OpenCV tries costs a moment where nothing is there
MAIN_USE = "serve on the CPU"
REINSTALL = (
    "reinstall: `bash scripts/install.sh` in a checkout, else `pip install --force-reinstall avatar-bridge`"
)


@dataclass(frozen=True)
class Check:
    use: str  # what needs it, e.g. "serve on the CPU"
    what: str
    ok: bool
    detail: str
    fix: str | None = None  # the command (or step) that makes it OK; None when OK

    @property
    def line(self) -> str:
        status = "OK" if self.ok else "MISSING"
        text = f"  {status:<8} {self.what}: {self.detail}"
        return text if self.fix is None else f"{text}\n           fix: {self.fix}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, help="serve's TOML config: check its ports instead of 5570/5571"
    )
    parser.add_argument(
        "--face-landmarker", type=Path, help="the face_landmarker.task serve would be given (default: found)"
    )
    parser.add_argument(
        "--models", type=Path, help="folder of models and TensorRT plans (default: the bundled models)"
    )
    parser.add_argument("--engines", dest="models", type=Path, help=argparse.SUPPRESS)  # the name before 0.2
    parser.add_argument("--rebuild-on-mismatch", action="store_true", help="rebuild plans a rebuild can fix")
    parser.add_argument("--json", action="store_true", help="the checks and the GPU report as JSON")


# ----------------------------------------------------------------- serve on the CPU
def _onnxruntime() -> Check:
    try:
        import onnxruntime
    except ImportError as exc:
        return Check(MAIN_USE, "ONNX Runtime", False, f"not importable ({exc})", REINSTALL)
    providers = onnxruntime.get_available_providers()
    if "CPUExecutionProvider" not in providers:
        return Check(MAIN_USE, "ONNX Runtime", False, f"no CPU provider ({providers})", REINSTALL)
    return Check(MAIN_USE, "ONNX Runtime", True, f"{onnxruntime.__version__}, CPUExecutionProvider")


def _models(folder: Path) -> Check:
    from bridge.runtime.manifest import ManifestError, find_manifests, validate_against_onnx

    try:
        manifests = find_manifests(folder)
        for manifest in manifests:
            validate_against_onnx(manifest)
    except (OSError, ManifestError) as exc:
        return Check(MAIN_USE, "models", False, str(exc), REINSTALL)
    if not manifests:
        return Check(MAIN_USE, "models", False, f"no *.manifest.json in {folder}", REINSTALL)
    names = ", ".join(m.name for m in manifests)
    return Check(MAIN_USE, "models", True, f"{names} in {folder} (each ONNX matches its manifest)")


def check_port(host: str, port: int, role: str) -> Check:
    """Whether serve could listen on host:port now (bound for a moment with SO_REUSEADDR, as libzmq
    binds, so a connection in TIME_WAIT does not count as busy)."""
    what = f"port {host}:{port} ({role})"
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        if sys.platform != "win32":  # on Windows SO_REUSEADDR would let two listeners share the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(1)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return Check(MAIN_USE, what, False, f"cannot bind: {exc.strerror}", "pick another --host")
            fix = (
                f"stop what listens there (a bridge already running? Linux `ss -ltnp 'sport = :{port}'`, "
                f"macOS `lsof -nP -iTCP:{port} -sTCP:LISTEN`, Windows `netstat -ano | findstr :{port}` "
                f"name it) or serve elsewhere with --{role.split()[0]}-port N"
            )
            return Check(MAIN_USE, what, False, "in use", fix)
    return Check(MAIN_USE, what, True, "free")


def _ports(config: Path | None) -> list[Check]:
    table = load_serve_table(config).present()
    host = table.get("host") or "127.0.0.1"
    host = "127.0.0.1" if host in ("0.0.0.0", "*") else host
    wanted = [
        (table.get("request_port", DEFAULT_REQUEST_PORT), "request port"),
        (table.get("frames_port", DEFAULT_FRAMES_PORT), "frames port"),
        (table.get("metrics_port"), "metrics port"),
    ]
    return [check_port(host, port, role) for port, role in wanted if port]  # None or 0: none or any


def _command_on_path() -> Check:
    """The quickstart installs into a virtual environment whose bin folder a new shell lacks."""
    use = "the avatar-bridge command"
    found = shutil.which("avatar-bridge")
    if found is not None:
        return Check(use, "on PATH", True, found)
    scripts = Path(sysconfig.get_path("scripts"))
    if sys.prefix == sys.base_prefix:  # not a virtual environment: pip's scripts folder
        return Check(use, "on PATH", False, f"{scripts} is not on PATH", f"add {scripts} to PATH")
    activate = f"{scripts / 'activate'}" if sys.platform != "win32" else f"{scripts / 'activate.bat'}"
    fix = f"`source {activate}`" if sys.platform != "win32" else f"`{activate}`"
    return Check(use, "on PATH", False, f"its virtual environment {sys.prefix} is not active", fix)


def _motion_kernels() -> Check:
    from bridge.motion import foot_plant
    from bridge.motion import post as motion_post
    from bridge.motion.compiled import uncached

    if uncached(motion_post, foot_plant):
        detail = "not compiled yet: the first serve compiles them (15-40 s on two cores, said in its log)"
    else:
        detail = "compiled (numba's cache)"
    return Check(MAIN_USE, "motion kernels", True, detail)


# ----------------------------------------------------------------- webcam face tracking
FACE_USE = "face tracking (--camera, --video)"


def _face_model(user_path: Path | None) -> list[Check]:
    from bridge.models.mediapipe.convert import SERVED_NAME, converted_dir
    from bridge.models.mediapipe.locate import INSTALL_COMMAND, FaceModelError, locate

    try:
        bundle = locate(user_path)
    except FaceModelError as exc:
        return [Check(FACE_USE, "face model", False, str(exc).split(";")[0], INSTALL_COMMAND)]
    found = Check(FACE_USE, "face model", True, f"{bundle.path} ({bundle.source})")
    folder = converted_dir()
    if (folder / f"{SERVED_NAME}.manifest.json").is_file():
        return [found, Check(FACE_USE, "face model converted", True, f"ONNX in {folder}")]
    detail = f"not yet: the first serve converts it into {folder} (a few seconds, said in its log)"
    return [found, Check(FACE_USE, "face model converted", True, detail)]


def _video_decoding() -> Check:
    import cv2

    if cv2.videoio_registry.hasBackend(cv2.CAP_FFMPEG):
        return Check(FACE_USE, "video decoding", True, f"OpenCV {cv2.__version__} with FFmpeg")
    return Check(FACE_USE, "video decoding", False, "this OpenCV has no FFmpeg backend", OPENCV_FFMPEG.fix())


def _cameras() -> Check:
    import cv2

    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)  # absent indices warn otherwise
    opened = []
    for index in CAMERA_INDICES:
        capture = cv2.VideoCapture(index)
        if capture.isOpened():
            width, height = capture.get(cv2.CAP_PROP_FRAME_WIDTH), capture.get(cv2.CAP_PROP_FRAME_HEIGHT)
            opened.append(f"{index} ({width:.0f}x{height:.0f})")
        capture.release()
    if opened:
        return Check(FACE_USE, "cameras", True, f"--camera {', '.join(opened)}")
    fix = (
        "connect a webcam, or use --video FILE; Linux: it shows as /dev/video* and your user needs the "
        "video group (`sudo usermod -aG video $USER`, then log in again); macOS: allow your terminal in "
        "System Settings > Privacy & Security > Camera; Windows: Settings > Privacy > Camera"
    )
    indices = ", ".join(str(i) for i in CAMERA_INDICES)
    return Check(FACE_USE, "cameras", False, f"none opened at index {indices}", fix)


# ----------------------------------------------------------------- sound, demo video, other models
def _portaudio() -> Check:
    use = "sound (--microphone, --play)"
    try:
        import sounddevice
    except (ImportError, OSError) as exc:  # OSError: the PortAudio library itself is missing
        return Check(use, "PortAudio", False, f"does not load ({exc})", PORTAUDIO.fix())
    return Check(use, "PortAudio", True, sounddevice.get_portaudio_version()[1])


def _ffmpeg() -> Check:
    use = "demo --video"
    path = shutil.which("ffmpeg")
    if path is None:
        return Check(use, "ffmpeg", False, "not on PATH", FFMPEG.fix())
    try:
        version = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return Check(use, "ffmpeg", False, f"{path} does not run ({exc})", FFMPEG.fix())
    return Check(use, "ffmpeg", True, f"{path} ({' '.join(version.split()[:3])})")


def _other_models() -> list[Check]:
    """Model sets besides the face's (`avatar-bridge models list`)."""
    from bridge.cli.models import MODEL_SETS
    from bridge.models.install import ModelFileError, find_set

    checks = []
    for name, model_set in MODEL_SETS.items():
        if name == "face":  # checked above, with its conversion
            continue
        use = f"model set {name}"
        try:
            found = find_set(model_set)
        except ModelFileError as exc:
            checks.append(Check(use, name, False, str(exc), f"avatar-bridge models install {name}"))
            continue
        checks.append(Check(use, name, True, ", ".join(str(f.path) for f in found.values())))
    return checks


# ----------------------------------------------------------------- GPU serving
GPU_USE = "GPU serving (--backend tensorrt; optional)"


def _gpu(folder: Path, rebuild_on_mismatch: bool) -> tuple[list[Check], Any]:
    from bridge.backends.tensorrt.builder.doctor import diagnose

    report = diagnose(folder, rebuild_on_mismatch=rebuild_on_mismatch)
    cuda = report.host.cuda
    checks = []
    if cuda.has_gpu:
        names = ", ".join(d.name for d in cuda.devices)
        checks.append(Check(GPU_USE, "NVIDIA GPU", True, f"{names}; driver {cuda.driver_release}"))
    else:
        optional = "optional (the CPU serves); GPU serving needs an NVIDIA GPU with its driver"
        checks.append(Check(GPU_USE, "NVIDIA GPU", False, cuda.problem or "none", optional))
    if report.host.flavours:
        versions = ", ".join(f"{name} {v}" for name, v in report.host.flavours.items())
        checks.append(Check(GPU_USE, "TensorRT", True, versions))
    else:
        checks.append(
            Check(GPU_USE, "TensorRT", False, "not installed", "pip install 'avatar-bridge[tensorrt]'")
        )
    for plan in report.plans:
        fix: str | None = plan.rebuild_command
        if fix is None and not plan.ok:
            fix = "avatar-bridge build-engine (docs/tensorrt.md)"
        detail = "can load" if plan.ok else "cannot load: " + "; ".join(plan.reasons)
        checks.append(Check(GPU_USE, f"plan {plan.plan.name}", plan.ok, detail, fix))
    return checks, report


def collect(args: argparse.Namespace) -> tuple[list[Check], Any]:
    """Every check, in the order they print, and the GPU report (bridge.backends.tensorrt.builder.doctor)."""
    models = args.models or default_models_dir()
    steps: list[Callable[[], Check | list[Check]]] = [
        _onnxruntime,
        lambda: _models(models),
        lambda: _ports(args.config),
        _motion_kernels,
        _command_on_path,
        lambda: _face_model(args.face_landmarker),
        _video_decoding,
        _cameras,
        _portaudio,
        _ffmpeg,
        _other_models,
    ]
    checks: list[Check] = []
    for step in steps:
        result = step()
        checks += result if isinstance(result, list) else [result]
    gpu_checks, report = _gpu(models, args.rebuild_on_mismatch)
    return checks + gpu_checks, report


def main_job_runs(checks: list[Check]) -> bool:
    return all(c.ok for c in checks if c.use == MAIN_USE)


def run(args: argparse.Namespace) -> int:
    from bridge.backends.tensorrt.builder.doctor import render

    checks, report = collect(args)
    runs = main_job_runs(checks)
    if args.json:
        out = {"main_job_runs": runs, "checks": [asdict(c) for c in checks], "gpu": asdict(report)}
        print(json.dumps(out, default=str, indent=2))
        return 0 if runs else 1
    print(f"avatar-bridge {__version__} doctor: what each use needs on this machine")
    use = None
    for check in checks:
        if check.use != use:
            use = check.use
            print(f"\n{use}")
        print(check.line)
    print("\nGPU details:\n" + "\n".join(f"  {line}" for line in render(report).splitlines()))
    missing = sum(not c.ok for c in checks)
    verdict = "can run" if runs else "CANNOT run (see the MISSING lines above it)"
    print(f"\n{MAIN_USE}: {verdict}; {missing} missing in all")
    return 0 if runs else 1
