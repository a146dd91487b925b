"""Shape tiers: from the model manifest or from `--profile` flags, checked against the parsed network.

A tier whose min == opt == max for every tensor is *fixed*. A plan built from a single fixed tier is
built static: the network inputs get the tier's shapes and no optimization profile is added, so the
plan has one shape and CUDA-graph capture is trivial.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bridge.backends.tensorrt.builder.dims import to_tuple
from bridge.backends.tensorrt.builder.errors import ProfileError
from bridge.backends.tensorrt.builder.flavour import Flavour
from bridge.runtime.manifest import ModelManifest, Profile

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = [
    "apply_profiles",
    "check_profiles",
    "is_fixed",
    "network_inputs",
    "parse_profile_flag",
    "select_profiles",
]

StaticShape = tuple[int, ...]
_SHAPE = re.compile(r"^\d+(x\d+)*$")


def _shape(text: str, where: str) -> StaticShape:
    if not _SHAPE.match(text):
        raise ProfileError(f"{where}: {text!r} is not a shape like 1x3x224x224")
    return tuple(int(d) for d in text.split("x"))


def parse_profile_flag(text: str, index: int) -> Profile:
    """`[NAME:]TENSOR=MIN[/OPT/MAX][,TENSOR=...]`; a single shape means min = opt = max (a fixed tier)."""
    name, sep, body = text.partition(":")
    if not sep or "=" in name:
        name, body = f"profile{index}", text
    shapes: dict[str, tuple[StaticShape, StaticShape, StaticShape]] = {}
    for part in filter(None, body.split(",")):
        tensor, eq, spec = part.partition("=")
        where = f"--profile {text!r} tensor {tensor!r}"
        if not eq or not tensor:
            raise ProfileError(f"--profile {text!r}: expected TENSOR=MIN/OPT/MAX, got {part!r}")
        dims = [_shape(s, where) for s in spec.split("/")]
        if len(dims) == 1:
            dims *= 3
        if len(dims) != 3:
            raise ProfileError(f"{where}: give one shape or three (min/opt/max), got {len(dims)}")
        shapes[tensor] = (dims[0], dims[1], dims[2])
    if not shapes:
        raise ProfileError(f"--profile {text!r}: no tensor shapes")
    return Profile(name=name, shapes=shapes)


def select_profiles(
    manifest: ModelManifest | None, flags: Sequence[str], tiers: Sequence[str]
) -> list[Profile]:
    """Flags win over the manifest; `tiers` picks manifest profiles by name (all of them when empty)."""
    if flags:
        if tiers:
            raise ProfileError("--profile and --tier cannot be combined (--tier picks manifest profiles)")
        return [parse_profile_flag(f, i) for i, f in enumerate(flags)]
    if manifest is None:
        return []
    if not tiers:
        return list(manifest.profiles)
    known = {p.name: p for p in manifest.profiles}
    missing = [t for t in tiers if t not in known]
    if missing:
        raise ProfileError(f"{manifest.name}: no tier {missing} in the manifest (it has {sorted(known)})")
    return [known[t] for t in tiers]


def is_fixed(profile: Profile) -> bool:
    return all(mn == op == mx for mn, op, mx in profile.shapes.values())


def network_inputs(network: trt.INetworkDefinition) -> dict[str, StaticShape]:
    """Input name -> shape as parsed (-1 marks a dynamic dim)."""
    inputs = [network.get_input(i) for i in range(network.num_inputs)]
    return {t.name: to_tuple(t.shape) for t in inputs}


def check_profiles(profiles: Sequence[Profile], inputs: dict[str, StaticShape]) -> None:
    """Every problem of every profile at once, each naming the profile, tensor and dim."""
    problems: list[str] = []
    dynamic = [n for n, s in inputs.items() if any(d < 0 for d in s)]
    if dynamic and not profiles:
        problems.append(f"the model has dynamic inputs {dynamic}; give shape tiers (--profile or a manifest)")
    for p in profiles:
        for name in dynamic:
            if name not in p.shapes:
                problems.append(f"profile {p.name!r}: no shape range for dynamic input {name!r}")
        for name, (mn, op, mx) in p.shapes.items():
            where = f"profile {p.name!r} tensor {name!r}"
            model = inputs.get(name)
            if model is None:
                problems.append(f"{where}: the model has no such input (inputs: {sorted(inputs)})")
                continue
            if not len(mn) == len(op) == len(mx) == len(model):
                problems.append(
                    f"{where}: rank {len(mn)}, the model's input has rank {len(model)} {list(model)}"
                )
                continue
            for axis, (a, b, c, m) in enumerate(zip(mn, op, mx, model, strict=True)):
                if not 1 <= a <= b <= c:
                    problems.append(f"{where}: dim {axis} needs 1 <= min <= opt <= max, got {a}/{b}/{c}")
                elif m >= 0 and not a == c == m:
                    span = str(a) if a == c else f"{a}..{c}"
                    problems.append(f"{where}: dim {axis} is {span} but the model fixes it to {m}")
    if problems:
        raise ProfileError("shape tiers do not fit the model:\n  " + "\n  ".join(problems))


def apply_profiles(
    flavour: Flavour,
    builder: trt.Builder,
    network: trt.INetworkDefinition,
    config: trt.IBuilderConfig,
    profiles: Sequence[Profile],
) -> bool:
    """Add the tiers to `config`; returns True when the plan is static (one fixed tier, or no tiers)."""
    if len(profiles) == 1 and is_fixed(profiles[0]):
        shapes = profiles[0].shapes
        for i in range(network.num_inputs):
            tensor = network.get_input(i)
            if tensor.name in shapes:
                tensor.shape = flavour.trt.Dims(shapes[tensor.name][0])
        return True
    if not profiles:
        return True  # check_profiles has made sure the model has no dynamic input
    for p in profiles:
        opt_profile = builder.create_optimization_profile()
        for name, (mn, op, mx) in p.shapes.items():
            opt_profile.set_shape(name, flavour.trt.Dims(mn), flavour.trt.Dims(op), flavour.trt.Dims(mx))
        config.add_optimization_profile(opt_profile)
    return False
