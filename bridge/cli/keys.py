"""`avatar-bridge keys`: generate a CURVE key pair (the bridge's, or a client's) for remote use."""

from __future__ import annotations

import argparse
from pathlib import Path

from bridge.transport.curve import generate_key_pair, load_public_key


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", type=Path, required=True, help="folder to write NAME.key and NAME.key_secret into"
    )
    parser.add_argument(
        "--name", default="server", help="file name stem (default: server; use one per client)"
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing pair")


def run(args: argparse.Namespace) -> int:
    existing = [
        p for p in (args.out / f"{args.name}.key", args.out / f"{args.name}.key_secret") if p.exists()
    ]
    if existing and not args.force:
        print(f"refusing to overwrite {existing[0]} (pass --force)")
        return 2
    public, secret = generate_key_pair(args.out, args.name)
    print(f"public key  {public}  (give this to clients: {load_public_key(public).decode()})")
    print(f"secret key  {secret}  (keep private; mode 0600)")
    print(
        f"serve with: avatar-bridge serve --curve-secret-key {secret}"
        if args.name == "server"
        else f"admit with: avatar-bridge serve --curve-client-keys {args.out} ..."
    )
    return 0
