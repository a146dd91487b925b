"""Type stubs for `tensorrt_rtx`, generated from the installed bindings, for mypy.

tensorrt_rtx ships no type information (no py.typed, no .pyi), and `tensorrt-stubs` (TensorRT 10) cannot be
installed here: its build step downloads. The bindings are pybind11 modules whose docstrings carry full
signatures, so mypy's own `stubgen` writes accurate stubs from them. Two fixes make them usable: each file
is marked `# mypy: ignore-errors` (generated stubs are not --strict clean, and they are not our code), and
a parameter without a default that follows defaulted ones (a docstring slip in the bindings) gets `= ...`.

    python -m training.tools.tensorrt_typestubs typings/ && MYPYPATH=typings mypy bridge

Our TensorRT code imports `tensorrt_rtx` under TYPE_CHECKING only; full TensorRT has the same class names,
so one set of stubs checks both flavours' code paths.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["generate"]


def _split(params: str) -> list[str]:
    """Split a parameter list at top-level commas (annotations like dict[str, int] hold commas)."""
    out: list[str] = []
    current, depth = "", 0
    for ch in params:
        depth += (ch in "[(") - (ch in "])")
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
    return [*out, current.strip()] if current.strip() else out


def _fix(line: str) -> str:
    """Give `= ...` to a positional parameter that follows a defaulted one (invalid Python otherwise)."""
    if not line.lstrip().startswith("def ") or "= ..." not in line:
        return line
    start = line.index("(")
    end = line.rindex(") ->") if ") ->" in line else line.rindex(")")
    params, defaulted = [], False
    for p in _split(line[start + 1 : end]):
        if p.startswith("*"):
            defaulted = False  # keyword-only parameters may lack defaults
        elif "=" in p:
            defaulted = True
        elif defaulted:
            p += " = ..."
        params.append(p)
    return line[: start + 1] + ", ".join(params) + line[end:]


def generate(out: Path) -> Path:
    """Write `tensorrt_rtx` and `tensorrt_rtx_bindings` stubs under `out`; returns `out`."""
    from mypy.stubgen import main as stubgen  # mypy is compiled: no `python -m mypy.stubgen`

    stubgen(["-q", "-p", "tensorrt_rtx_bindings", "-o", str(out)])
    (out / "tensorrt_rtx").mkdir(parents=True, exist_ok=True)
    (out / "tensorrt_rtx" / "__init__.pyi").write_text(
        "from tensorrt_rtx_bindings import *\nfrom tensorrt_rtx_bindings import __version__ as __version__\n"
    )
    for pyi in out.rglob("*.pyi"):
        lines = [_fix(line) for line in pyi.read_text().splitlines()]
        pyi.write_text("# mypy: ignore-errors\n" + "\n".join(lines) + "\n")
    return out


if __name__ == "__main__":
    print(generate(Path(sys.argv[1] if len(sys.argv) > 1 else "typings")))  # untested: tests call generate()
