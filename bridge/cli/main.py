"""The `avatar-bridge` command: one subcommand per job, each defined beside the code it drives."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from bridge import __version__
from bridge.cli import build as build_cli
from bridge.cli import dance, demo, doctor, harness, keys, models, serve, triton_repo
from bridge.cli import outputs as outputs_cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="avatar-bridge", description="Real-time avatar inference bridge")
    parser.add_argument("--version", action="version", version=f"avatar-bridge {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    serve.add_arguments(p := sub.add_parser("serve", help="run the bridge"))
    p.set_defaults(func=serve.run)
    harness.add_arguments(
        p := sub.add_parser("harness", help="drive a running bridge and report frames, loss, latency")
    )
    p.set_defaults(func=harness.run)
    demo.add_arguments(
        p := sub.add_parser("demo", help="serve, drive a face and a dance session, write BVH + PNG")
    )
    p.set_defaults(func=demo.run)
    dance.add_arguments(
        p := sub.add_parser("dance", help="whole songs, many in one batch -> one BVH per song")
    )
    p.set_defaults(func=dance.run)
    keys.add_arguments(p := sub.add_parser("keys", help="generate a CURVE key pair"))
    p.set_defaults(func=keys.run)
    triton_repo.add_arguments(
        p := sub.add_parser("triton-repo", help="a Triton model repository from the manifests")
    )
    p.set_defaults(func=triton_repo.run)
    models.add_arguments(p := sub.add_parser("models", help="install model files the bridge never ships"))
    p.set_defaults(func=models.run)
    doctor.add_arguments(
        p := sub.add_parser(
            "doctor", help="what each use needs here (models, ports, cameras, sound, GPU) and fixes"
        )
    )
    p.set_defaults(func=doctor.run)
    outputs_cli.register_commands(sub)
    build_cli.register_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args))
    except KeyboardInterrupt:  # Ctrl-C before a command handles it itself (serve: while models load)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
