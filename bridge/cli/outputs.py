"""Command-line glue for outputs: `serve` options, and the `record`, `replay` and `export` commands.

bridge/cli/main.py owns the parser; it calls `add_output_arguments` on `serve`, `build_router` once
the frames socket is bound, and `register_commands` on its subparsers. Each command sets
``func(args) -> int`` (the exit status) with `set_defaults`.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import zmq

from bridge.clients.outputs import livelink_face, vmc
from bridge.clients.outputs.bvh import write_bvh
from bridge.clients.outputs.csv_export import write_csv
from bridge.clients.outputs.process import OutputSpec, RouterProcess
from bridge.clients.outputs.recorder import LogError, Recorder, load_recordings, select_recording
from bridge.clients.outputs.replay import replay
from bridge.clients.outputs.router import Output, OutputRouter
from bridge.clients.outputs.udp import parse_host_port

log = logging.getLogger(__name__)

RECORD_RCVHWM = 1024  # a recorder keeps up easily, so let ZeroMQ hold more before dropping
PUB_JOIN_S = 0.5  # replay --pub: give subscribers time to connect before the first message
PUB_LINGER_MS = 500  # ... and to receive the last ones before the socket closes


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    rate_hz: float | None  # from a "?rate=HZ" suffix; None: --output-rate applies
    # A vmc:// destination's other options (neck=, eyes=, presets=).
    vmc_options: vmc.VmcOptions = field(default_factory=vmc.VmcOptions)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: must be > 0")
    return value


def _target(
    text: str, default_port: int, options: tuple[str, ...] = ("rate",)
) -> tuple[Target, dict[str, str]]:
    """HOST[:PORT][?key=value&...] -> the target (with its rate) and its other options, each in `options`."""
    address, _, query = text.partition("?")
    items: dict[str, str] = {}
    for pair in query.split("&") if query else []:
        key, eq, value = pair.partition("=")
        if not eq or key not in options or key in items:
            allowed = ", ".join(f"{k}=..." for k in options)
            raise argparse.ArgumentTypeError(f"'{text}': bad option '{pair}' (options: {allowed})")
        items[key] = value
    rate = _positive(items.pop("rate")) if "rate" in items else None
    try:
        host, port = parse_host_port(address, default_port)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return Target(host, port, rate), items


def _vmc_target(text: str) -> Target:
    scheme, sep, rest = text.partition("://")
    if not sep or scheme != "vmc":
        raise argparse.ArgumentTypeError(f"'{text}': expected vmc://HOST:PORT")
    target, items = _target(rest, vmc.DEFAULT_PORT, ("rate", *vmc.VmcOptions.KEYS))
    try:
        return replace(target, vmc_options=vmc.VmcOptions.from_query(items))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"'{text}': {exc}") from None


def _livelink_target(text: str) -> Target:
    return _target(text, livelink_face.DEFAULT_PORT)[0]


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """--osc, --livelink-face (both repeatable), --osc-no-bundle, --output-rate."""
    group = parser.add_argument_group("live-link outputs")
    group.add_argument(
        "--osc",
        action="append",
        default=[],
        type=_vmc_target,
        metavar="vmc://HOST:PORT[?rate=HZ&neck=0.5&eyes=on&presets=on]",
        help=f"send VMC protocol (OSC/UDP) to VSeeFace, Warudo, ... (default port {vmc.DEFAULT_PORT}); "
        "options in docs/outputs.md",
    )
    group.add_argument(
        "--livelink-face",
        action="append",
        default=[],
        type=_livelink_target,
        metavar="HOST:PORT[?rate=HZ]",
        help=f"send Live Link Face (ARKit) packets to Unreal (default port {livelink_face.DEFAULT_PORT})",
    )
    group.add_argument(
        "--osc-no-bundle",
        action="store_true",
        help="one OSC message per datagram, for receivers without bundles",
    )
    group.add_argument(
        "--output-rate",
        type=_positive,
        default=None,
        metavar="HZ",
        help="at most HZ frames/s per session for every output without its own ?rate=",
    )


def build_outputs(args: argparse.Namespace, config: Mapping[str, Any] | None = None) -> list[Output]:
    """Outputs from the flags, falling back to a config table's keys of the same names (flags win).

    Config keys: `osc` and `livelink_face` (lists of destinations as on the command line),
    `osc_no_bundle` (bool), `output_rate` (Hz). Raises ValueError naming a bad config value.
    """
    return [spec.build() for spec in output_specs(args, config)]


def output_specs(args: argparse.Namespace, config: Mapping[str, Any] | None = None) -> list[OutputSpec]:
    """What `build_outputs` builds, as picklable descriptions (for the output process)."""
    table = config or {}
    try:
        osc = args.osc or [_vmc_target(text) for text in _strings(table, "osc")]
        livelink = args.livelink_face or [_livelink_target(text) for text in _strings(table, "livelink_face")]
        rate = args.output_rate
        if rate is None and "output_rate" in table:
            rate = _positive(str(table["output_rate"]))
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"config: {exc}") from None
    bundle = not (args.osc_no_bundle or table.get("osc_no_bundle", False) is True)
    specs = [OutputSpec("vmc", t.host, t.port, t.rate_hz or rate, bundle, t.vmc_options) for t in osc]
    specs += [OutputSpec("livelink_face", t.host, t.port, t.rate_hz or rate) for t in livelink]
    return specs


def _strings(table: Mapping[str, Any], key: str) -> list[str]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise argparse.ArgumentTypeError(f"'{key}' must be a list of strings")
    return value


def build_router(
    args: argparse.Namespace, frames_endpoint: str, config: Mapping[str, Any] | None = None
) -> RouterProcess | None:
    """The outputs named by the flags (or `config`, see build_outputs) in their own process
    (bridge.clients.outputs.process), or None when none are.

    Not started: call `start()` once the bridge's PUB socket is bound (it subscribes to
    `frames_endpoint`, e.g. "tcp://127.0.0.1:5571") and `stop()` at shutdown.
    """
    specs = output_specs(args, config)
    return RouterProcess(specs, frames_endpoint) if specs else None


def register_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `record`, `replay` and `export`."""
    record = subparsers.add_parser("record", help="record a running bridge's frames and events to a log")
    record.add_argument(
        "--connect", required=True, metavar="HOST:FRAMES_PORT", help="the bridge's PUB socket"
    )
    record.add_argument("--out", required=True, metavar="FILE", help="frame log to write")
    record.add_argument(
        "--seconds", type=_positive, default=None, metavar="S", help="stop after S s (default: Ctrl-C)"
    )
    record.set_defaults(func=run_record)

    play = subparsers.add_parser("replay", help="replay a frame log at its original timing")
    play.add_argument("log", metavar="LOG")
    add_output_arguments(play)
    play.add_argument(
        "--pub", metavar="tcp://127.0.0.1:PORT", help="also republish the frames on a PUB socket"
    )
    play.add_argument("--speed", type=float, default=1.0, metavar="X", help="time scale: 2 is twice as fast")
    play.set_defaults(func=run_replay)

    export = subparsers.add_parser("export", help="export one session of a frame log to BVH or CSV")
    export.add_argument("log", metavar="LOG")
    export.add_argument("--bvh", metavar="OUT.bvh", help="motion session as BVH")
    export.add_argument("--csv", metavar="OUT.csv", help="any session as CSV, one row per frame")
    export.add_argument("--session", metavar="ID", help="which session (needed when the log has several)")
    export.set_defaults(func=run_export)


def _tcp_endpoint(host: str, port: int) -> str:
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


def run_record(args: argparse.Namespace) -> int:
    try:
        host, port = parse_host_port(args.connect)
    except ValueError as exc:
        print(f"record: --connect {exc}", file=sys.stderr)
        return 2
    endpoint = _tcp_endpoint(host, port)
    try:
        recorder = Recorder(args.out, source=endpoint)
        router = OutputRouter([recorder], endpoint, rcvhwm=RECORD_RCVHWM)
        router.start()
    except (OSError, RuntimeError) as exc:
        print(f"record: {exc}", file=sys.stderr)
        return 1
    log.info("recording %s to %s%s", endpoint, args.out, f" for {args.seconds} s" if args.seconds else "")
    done = threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: done.set())  # finish the log as on Ctrl-C
    try:
        done.wait(args.seconds)
    except KeyboardInterrupt:
        pass
    finally:
        router.stop()
    print(f"recorded {recorder.records} messages to {args.out}")
    return 0


def run_replay(args: argparse.Namespace) -> int:
    if args.speed < 0:
        print("replay: --speed must be >= 0", file=sys.stderr)
        return 2
    outputs = build_outputs(args)
    if not outputs and not args.pub:
        print("replay: nothing to replay into; give --osc, --livelink-face or --pub", file=sys.stderr)
        return 2
    router = OutputRouter(outputs) if outputs else None
    context = zmq.Context()
    pub = None
    try:
        if args.pub:
            pub = context.socket(zmq.PUB)
            pub.bind(args.pub)
            time.sleep(PUB_JOIN_S)
        if router is not None:
            router.start()
        try:
            sent = replay(args.log, router=router, pub=pub, speed=args.speed)
        except KeyboardInterrupt:
            sent = -1
    except LogError as exc:  # a damaged or hostile log: refused before anything is sent
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, zmq.ZMQError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 1
    finally:
        if router is not None:
            router.stop()
        context.destroy(linger=PUB_LINGER_MS)
    if sent >= 0:
        print(f"replayed {sent} messages from {args.log}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    if not args.bvh and not args.csv:
        print("export: give --bvh OUT.bvh and/or --csv OUT.csv", file=sys.stderr)
        return 2
    try:
        recordings = load_recordings(args.log)
        if args.bvh:
            frames = write_bvh(select_recording(recordings, args.session, "motion"), args.bvh)
            print(f"wrote {frames} BVH frames to {args.bvh}")
        if args.csv:
            rows = write_csv(select_recording(recordings, args.session, None), args.csv)
            print(f"wrote {rows} rows to {args.csv}")
    except LogError as exc:  # a damaged or hostile log
        print(f"export: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"export: {exc}", file=sys.stderr)
        return 1
    return 0
