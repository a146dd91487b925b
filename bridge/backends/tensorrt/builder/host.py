"""A snapshot of what this machine offers a TensorRT plan: flavours, OS, driver, GPUs."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field

from bridge.backends.tensorrt.builder.flavour import installed_flavours
from bridge.runtime.cuda import CudaEnvironment, DeviceInfo, query_environment

__all__ = ["HostSnapshot", "snapshot"]


@dataclass(frozen=True)
class HostSnapshot:
    """Plain data so the compatibility check can be tested with any machine described by hand."""

    flavours: dict[str, str] = field(default_factory=dict)  # flavour name -> version
    system: str = ""  # "Linux", "Windows"
    machine: str = ""  # "x86_64"
    cuda: CudaEnvironment = field(default_factory=CudaEnvironment)

    def device(self, index: int = 0) -> DeviceInfo | None:
        return next((d for d in self.cuda.devices if d.index == index), None)


def snapshot() -> HostSnapshot:
    return HostSnapshot(
        flavours={f.name: f.version for f in installed_flavours()},
        system=platform.system(),
        machine=platform.machine().lower(),
        cuda=query_environment(),
    )
