"""mypy --strict over the TensorRT modules against stubs generated from the installed tensorrt_rtx."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorrt_rtx")
pytest.importorskip("mypy")

from training.tools.tensorrt_typestubs import generate

ROOT = Path(__file__).resolve().parents[1]
TENSORRT_CODE = ["bridge/backends/tensorrt"]


def test_tensorrt_modules_type_check_against_the_bindings(tmp_path: Path) -> None:
    stubs = generate(tmp_path / "typings")
    assert (stubs / "tensorrt_rtx_bindings" / "tensorrt_rtx.pyi").stat().st_size > 50_000
    env = os.environ | {"MYPYPATH": str(stubs)}
    # A subprocess: mypy run in-process under pytest took ten times longer here.
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), *TENSORRT_CODE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success" in run.stdout


def test_stub_fixer_defaults_only_positional_parameters() -> None:
    from training.tools.tensorrt_typestubs import _fix

    assert _fix("    def f(self, a: dict[str, int] = ..., b: int) -> None: ...") == (
        "    def f(self, a: dict[str, int] = ..., b: int = ...) -> None: ..."
    )
    kw_only = "    def g(self, a: int = ..., *, b: int) -> None: ..."
    assert _fix(kw_only) == kw_only
    assert _fix("x: int = 3") == "x: int = 3"
