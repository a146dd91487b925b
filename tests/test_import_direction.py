"""Imports point one way (docs/architecture.md): each rule below is one arrow the layering forbids.

The check reads every module's import statements (top level and inside functions, relative imports
resolved), so a lazy import that crosses a layer counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "bridge"


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules `path` imports."""
    module = ["bridge", *path.relative_to(PACKAGE).with_suffix("").parts]
    if module[-1] == "__init__":
        module.pop()
        package = module
    else:
        package = module[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                found.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                found.add(node.module)
    return found


def _modules(subpackage: str) -> dict[str, set[str]]:
    root = PACKAGE / subpackage
    return {str(p.relative_to(PACKAGE.parent)): _imports(p) for p in sorted(root.rglob("*.py"))}


def _offenders(subpackage: str, forbidden: tuple[str, ...]) -> list[str]:
    own = f"bridge.{subpackage}"
    return [
        f"{path} imports {name}"
        for path, names in _modules(subpackage).items()
        for name in sorted(names)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
        and not (name == own or name.startswith(own + "."))
    ]


_ALL = (
    "bridge.cli", "bridge.serving", "bridge.transport", "bridge.pipelines", "bridge.clients.outputs",
    "bridge.clients.harness", "bridge.runtime", "bridge.backends.tensorrt.builder", "bridge.backends.tensorrt.quantize", "bridge.models",
    "bridge.rig", "bridge.filters", "bridge.media", "bridge.clients.sources",
)  # fmt: skip


def _all_but(*allowed: str) -> tuple[str, ...]:
    return tuple(n for n in _ALL if n not in allowed)


# (package, what it must never import, why); a package may always import itself and bridge.protocol.
RULES: list[tuple[str, tuple[str, ...], str]] = [
    ("protocol", _ALL, "the wire contract is a leaf: data types and codec only"),
    (
        "runtime",
        (
            "bridge.pipelines",
            "bridge.serving",
            "bridge.transport",
            "bridge.clients.outputs",
            "bridge.cli",
            "bridge.clients.harness",
        ),
        "a backend offers capabilities (a device, state rows); pipelines own their rules",
    ),
    (
        "pipelines",
        (
            "bridge.serving",
            "bridge.transport",
            "bridge.clients.outputs",
            "bridge.cli",
            "bridge.clients.harness",
            "zmq",
            "socket",
        ),
        "pipelines know nothing of sockets or sessions' serving",
    ),
    ("transport", _all_but(), "sockets carry protocol messages only"),
    (
        "outputs",
        _all_but("bridge.rig"),
        "outputs decode frames with the protocol alone, as any client would",
    ),
    (
        "harness",
        _all_but("bridge.rig", "bridge.media"),
        "the harness is a client: it needs only the contract",
    ),
    (
        "sources",
        _all_but("bridge.clients.harness", "bridge.rig", "bridge.media"),
        "a live source is a client of the bridge, like the harness",
    ),
    ("engine_builder", ("bridge.backends.tensorrt",), "the TensorRT runtime depends on the builder, not back"),
    ("rig", _all_but(), "rig tables are facts about skeletons and faces"),
    ("filters", _all_but("bridge.rig"), "filters are maths"),
]


@pytest.mark.parametrize(("package", "forbidden", "why"), RULES, ids=[r[0] for r in RULES])
def test_imports_point_one_way(package: str, forbidden: tuple[str, ...], why: str) -> None:
    offenders = _offenders(package, forbidden)
    assert not offenders, f"{package}: {why}:\n" + "\n".join(offenders)


def test_the_checker_sees_relative_and_lazy_imports(tmp_path: Path) -> None:
    names = _imports(PACKAGE / "runtime" / "backend.py")
    assert "importlib" in names and "bridge.runtime.manifest" in names
