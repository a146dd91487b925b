"""ZeroMQ CURVE keys: generate and load key files, and admit only listed client keys.

Key files are libzmq's certificate format (what `zmq.auth` and czmq's zcert write): `NAME.key` holds
the public key and may be shared; `NAME.key_secret` holds both keys and must stay private. Keys are
Z85 text (40 characters).
"""

from __future__ import annotations

import os
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator


class KeyFileError(ValueError):
    """A key file is missing, unreadable or lacks the key it should hold."""


def generate_key_pair(out_dir: Path, name: str) -> tuple[Path, Path]:
    """Write `NAME.key` (public) and `NAME.key_secret` (private, mode 0600); return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    public, secret = (Path(p) for p in zmq.auth.create_certificates(out_dir, name))
    os.chmod(secret, 0o600)
    return public, secret


def load_public_key(path: Path) -> bytes:
    public, _ = _load(path)
    return public


def load_secret_key(path: Path) -> tuple[bytes, bytes]:
    """(public, secret) from a `.key_secret` file."""
    public, secret = _load(path)
    if secret is None:
        raise KeyFileError(f"{path}: holds no secret key (pass the .key_secret file, not the public .key)")
    return public, secret


def load_public_keys(directory: Path) -> frozenset[bytes]:
    """Every public key in the `*.key` files of a folder (the clients allowed to connect)."""
    if not directory.is_dir():
        raise KeyFileError(f"{directory}: not a folder of client public keys")
    keys = frozenset(load_public_key(p) for p in sorted(directory.glob("*.key")))
    if not keys:
        raise KeyFileError(f"{directory}: no *.key files (client public keys) in it")
    return keys


def _load(path: Path) -> tuple[bytes, bytes | None]:
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise KeyFileError(f"{path}: not a readable CURVE key file ({exc})") from None
    if public is None:
        raise KeyFileError(f"{path}: no public key in it")
    return public, secret


class _AllowList:
    """ZAP credentials provider: a client is admitted iff its public key is listed."""

    def __init__(self, keys: frozenset[bytes]) -> None:
        self.keys = keys

    def callback(self, domain: str, key: bytes) -> bool:
        return key in self.keys  # pyzmq passes the client's key as Z85 text


def start_authenticator(
    context: zmq.Context[zmq.Socket[bytes]], client_keys: frozenset[bytes]
) -> ThreadAuthenticator:
    """Run libzmq's ZAP handler on `context`, admitting only `client_keys` (one per context)."""
    auth = ThreadAuthenticator(context)
    auth.start()
    auth.configure_curve_callback("*", credentials_provider=_AllowList(client_keys))
    return auth
