"""`build-engine` arguments <-> BuildRequest. One parser serves the CLI and `--rebuild-on-mismatch`,
which re-runs the command recorded in a plan manifest, so the recorded command is exactly what runs."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

from bridge.backends.tensorrt.builder.builder import BuildRequest
from bridge.backends.tensorrt.builder.flavour import FLAVOUR_ALIASES

__all__ = [
    "add_build_arguments",
    "parse_bytes",
    "parse_compute_capability",
    "request_from_args",
    "request_from_command",
]

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_bytes(text: str) -> int:
    """ "512M", "2G", "1048576" -> bytes."""
    m = re.fullmatch(r"(\d+)\s*([kmg]?)i?b?", text.strip().lower())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 512M or 2G")
    return int(m.group(1)) * _UNITS[m.group(2)]


def parse_compute_capability(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)\.(\d)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a compute capability like 8.6")
    return int(m.group(1)), int(m.group(2))


def add_build_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", type=Path, help="the model's ONNX file or its .manifest.json")
    p.add_argument(
        "--out", type=Path, help="directory for the plan and its manifest (default: beside the ONNX)"
    )
    p.add_argument(
        "--flavour",
        default="auto",
        choices=sorted(FLAVOUR_ALIASES),
        help="TensorRT flavour; auto prefers full tensorrt, then tensorrt_rtx",
    )
    p.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="[NAME:]TENSOR=MIN[/OPT/MAX],...",
        help="a shape tier instead of the manifest's, e.g. b4:image=1x3x224x224/4x3x224x224/4x3x224x224",
    )
    p.add_argument("--tier", action="append", default=[], help="build only these manifest tiers (repeatable)")
    p.add_argument(
        "--per-tier", action="store_true", help="one plan per tier (a fixed tier becomes a static plan)"
    )
    p.add_argument("--workspace", type=parse_bytes, help="builder workspace memory-pool limit, e.g. 1G")
    p.add_argument("--timing-cache", type=Path, help="persistent timing cache file (tensorrt only)")
    p.add_argument(
        "--compute-capability",
        type=parse_compute_capability,
        action="append",
        help="tensorrt_rtx: compile for this GPU compute capability (repeatable; default: Ampere and later)",
    )
    p.add_argument("--opt-level", type=int, choices=range(6), help="builder optimization level 0-5")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def request_from_args(ns: argparse.Namespace) -> BuildRequest:
    return BuildRequest(
        source=ns.model,
        out_dir=ns.out,
        flavour=ns.flavour,
        profile_flags=tuple(ns.profile),
        tiers=tuple(ns.tier),
        per_tier=ns.per_tier,
        workspace_bytes=ns.workspace,
        timing_cache=ns.timing_cache,
        compute_capabilities=tuple(ns.compute_capability) if ns.compute_capability else None,
        optimization_level=ns.opt_level,
        progress=not ns.no_progress,
    )


def request_from_command(command: Sequence[str]) -> BuildRequest:
    """The BuildRequest of a recorded `avatar-bridge build-engine ...` command."""
    if list(command[:2]) != ["avatar-bridge", "build-engine"]:
        raise ValueError(f"not a build-engine command: {list(command)}")
    parser = argparse.ArgumentParser(prog="avatar-bridge build-engine")
    add_build_arguments(parser)
    return request_from_args(parser.parse_args(list(command[2:])))
