"""Outputs fed from the bridge's frame stream: VMC (OSC), Live Link Face, recording, replay, BVH/CSV export.

They subscribe to the bridge's PUB socket through `OutputRouter` like any other client, so none of
them can slow the frame loop (docs/outputs.md).
"""

from __future__ import annotations

from bridge.clients.outputs.livelink_face import LiveLinkFaceOutput
from bridge.clients.outputs.recorder import Recorder
from bridge.clients.outputs.router import Output, OutputRouter, Received
from bridge.clients.outputs.vmc import VmcOutput

__all__ = ["LiveLinkFaceOutput", "Output", "OutputRouter", "Received", "Recorder", "VmcOutput"]
