"""Outputs fed from the bridge's frame stream: VMC (OSC), Live Link Face, recording, replay, BVH/CSV export.

They subscribe to the bridge's PUB socket through `OutputRouter` like any other client, so none of
them can slow the frame loop (docs/outputs.md).
"""

from __future__ import annotations

from bridge.outputs.livelink_face import LiveLinkFaceOutput
from bridge.outputs.recorder import Recorder
from bridge.outputs.router import Output, OutputRouter, Received
from bridge.outputs.vmc import VmcOutput

__all__ = ["LiveLinkFaceOutput", "Output", "OutputRouter", "Received", "Recorder", "VmcOutput"]
