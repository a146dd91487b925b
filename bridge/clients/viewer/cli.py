"""`serve --viewer [HOST:]PORT` and `--avatar FILE` (or the config file's `viewer` and `avatar` keys):
the options, and the viewer started from them."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bridge.clients.viewer.avatar import ensure_default_avatar
from bridge.clients.viewer.process import ViewerProcess
from bridge.clients.viewer.server import ViewerConfig
from bridge.clients.viewer.vrm_check import AvatarError, load_avatar
from bridge.transport.zmq_sockets import is_loopback

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"


def parse_address(text: str) -> tuple[str, int]:
    """`PORT` (on loopback), `HOST:PORT` or `[IPv6]:PORT`; port 0 picks a free one."""
    host, _, port_text = text.rpartition(":") if not text.isdigit() else ("", "", text)
    host = host.strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': expected [HOST:]PORT") from None
    if not 0 <= port < 65536:
        raise argparse.ArgumentTypeError(f"'{text}': port {port} out of range 0..65535")
    return host, port


def add_viewer_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("live viewer (docs/viewer.md)")
    group.add_argument(
        "--viewer",
        type=parse_address,
        metavar="[HOST:]PORT",
        help="serve the live 3D viewer page on this port (loopback unless HOST is given; 0: any port)",
    )
    group.add_argument(
        "--avatar",
        type=Path,
        metavar="FILE",
        help="the viewer's avatar: a VRM 0.x or 1.0 file (default: generated)",
    )


def viewer_config(args: argparse.Namespace, frames_endpoint: str, insecure_remote: bool) -> ViewerConfig:
    """The viewer `--viewer` and `--avatar` ask for. Raises ValueError for a non-loopback address
    without `--insecure-remote`. A bad `--avatar` is logged and shown in the page; the default avatar
    stands in."""
    host, port = args.viewer
    if not is_loopback(host) and not insecure_remote:
        raise ValueError(
            f"refusing to serve the viewer on non-loopback host {host!r}: it has no authentication; "
            "pass --insecure-remote to expose it"
        )
    default = load_avatar(ensure_default_avatar())
    user, error = None, None
    if args.avatar is not None:
        try:
            user = load_avatar(args.avatar)
        except AvatarError as exc:
            error = str(exc)
            log.error("viewer: avatar refused, showing the default one: %s", error)
    return ViewerConfig(host, port, frames_endpoint, default, user, error)


def viewer_options(args: argparse.Namespace, table: Mapping[str, Any]) -> argparse.Namespace:
    """`--viewer` and `--avatar`, each falling back to the config file's key of the same name (`table`:
    the `[serve]` keys the file set). Raises ValueError for a `viewer` key that is no address."""
    address = args.viewer
    if address is None and table.get("viewer") is not None:
        try:
            address = parse_address(str(table["viewer"]))
        except argparse.ArgumentTypeError as exc:
            raise ValueError(f"config: viewer {exc}") from None
    avatar = args.avatar
    if avatar is None and table.get("avatar") is not None:
        avatar = Path(table["avatar"])
    return argparse.Namespace(viewer=address, avatar=avatar)


def start_viewer(
    args: argparse.Namespace,
    frames_endpoint: str,
    insecure_remote: bool,
    table: Mapping[str, Any] | None = None,
) -> ViewerProcess | None:
    """The viewer of `--viewer` (or the config file's `viewer` key), started in its own process, or
    None without either. Raises ValueError (see `viewer_config`), OSError when the port cannot be
    bound."""
    args = viewer_options(args, table or {})
    if args.viewer is None:
        if args.avatar is not None:
            log.warning("--avatar is for the viewer: add --viewer PORT")
        return None
    viewer = ViewerProcess(viewer_config(args, frames_endpoint, insecure_remote))
    viewer.start()
    return viewer
