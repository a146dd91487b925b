"""The layer contract (pyproject.toml's [tool.importlinter], docs/architecture.md): imports point down.

import-linter checks every import statement, in-function ones included. Two things it cannot see are
checked here: names of modules in strings (the backend registry's "module:Class", a manifest's torch
module) and cycles between packages of one layer.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import grimp
import pytest
import tomllib

from tests.conftest import MODELS

ROOT = Path(__file__).resolve().parents[1]
TARGET = re.compile(r"^(bridge(?:\.\w+)+):\w+$")


def _layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [[p.strip() for p in re.split(r"[|:]", layer)] for layer in contract["layers"]]


def _layer_of(module: str, layers: list[list[str]]) -> int | None:
    for i, packages in enumerate(layers):
        if any(module == p or module.startswith(p + ".") for p in packages):
            return i
    return None


def _package(module: str) -> str:
    """The unit a cycle is counted between: bridge.X, or bridge.X.Y inside the folders of folders."""
    parts = module.split(".")
    deep = len(parts) > 3 and parts[1] in {"backends", "serving", "clients", "models"}
    return ".".join(parts[: 3 if deep else 2])


def test_the_contract_holds() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def _string_targets() -> list[tuple[str, str]]:
    """(module holding the string, module it names) for every "bridge.x:Name" in code and manifests."""
    found = []
    for path in sorted((ROOT / "bridge").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = TARGET.match(node.value)
                if match:
                    found.append((module, match.group(1)))
    for manifest in sorted(MODELS.glob("*.manifest.json")):
        for match in re.finditer(r'"(bridge(?:\.\w+)+):\w+"', manifest.read_text(encoding="utf-8")):
            found.append(("bridge.backends", match.group(1)))  # the torch backend reads them
    return found


def test_strings_that_name_modules_point_down() -> None:
    layers = _layers()
    targets = _string_targets()
    assert any(t.startswith("bridge.backends.onnxruntime") for _, t in targets)  # the registry is seen
    up = []
    for holder, target in targets:
        here, there = _layer_of(holder, layers), _layer_of(target, layers)
        assert there is not None, f"{holder} names {target}, which no layer holds"
        if here is not None and there < here:
            up.append(f"{holder} names {target}")
    assert not up, up


def test_no_package_cycles() -> None:
    graph = grimp.build_graph("bridge", cache_dir=None)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = _package(module), _package(imported)
            if a != b and b != "bridge" and not a.startswith(b + ".") and not b.startswith(a + "."):
                edges.setdefault(a, set()).add(b)
    cycles = []
    for start in edges:  # a path from a package's neighbour back to it is a cycle
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in edges.get(node, ()):
                if nxt == start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert not cycles, sorted(set(cycles))[:10]


def test_every_package_is_in_a_layer() -> None:
    layers = _layers()
    packages = {
        ".".join(p.relative_to(ROOT).parts)
        for p in (ROOT / "bridge").iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    }
    modules = {f"bridge.{p.stem}" for p in (ROOT / "bridge").glob("*.py")}
    modules -= {"bridge.__init__", "bridge.__main__"}
    assert all(_layer_of(m, layers) is not None for m in packages | modules), sorted(
        m for m in packages | modules if _layer_of(m, layers) is None
    )


@pytest.mark.parametrize("first, second", list(pairwise(["bridge.cli", "bridge.serving", "bridge.protocol"])))
def test_layers_are_ordered_as_the_docs_draw_them(first: str, second: str) -> None:
    layers = _layers()
    one, two = _layer_of(first, layers), _layer_of(second, layers)
    assert one is not None and two is not None and one < two
