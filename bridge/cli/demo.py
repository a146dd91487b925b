"""`avatar-bridge demo`: the main job on the CPU default, end to end over ZeroMQ, with pictures.

Starts a bridge on the bundled models, drives a face session with a generated webcam clip and a
motion session with generated music at the same time, then writes a BVH of the dance, a PNG of
latency and channels, and a JSON summary; a synthesized phrase drives a speech session (speech.png).
With `--video PATH`, the dance as received is also drawn (the skeleton from a front camera) into an
MP4 with the music it danced to muxed in (bridge.clients.outputs.video; needs matplotlib and ffmpeg).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import soundfile

from bridge.cli.demo_speech import talk
from bridge.cli.serve import face_tracking_dirs
from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.plots import plot_run
from bridge.clients.harness.run import HarnessReport, run_harness
from bridge.clients.harness.sources import AUDIO_RATE, face_frames, read_wav
from bridge.clients.outputs.bvh import fill_gaps, write_bvh
from bridge.clients.outputs.recorder import Recording
from bridge.clients.outputs.session import SessionInfo
from bridge.clients.outputs.video import VideoError, check_video_tools, write_dance_video
from bridge.clients.viewer.demo import add_demo_viewer_arguments, start_demo_viewer
from bridge.media.music import synthesize_music
from bridge.models.mediapipe.locate import how_to_get
from bridge.paths import default_models_dir
from bridge.protocol.events import BodyRig, decode_rig
from bridge.protocol.frames import MotionFrame
from bridge.rig.forward_kinematics import forward_kinematics_quat
from bridge.serving.server import Bridge, ServeConfig
from bridge.transport.zmq_sockets import TransportConfig

# matplotlib (the picture) and tqdm (the progress bar) are the `demo` extra, not core dependencies.
DEMO_EXTRA = "pip install 'avatar-bridge[demo]' adds it"


def _progress_bar(total: int) -> Any:
    """A tqdm bar, or None where tqdm is not installed (the demo runs the same without it)."""
    if importlib.util.find_spec("tqdm") is None:
        print(f"no progress bar: tqdm is not installed ({DEMO_EXTRA})")
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="frame", desc="streaming face + motion")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("demo-out"),
        help="folder for dance.bvh, music.wav, demo.png, summary.json",
    )
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--style", default="house", help="dance style of the motion session")
    parser.add_argument(
        "--models",
        type=Path,
        default=None,
        help="models folder (default: the bundled models)",
    )
    parser.add_argument("--engines", dest="models", type=Path, help=argparse.SUPPRESS)  # the name before 0.2
    parser.add_argument(
        "--preview",
        type=Path,
        default=None,
        help="write face-tracking debug pictures (landmarks, head axes) here",
    )
    parser.add_argument(
        "--video",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the dance as an MP4 with its music (needs matplotlib and ffmpeg)",
    )
    parser.add_argument("--bpm", type=float, default=120.0, help="tempo of the generated music")
    add_demo_viewer_arguments(parser)


def _write_music(path: Path, seconds: float, bpm: float) -> npt.NDArray[np.float64]:
    """The motion session's music as a 16-bit WAV (what the harness streams); returns its beat times."""
    pcm, beats = synthesize_music(seconds, bpm=bpm, sample_rate=AUDIO_RATE)
    soundfile.write(str(path), pcm, AUDIO_RATE, subtype="PCM_16")
    return beats


def _write_video(
    path: Path, frames: list[MotionFrame], fps: float, music: Path, beats: npt.ArrayLike
) -> Path:
    """The received dance (rotations through forward kinematics) drawn over the music it got."""
    quats, root = fill_gaps(frames)
    joints, _ = forward_kinematics_quat(quats, root)
    rate, pcm = read_wav(music)
    start = frames[0].header.seq  # frame seq s answers audio chunk s: the music starts at that chunk
    return write_dance_video(
        path, joints, fps, pcm[round(start * rate / fps) :], rate, np.asarray(beats) - start / fps
    )


def run(args: argparse.Namespace) -> int:
    if args.video is not None:
        try:
            check_video_tools()  # before a minute of demo, not after it
        except VideoError as exc:
            print(f"demo --video: {exc}")
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    music = args.out / "music.wav"
    beats = _write_music(music, args.seconds, args.bpm)
    tracking = face_tracking_dirs(None)
    config = ServeConfig(
        transport=TransportConfig(request_port=0, frames_port=0),
        models_dir=args.models or default_models_dir(),
        extra_model_dirs=tracking,  # real face tracking where the model is found
    )
    bridge = Bridge(config)
    bridge.start()
    server = threading.Thread(target=bridge.serve_forever, name="bridge", daemon=True)
    server.start()
    # The live viewer (--viewer) and, where headless Chromium is, viewer.png of the real avatars.
    viewer = start_demo_viewer(args.viewer, bridge.sockets.frames_endpoint, args.out, args.seconds)
    print(
        f"bridge up on 127.0.0.1:{bridge.sockets.request_port}; models: {', '.join(bridge.defaults.values())}"
    )
    reports: dict[str, HarnessReport] = {}
    progress = _progress_bar(2 * int(args.seconds * 60))
    lock = threading.Lock()

    def tick(_done: int, _total: int) -> None:
        if progress is not None:
            with lock:
                progress.update(1)

    def drive(pipeline: str, options: dict[str, object], audio: Path | None = None) -> None:
        client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
        try:
            reports[pipeline] = run_harness(
                client,
                pipeline,
                seconds=args.seconds,
                input_path=audio,
                options=options,
                keep_frames=True,
                on_tick=tick,
            )
        finally:
            client.close()

    speech: dict[str, Any] = {}
    workers = [
        threading.Thread(target=drive, args=("face", {})),
        threading.Thread(target=drive, args=("motion", {"style": args.style}, music)),
        # A synthesized phrase drives a speech session's mouth (speech.png).
        threading.Thread(target=lambda: speech.update(talk(bridge.sockets.request_port, args.out))),
    ]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        if progress is not None:
            progress.close()
        shots = viewer.finish() if viewer is not None else []
        bridge.stop()
        server.join(timeout=5)
        bridge.close()
    if set(reports) != {"face", "motion"}:
        print("demo: a session failed; see the log above")
        return 1
    face, motion = reports["face"].tracks[0], reports["motion"].tracks[0]
    rig = decode_rig(motion.opened["rig"])
    assert isinstance(rig, BodyRig)
    info = SessionInfo(motion.session, "motion", rig, fps=motion.opened["fps"], model=motion.opened["model"])
    bvh = args.out / "dance.bvh"
    write_bvh(Recording(info, [r.frame for r in motion.frames]), bvh)
    written = [bvh, music, *shots]
    if args.video is not None:
        frames = [r.frame for r in motion.frames if isinstance(r.frame, MotionFrame)]
        try:
            written.append(_write_video(args.video, frames, info.fps or 60.0, music, beats))
        except VideoError as exc:
            print(f"--video skipped: {exc}")
    models = {name: _model_used(bridge, name) for name in (*reports, "speech") if name in bridge.defaults}
    if importlib.util.find_spec("matplotlib") is None:
        print(f"demo.png skipped: matplotlib is not installed ({DEMO_EXTRA})")
    else:
        labels = {name: _model_label(used) for name, used in models.items()}
        written.append(plot_run(face, motion, rig, args.out / "demo.png", labels))
    if args.preview is not None:
        if tracking:
            from bridge.cli.face_preview import write_previews

            written += write_previews(tracking[0], face_frames(args.seconds, 60.0), args.preview)
        else:
            print("--preview skipped: face tracking is off (see the warning above)")
    summary: dict[str, Any] = {name: report.to_json() for name, report in reports.items()}
    summary["speech"] = speech
    for name, used in models.items():  # which model each session ran, and whether it is trained
        summary[name]["model"] = used
    if "plot" in speech:
        written.append(Path(speech["plot"]))
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"\n{'pipeline':<8} {'frames':>7} {'lost':>5} {'p50 ms':>7} {'p99 ms':>7} {'engine ms':>9}")
    for name, r in reports.items():
        print(
            f"{name:<8} {r.frames_received:>7} {r.frames_lost:>5} {r.latency_ms_p50:>7.2f} "
            f"{r.latency_ms_p99:>7.2f} {r.engine_ms_p50:>9.2f}"
        )
    for name, used in models.items():
        print(f"{name} model: {_model_label(used)}")
    print(f"\nwrote {', '.join(map(str, [*written, args.out / 'summary.json']))}")
    if not models["face"]["trained"]:
        print(f"note: the face ran on untrained weights (its output means nothing): {how_to_get()}")
    busy = sum(e.startswith("OVERLOADED") for r in reports.values() for e in r.errors)
    if busy:
        print(f"note: the machine was too busy for real time: {busy} inputs refused as OVERLOADED (answered)")
    return 0 if all(_worked(r) for r in reports.values()) else 1


def _worked(report: HarnessReport) -> bool:
    """Frames came back, none lost or invalid, and no error but OVERLOADED: on a busy machine the bridge
    refuses inputs over a session's bound, and answers each, as the protocol says; the demo still shows
    the pipelines work, so that is a note, not a failure."""
    errors = [e for e in report.errors if not e.startswith("OVERLOADED")]
    return report.frames_received > 0 and report.frames_lost == 0 and not report.invalid_frames and not errors


def _model_used(bridge: Bridge, pipeline: str) -> dict[str, Any]:
    """The default model a pipeline's demo session ran: its name, whether trained, what it is."""
    manifest = bridge.pipelines[pipeline][bridge.defaults[pipeline]].engine.manifest
    return {"name": manifest.name, "trained": manifest.trained, "description": manifest.description}


def _model_label(used: dict[str, Any]) -> str:
    return f"{used['name']} ({'trained' if used['trained'] else 'UNTRAINED weights'})"
