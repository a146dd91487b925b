"""Check a plan against this machine and, when asked and a rebuild can help, rebuild it from its ONNX."""

from __future__ import annotations

import logging
from pathlib import Path

from bridge.backends.tensorrt.builder.arguments import request_from_command
from bridge.backends.tensorrt.builder.builder import build_engine
from bridge.backends.tensorrt.builder.compat import PlanMismatchError, check_plan
from bridge.backends.tensorrt.builder.host import HostSnapshot
from bridge.backends.tensorrt.builder.plan_manifest import PlanManifest

__all__ = ["checked_plan"]

log = logging.getLogger(__name__)


def checked_plan(
    plan: Path,
    host: HostSnapshot,
    *,
    rebuild_on_mismatch: bool = False,
    device: int = 0,
    check_gpu: bool = True,
) -> PlanManifest:
    """The plan's manifest once the plan can run here; raises PlanMismatchError (or PlanManifestError).

    With `rebuild_on_mismatch`, a plan whose every difference a rebuild fixes is rebuilt by running the
    command its manifest recorded (same tiers, workspace, targets; the installed TensorRT version).
    """
    pm = PlanManifest.read(plan)
    mismatches = check_plan(pm, plan, host, device=device, check_gpu=check_gpu)
    if not mismatches:
        return pm
    if not (rebuild_on_mismatch and all(m.rebuild_fixes for m in mismatches)):
        raise PlanMismatchError(plan, pm, mismatches)
    log.warning("rebuilding %s: %s", plan, "; ".join(str(m) for m in mismatches))
    request = request_from_command(pm.rebuild_command)
    rebuilt = next((r for r in build_engine(request, host=host) if r.plan.name == plan.name), None)
    if rebuilt is None:
        raise PlanMismatchError(
            plan, pm, mismatches
        )  # renamed plan: the recorded command writes another name
    again = check_plan(rebuilt.manifest, rebuilt.plan, host, device=device, check_gpu=check_gpu)
    if again:
        raise PlanMismatchError(rebuilt.plan, rebuilt.manifest, again)
    return rebuilt.manifest
