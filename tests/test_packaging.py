"""The package as users get it: a wheel, built from the sdist, installed into a fresh virtual environment,
runs `avatar-bridge demo` and serves a harness session from a folder outside the checkout; and the code
stays importable on Windows and macOS (no POSIX-only module or call outside a guard).

Offline and lean (tests send no traffic off loopback, so pip may not download anything): the wheel goes
in with `--no-deps --no-index`, and its dependencies come from this environment through a folder that
holds only the distributions the wheel declares (core + the `demo` extra, with their own requirements,
as symlinks) — an import the wheel does not declare fails here as it would for a user. Slow-ish: one
module fixture builds and installs once (~10 s), the demo and the serve/harness run take ~10-20 s each.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bridge"
DIST = "avatar-bridge"
EXTRAS = ("demo",)  # what scripts/demo.sh installs

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the deps view uses symlinks; runs on Linux/macOS")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    sdist: Path
    venv: Path
    python: Path
    env: dict[str, str]
    elsewhere: Path  # a working folder outside the checkout

    def command(self, *args: str) -> list[str]:
        scripts = self.venv / ("Scripts" if os.name == "nt" else "bin")
        return [str(scripts / "avatar-bridge"), *args]


def _build(src: Path, hook: str, out: Path) -> Path:
    code = f"from hatchling.build import {hook}; print({hook}({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True, check=True)
    return out / done.stdout.strip().splitlines()[-1]


def _requirement_closure(wheel: Path) -> set[str]:
    """Distributions the wheel's declared requirements (core + EXTRAS) pull in, recursively, as installed
    here (names canonical)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
        declared = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]
    wanted: set[str] = set()
    todo = [(r, EXTRAS) for r in declared]
    while todo:
        text, extras = todo.pop()
        req = Requirement(text)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (*extras, "")):
            continue
        name = canonicalize_name(req.name)
        if name in wanted:
            continue
        wanted.add(name)
        todo += [(r, tuple(req.extras)) for r in (md.requires(name) or [])]
    return wanted


def _deps_view(names: set[str], into: Path) -> None:
    """Symlink the top-level files of each named distribution (as installed here) into `into`."""
    into.mkdir()
    for name in sorted(names):
        dist = md.distribution(name)
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            if (base / top).exists() and not (into / top).exists():
                (into / top).symlink_to(base / top)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"  # a copy: building in the shared checkout would race other runs
    src.mkdir()
    for name in ("pyproject.toml", "README.md", ".gitignore"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "cache", "*.pyc")
    for name in ("bridge", "models"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    sdist = _build(src, "build_sdist", tmp / "dist")
    with tarfile.open(sdist) as tar:
        # Our own sdist; the "data" filter where this Python has it (3.11.4+; Debian 12 ships 3.11.2).
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(tmp / "unpacked", **safe)  # type: ignore[arg-type]
    wheel = _build(next((tmp / "unpacked").iterdir()), "build_wheel", tmp / "dist")

    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(wheel)], check=True, env={**os.environ, "PIP_NO_INPUT": "1"})
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    _deps_view(_requirement_closure(wheel) - {canonicalize_name(DIST)}, tmp / "deps")
    (Path(purelib) / "_deps_view.pth").write_text(str(tmp / "deps") + "\n")

    ours = ("AVATAR_BRIDGE_", "PYTHON", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    env["PATH"] = str(python.parent) + os.pathsep + env.get("PATH", "")
    env["XDG_CACHE_HOME"] = str(tmp / "user-cache")  # no models from this user's own cache
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    yield Installed(wheel, sdist, venv, python, env, elsewhere)


def test_wheel_and_sdist_carry_the_models(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as z:
        names = set(z.namelist())
    with tarfile.open(installed.sdist) as tar:
        sdist = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    committed = subprocess.run(
        ["git", "ls-files", "models/*.onnx", "models/*.manifest.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert committed
    for path in committed:
        assert "bridge/bundled_models/" + path.removeprefix("models/") in names, f"wheel lacks {path}"
        assert path in sdist, f"sdist lacks {path}"
    assert "bridge/py.typed" in names and not any("/cache/" in n for n in names)


def test_installed_package_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    code = (
        "import bridge, bridge.paths as p, importlib.util as u; print(bridge.__file__); "
        "print(p.default_models_dir()); print(u.find_spec('torch') is None)"
    )
    out = subprocess.run(
        [str(installed.python), "-c", code],
        cwd=installed.elsewhere,
        env=installed.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for line in out[:2]:
        assert Path(line).resolve().is_relative_to(installed.venv.resolve()), line
    assert sorted(p.name for p in Path(out[1]).glob("*.manifest.json"))
    assert out[2] == "True", "an undeclared distribution (torch) is importable: the deps view leaks"


def test_installed_demo_runs(installed: Installed) -> None:
    out = installed.elsewhere / "demo-out"
    done = subprocess.run(
        installed.command("demo", "--seconds", "1", "--out", str(out)),
        cwd=installed.elsewhere,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in ("dance.bvh", "demo.png", "summary.json"):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == {"face", "motion", "speech"}


def test_installed_serve_answers_a_harness_session(installed: Installed) -> None:
    ports_file = installed.elsewhere / "ports.json"
    serve = subprocess.Popen(
        installed.command(
            "serve", "--request-port", "0", "--frames-port", "0", "--ports-file", str(ports_file)
        ),
        cwd=installed.elsewhere,
        env=installed.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (ports_file.exists() and ports_file.read_text().strip()):
            assert serve.poll() is None, serve.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "serve did not write its ports"
            time.sleep(0.1)
        ports = json.loads(ports_file.read_text())
        report = installed.elsewhere / "harness.json"
        done = subprocess.run(
            installed.command(
                "harness",
                "--pipeline",
                "motion",
                "--seconds",
                "1",
                "--request-port",
                str(ports["request_port"]),
                "--json",
                str(report),
            ),
            cwd=installed.elsewhere,
            env=installed.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "frames_received" in report.read_text()
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()


# --- portability: what Windows (and some of it macOS) lacks, used only behind a guard ---------------------

POSIX_ONLY_MODULES = frozenset(
    {
        "fcntl",
        "resource",
        "termios",
        "tty",
        "pty",
        "pwd",
        "grp",
        "posix",
        "syslog",
        "crypt",
        "spwd",
        "nis",
        "curses",
        "readline",
        "ossaudiodev",
        "_posixsubprocess",
        "_posixshmem",
    }
)
WINDOWS_ONLY_MODULES = frozenset({"msvcrt", "winreg", "winsound", "_winapi"})
POSIX_ONLY_OS = frozenset(
    {
        "fork",
        "forkpty",
        "getuid",
        "geteuid",
        "getgid",
        "getegid",
        "setsid",
        "setpgrp",
        "getpgid",
        "killpg",
        "uname",
        "nice",
        "sched_getaffinity",
        "sched_setaffinity",
        "getloadavg",
        "mkfifo",
        "sync",
        "chown",
    }
)
# The signals every platform's `signal` module has; others (SIGHUP, SIGKILL, SIGUSR1...) are POSIX-only.
PORTABLE_SIGNALS = frozenset({"SIGABRT", "SIGFPE", "SIGILL", "SIGINT", "SIGSEGV", "SIGTERM"})


def _is_guard(node: ast.AST) -> bool:
    """A branch that only runs where its platform allows: `if sys.platform/os.name/hasattr(...)`, or a
    `try` that handles ImportError/AttributeError/OSError."""
    if isinstance(node, ast.If):
        text = ast.unparse(node.test)
        return any(word in text for word in ("sys.platform", "os.name", "hasattr(", "platform.system"))
    if isinstance(node, ast.Try):
        names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
        handled = ("ImportError", "AttributeError", "OSError", "Exception")
        return any(n in text for text in names for n in handled)
    return False


def _portability_problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found: list[str] = []

    def visit(node: ast.AST, guarded: bool, in_function: bool) -> None:
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import | ast.ImportFrom) and not guarded and not in_function:
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] in POSIX_ONLY_MODULES | WINDOWS_ONLY_MODULES:
                    found.append(f"{where}: top-level import of {module}")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and not guarded:
            if node.value.id == "os" and node.attr in POSIX_ONLY_OS:
                found.append(f"{where}: os.{node.attr} (POSIX only)")
            posix_signal = (
                node.attr.startswith("SIG") and "_" not in node.attr and node.attr not in PORTABLE_SIGNALS
            )
            if node.value.id == "signal" and posix_signal:
                found.append(f"{where}: signal.{node.attr} (not on Windows)")
        for child in ast.iter_child_nodes(node):
            visit(
                child,
                guarded or _is_guard(node),
                in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda),
            )

    visit(tree, False, False)
    return found


def test_package_is_portable() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50
    problems = [p for f in files for p in _portability_problems(f)]
    assert not problems, "guard these (Windows/macOS run the bridge too):\n" + "\n".join(problems)


def test_portability_scan_sees_what_it_should(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    cases = {
        "import fcntl": True,
        "from resource import getrlimit": True,
        "def f():\n    import fcntl": False,  # imported where it is used: fine on import
        "try:\n    import fcntl\nexcept ImportError:\n    fcntl = None": False,
        "import signal\nsignal.signal(signal.SIGHUP, print)": True,
        "import signal, sys\nif sys.platform != 'win32':\n    signal.signal(signal.SIGHUP, print)": False,
        "import signal\nsignal.signal(signal.SIGTERM, print)": False,
        "import os\nos.fork()": True,
    }
    for text, flagged in cases.items():
        probe.write_text(text + "\n")
        assert bool(_portability_problems(probe)) == flagged, text


def test_user_files_go_to_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bridge.paths import plan_dir, user_cache_dir

    monkeypatch.setenv("AVATAR_BRIDGE_CACHE", str(tmp_path / "cache"))
    assert user_cache_dir() == tmp_path / "cache"
    assert plan_dir(tmp_path / "mine.onnx", "ab" * 32) == tmp_path.resolve()  # the user's folder: beside
    installed = PACKAGE / "bundled_models" / "dance_lstm.onnx"  # where a wheel puts the models
    assert plan_dir(installed, "ab" * 32) == tmp_path / "cache" / "plans" / ("ab" * 8)
