"""The `avatar-bridge` command."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from bridge import __version__
from bridge.cli import harness, serve


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="avatar-bridge", description="Real-time avatar inference bridge")
    parser.add_argument("--version", action="version", version=f"avatar-bridge {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    serve.add_arguments(sub.add_parser("serve", help="run the bridge"))
    harness.add_arguments(sub.add_parser("harness", help="drive a running bridge and report frames, loss, latency"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    handlers = {"serve": serve.run, "harness": harness.run}
    return handlers[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
