"""Protocol version and default endpoints."""

from __future__ import annotations

PROTOCOL_VERSION = 1
DEFAULT_REQUEST_PORT = 5570
DEFAULT_FRAMES_PORT = 5571
# Largest inbound message the bridge accepts by default: a 1920x1080 RGB8 frame plus headroom.
DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024
SESSION_ID_LENGTH = 16  # lowercase hex; fixed length so topic prefixes never collide
FRAME_TOPIC_PREFIX = b"frame/"
EVENT_TOPIC_PREFIX = b"event/"
