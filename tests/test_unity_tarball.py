"""The Unity package's UPM tarball (scripts/pack_unity.sh, `npm pack`): what Package Manager's "Add package
from tarball..." installs must be the package as git holds it, every asset with its `.meta`, nothing else.
An install from disk or from a git URL reads the same tracked folder, so the `.meta` and manifest checks hold
for those too (a git install is immutable: Unity cannot add a missing `.meta` there)."""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "unity_package"
# Folders only CI uses (C# test tooling, Unity API stubs): left out of the tarball.
CI_ONLY = ("Tests/Tools~/", "Tests/UnityStub~/")


def _tracked() -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "unity_package"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    return {path.removeprefix("unity_package/") for path in listed.split("\0") if path}


def _hidden_from_unity(path: PurePosixPath) -> bool:
    """Unity imports no file or folder whose name ends in `~` or starts with `.`: those need no `.meta`."""
    return any(part.endswith("~") or part.startswith(".") for part in path.parts)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("upm")
    script = ROOT / "scripts" / "pack_unity.sh"
    packed = subprocess.run(["bash", str(script), str(out)], check=True, capture_output=True, text=True)
    path = Path(packed.stdout.strip().splitlines()[-1])
    assert path.parent == out and path.name.endswith(".tgz")
    with tarfile.open(path, "r:gz") as tar:
        members = tar.getmembers()
        assert all(m.name.startswith("package/") for m in members), "npm's layout: all under package/"
        return {
            m.name.removeprefix("package/"): tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in members
            if m.isfile()
        }


def test_holds_exactly_the_tracked_files_less_the_ci_tooling(tarball: dict[str, bytes]) -> None:
    expected = {p for p in _tracked() if not p.startswith(CI_ONLY)}
    assert set(tarball) - expected == set(), "files that git does not track under unity_package/"
    assert expected - set(tarball) == set(), "tracked files the tarball lacks"
    for path in expected:
        assert tarball[path] == (PACKAGE / path).read_bytes(), path


def test_every_asset_and_folder_has_its_meta_and_no_meta_is_orphaned(tarball: dict[str, bytes]) -> None:
    files = {PurePosixPath(p) for p in tarball}
    folders = {parent for f in files for parent in f.parents if parent != PurePosixPath(".")}
    assets = {p for p in files | folders if p.suffix != ".meta" and not _hidden_from_unity(p)}
    metas = {p for p in files if p.suffix == ".meta"}
    missing = sorted(str(a) for a in assets if a.with_name(a.name + ".meta") not in files)
    assert missing == [], f"assets without a .meta (an immutable package cannot get one): {missing}"
    orphans = sorted(str(m) for m in metas if m.with_suffix("") not in files | folders)
    assert orphans == [], f".meta files without their asset: {orphans}"


def test_carries_the_manifest_its_samples_and_every_assembly(tarball: dict[str, bytes]) -> None:
    manifest = json.loads(tarball["package.json"])
    assert manifest == json.loads((PACKAGE / "package.json").read_bytes())
    assert manifest["name"] == "com.avatarbridge.unity"
    # What Package Manager requires of a manifest: a lower-case name, a semver, a Unity version.
    assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*", manifest["name"])
    assert re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", manifest["version"])
    assert re.fullmatch(r"\d{4}\.\d+", manifest["unity"])
    for sample in manifest["samples"]:
        assert any(p.startswith(sample["path"] + "/") for p in tarball), sample["path"]
    asmdefs = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.asmdef"))
    assert "Runtime/Core/AvatarBridge.Core.asmdef" in asmdefs
    for asmdef in asmdefs:
        assert asmdef in tarball and asmdef + ".meta" in tarball, asmdef
        json.loads(tarball[asmdef])  # Unity refuses an assembly definition that is not JSON
