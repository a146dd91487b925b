"""`serve`'s live-source options: turn `--camera/--video/--microphone/--audio` (and their config keys) into
feeders of the running bridge."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import zmq

from bridge.clients.harness.client import BridgeClient
from bridge.clients.sources.audio import audio_devices
from bridge.clients.sources.base import SourceError
from bridge.clients.sources.feeder import FeederOptions, SourceFeeder
from bridge.clients.sources.specs import SourceSpec, open_source, parse_size, voice_into_face
from bridge.clients.sources.video import camera_devices
from bridge.models.mediapipe.locate import INSTALL_COMMAND
from bridge.protocol.codec import ProtocolError
from bridge.serving.server import Bridge

__all__ = ["add_source_arguments", "device_listing", "refuse_untrained", "source_specs", "start_feeders"]

log = logging.getLogger(__name__)

# The command that gives a pipeline trained weights where the bundled ones are untrained.
_FIXES = {"face": f"`{INSTALL_COMMAND}` (the face tracker's model; docs/face-tracking.md)"}


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("live sources (each opens a session fed by the bridge itself)")
    group.add_argument(
        "--camera", action="append", metavar="N|DEVICE", help="a camera (index or device path)"
    )
    group.add_argument("--camera-size", metavar="WxH", help="requested camera size, e.g. 1280x720")
    group.add_argument("--camera-fps", type=float, help="requested camera frame rate")
    group.add_argument("--camera-format", metavar="FOURCC", help="requested camera pixel format, e.g. MJPG")
    group.add_argument(
        "--jpeg-quality",
        type=_quality,
        metavar="Q",
        help="camera and video frames go to their sessions as JPEG at this quality (1-100; default raw "
        "rgb8): a 640x480 frame is ~45 KB at 85 instead of 0.9 MB, for the decode's cost (docs/sources.md)",
    )
    group.add_argument("--video", action="append", metavar="FILE", help="a video file, paced in real time")
    group.add_argument(
        "--microphone",
        action="append",
        nargs="?",
        const="",
        metavar="DEVICE",
        help="a microphone (default input)",
    )
    group.add_argument(
        "--audio", action="append", metavar="FILE", help="a sound file (wav/flac/ogg/mp3), paced in real time"
    )
    group.add_argument("--loop", action="store_true", default=None, help="files start again at their end")
    group.add_argument(
        "--audio-pipeline",
        help="pipeline of audio sources' sessions (default motion; for a microphone beside a camera or "
        "video, speech)",
    )
    group.add_argument("--dance-style", help="style of motion sessions opened by sources")
    group.add_argument(
        "--separate-speech",
        action="store_true",
        default=None,
        help="one camera/video with one speech microphone/file: give the voice a speech session of its own "
        "instead of the mouth of the camera's face session (docs/sources.md)",
    )
    group.add_argument(
        "--body",
        action="store_true",
        help="camera and video sessions track the body, arms, hands and fingers too (face option body: true)",
    )
    group.add_argument(
        "--play", action="store_true", default=None, help="also play --audio files on the speakers"
    )
    group.add_argument(
        "--play-offset-ms", type=float, help="with --play: play this long after sending (default 0)"
    )
    group.add_argument(
        "--preview", type=Path, metavar="DIR", help="write what each source's session sees here"
    )
    group.add_argument(
        "--list-devices", action="store_true", help="list cameras and audio devices, then exit"
    )
    group.add_argument(
        "--allow-untrained",
        action="store_true",
        help="let sources drive a model with untrained weights (tests); refused by default",
    )


def _quality(text: str) -> int:
    quality = int(text)
    if not 1 <= quality <= 100:
        raise argparse.ArgumentTypeError(f"JPEG quality {quality} is not within 1..100")
    return quality


def _values(args: argparse.Namespace, table: Mapping[str, Any], key: str) -> list[str]:
    value = getattr(args, key)
    if value is None:
        value = table.get(key, [])
    return [value] if isinstance(value, str) else list(value)


def _pick(args: argparse.Namespace, table: Mapping[str, Any], key: str) -> Any:
    value = getattr(args, key)
    return value if value is not None else table.get(key)


def source_specs(args: argparse.Namespace, table: Mapping[str, Any]) -> list[SourceSpec]:
    """Every source the flags (or, where a flag is absent, the config file) name; raises ValueError."""
    size_text = _pick(args, table, "camera_size")
    size = parse_size(size_text) if size_text else None
    loop = bool(_pick(args, table, "loop"))
    play = bool(_pick(args, table, "play"))
    offset_ms = _pick(args, table, "play_offset_ms")
    audio_pipeline = _pick(args, table, "audio_pipeline")
    specs = [
        SourceSpec(
            "camera",
            device,
            size=size,
            fps=_pick(args, table, "camera_fps"),
            fourcc=_pick(args, table, "camera_format"),
        )
        for device in _values(args, table, "camera")
    ]
    specs += [SourceSpec("video", path, loop=loop) for path in _values(args, table, "video")]
    # A microphone beside a camera is the VTuber's voice; alone, what it hears makes a dance. A sound
    # file keeps the dance either way (a song), unless --audio-pipeline says otherwise.
    microphone_pipeline = audio_pipeline or ("speech" if specs else None)
    specs += [
        SourceSpec("microphone", d, pipeline=microphone_pipeline) for d in _values(args, table, "microphone")
    ]
    specs += [
        SourceSpec(
            "audio",
            path,
            pipeline=audio_pipeline,
            loop=loop,
            play_offset_s=(offset_ms or 0.0) / 1000.0 if play else None,
        )
        for path in _values(args, table, "audio")
    ]
    return specs if _pick(args, table, "separate_speech") else voice_into_face(specs)


def start_feeders(
    specs: list[SourceSpec],
    bridge: Bridge,
    *,
    style: str | None = None,
    preview: Path | None = None,
    allow_untrained: bool = False,
    body: bool = False,
    jpeg_quality: int | None = None,
) -> list[SourceFeeder]:
    """Open every source and start its feeder; a device or file that cannot be opened, or one that would
    drive untrained weights (unless `allow_untrained`), raises SourceError (after stopping those already
    started). Sessions open on the feeders' threads."""
    if not specs:
        return []
    if not allow_untrained:
        refuse_untrained(specs, bridge)
    transport = bridge.config.transport
    server_key = None
    if transport.curve_secret_key is not None:
        if transport.curve_client_keys is not None:
            raise SourceError(
                "live sources are not available with --curve-client-keys (they connect unlisted)"
            )
        server_key = zmq.curve_public(transport.curve_secret_key)
    host = "127.0.0.1" if transport.host in ("0.0.0.0", "*", "::") else transport.host
    voiced = any(spec.into_face for spec in specs)
    if voiced and not _face_takes_voice(bridge, body):
        log.warning("the face model takes no voice: the speech source opens a speech session of its own")
        specs, voiced = [replace(spec, into_face=False) for spec in specs], False
    feeders: list[SourceFeeder] = []
    try:
        for spec in sorted(specs, key=lambda s: s.into_face):  # the voice joins its face's feeder: last
            source = open_source(spec)
            if spec.into_face:
                face = next(f for f in feeders if f.source.kind == "image")
                voice = FeederOptions(
                    pipeline=face.options.pipeline,
                    open_options=face.options.open_options,
                    loop=spec.loop,
                    play_offset_s=spec.play_offset_s,
                )
                feeder = face.joined(source, voice)
            else:
                options = FeederOptions(
                    pipeline=spec.session_pipeline,
                    open_options=_open_options(spec, style, body, voiced),
                    loop=spec.loop,
                    preview_dir=preview,
                    play_offset_s=spec.play_offset_s,
                    jpeg_quality=jpeg_quality,
                )
                client = BridgeClient(
                    host=host, request_port=bridge.sockets.request_port, server_key=server_key
                )
                feeder = SourceFeeder(source, options, client, publish=bridge.sockets.publish_event)
            feeder.start()  # opens its session once the bridge's I/O loop answers
            feeders.append(feeder)
    except BaseException:
        for feeder in feeders:
            feeder.stop()
        raise
    return feeders


def refuse_untrained(specs: list[SourceSpec], bridge: Bridge) -> None:
    """Raise SourceError when a source's sessions would run a model with untrained weights (the bundled
    FLAME encoder, served when the face-tracking model is missing): the avatar would not follow the
    camera, and nothing else would say why."""
    for spec in specs:
        pipeline = spec.session_pipeline
        model = bridge.defaults.get(pipeline)
        if model is None or bridge.pipelines[pipeline][model].engine.manifest.trained:
            continue  # an unknown pipeline is refused by the bridge itself, naming it
        fix = _FIXES.get(pipeline, "serve a trained model (docs/models.md)")
        raise SourceError(
            f"{spec.kind} {spec.target} would drive {pipeline} sessions with '{model}', whose weights are "
            f"untrained (the avatar would not follow it). Fix: {fix}; "
            f"or pass --allow-untrained to run it anyway (tests)"
        )


def device_listing() -> str:
    cameras = camera_devices()
    lines = [
        "cameras: " + (", ".join(cameras) if cameras else "none listed (OpenCV takes indices 0, 1, ...)")
    ]
    try:
        lines.append("audio devices:\n" + audio_devices())
    except SourceError as exc:
        lines.append(f"audio devices: unavailable ({exc})")
    return "\n".join(lines)


def _face_takes_voice(bridge: Bridge, body: bool) -> bool:
    """Whether the default face model serves sessions opened with `speech: true` (and `body`): a model
    with no voiced variant serves such options itself, which means it refuses them."""
    model = bridge.defaults.get("face")
    if model is None:
        return False
    face = bridge.pipelines["face"][model]
    try:
        return face.variant({"speech": True, "body": body}) is not face
    except ProtocolError:
        return False


def _open_options(spec: SourceSpec, style: str | None, body: bool, voiced: bool) -> dict[str, object]:
    """A source's session options: the dance style for motion sessions; for image sources `body`, and
    `speech` when a voice feeds the same session."""
    if style and spec.session_pipeline == "motion":
        return {"style": style}
    if spec.kind not in ("camera", "video"):
        return {}
    return {key: True for key, on in (("body", body), ("speech", voiced)) if on}
