"""avatar-bridge: real-time inference that drives 3D avatars over ZeroMQ, OSC and UDP."""

from __future__ import annotations

__version__ = "0.1.0"
