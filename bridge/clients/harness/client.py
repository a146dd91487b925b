"""A minimal bridge client built on the wire contract alone (bridge.protocol, pyzmq).

It is what the harness, the demo and the benchmarks use, and a reference for plugin authors. It
speaks CURVE when given the bridge's public key, and survives a bridge restart: `reconnect()` makes
fresh sockets, says hello again and reopens every session it had open (docs/protocol.md section 7).
With `resume_after_s` it follows the "resume at newest" rule of docs/protocol.md section 1.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zmq

from bridge.protocol.batch_frames import BATCH_TOPIC_PREFIX, decode_batch
from bridge.protocol.codec import ProtocolError, pack, unpack_map
from bridge.protocol.errors import ErrorCode
from bridge.protocol.frames import Frame, decode_frame
from bridge.protocol.versions import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_REQUEST_PORT,
    EVENT_TOPIC_PREFIX,
    FRAME_TOPIC_PREFIX,
    PROTOCOL_VERSION,
)


class BridgeError(Exception):
    """An `error` reply: `code` and `name` as in docs/protocol.md section 6."""

    def __init__(self, reply: dict[str, Any]) -> None:
        super().__init__(f"{reply.get('name')} ({reply.get('code')}): {reply.get('message')}")
        self.code: int = reply.get("code", 0)
        self.name: str = reply.get("name", "")
        self.reply = reply


# The "resume at newest" rule's default (docs/protocol.md section 1; the Unreal and Unity cores use it).
RESUME_AFTER_S = 0.25


@dataclass
class ReceivedFrame:
    frame: Frame
    recv_ns: int


@dataclass
class BridgeClient:
    host: str = "127.0.0.1"
    request_port: int = DEFAULT_REQUEST_PORT
    timeout_s: float = 5.0
    context: zmq.Context[zmq.Socket[bytes]] = field(default_factory=zmq.Context.instance)
    # CURVE: the bridge's public key (Z85) turns it on; the client's own pair is generated if not given.
    server_key: bytes | None = None
    client_keys: tuple[bytes, bytes] | None = None  # (public, secret), Z85
    # Resume at newest (docs/protocol.md section 1): a frame read more than this long after the previous
    # one presumes what is queued stale, drops it with the SUB socket and reads from a fresh one. Off (0)
    # by default here, unlike the plugins (RESUME_AFTER_S): tests and benchmarks count every frame.
    resume_after_s: float = 0.0

    def __post_init__(self) -> None:
        if self.server_key is not None and self.client_keys is None:
            self.client_keys = zmq.curve_keypair()
        self._ids = itertools.count(1)
        self.errors: list[dict[str, Any]] = []  # error replies to fire-and-forget inputs
        self.events: list[dict[str, Any]] = []
        self.invalid_frames: list[str] = []  # frames that broke the contract, with the reason
        self.batches_received = 0  # batch/ messages decoded into frames (docs/protocol.md 5.3)
        self.hello_reply: dict[str, Any] = {}
        self.opened: dict[str, tuple[str, dict[str, Any]]] = {}  # open sessions: id -> (pipeline, options)
        self._subscriptions: list[bytes] = []
        self._client_name = "avatar-bridge harness"
        self.resubscribes = 0  # fresh SUB sockets made by the resume-at-newest rule
        self._connect()

    def _connect(self) -> None:
        self.dealer = self._socket(zmq.DEALER)
        self.dealer.connect(f"tcp://{self.host}:{self.request_port}")
        self.sub = self._sub_socket()
        self._frames_endpoint = ""  # known after hello
        self._last_read: float | None = None  # monotonic end of the previous recv_frames

    def _sub_socket(self) -> zmq.Socket[bytes]:
        sub = self._socket(zmq.SUB)
        sub.setsockopt(zmq.RCVHWM, 100000)
        return sub

    def _socket(self, kind: int) -> zmq.Socket[bytes]:
        sock = self.context.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        if self.server_key is not None and self.client_keys is not None:
            sock.setsockopt(zmq.CURVE_SERVERKEY, self.server_key)
            sock.setsockopt(zmq.CURVE_PUBLICKEY, self.client_keys[0])
            sock.setsockopt(zmq.CURVE_SECRETKEY, self.client_keys[1])
        return sock

    # ------------------------------------------------------------ requests
    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and wait for its reply (matched by id); raise BridgeError on an error reply."""
        rid = next(self._ids)
        self.dealer.send(pack({"op": op, "id": rid, **fields}))
        deadline = time.monotonic() + self.timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.dealer.poll(int(remaining * 1000)):
                raise TimeoutError(f"no reply to '{op}' within {self.timeout_s} s")
            message = unpack_map(self.dealer.recv())
            if message.get("id") == rid:
                if message.get("op") == "error":
                    raise BridgeError(message)
                return message
            self._keep(message)

    def hello(self, client: str = "avatar-bridge harness") -> dict[str, Any]:
        self._client_name = client
        self.hello_reply = self.request("hello", v=1, client=client)
        self._frames_endpoint = f"tcp://{self.host}:{self.hello_reply['frames_port']}"
        self.sub.connect(self._frames_endpoint)
        return self.hello_reply

    def subscribe(self, prefix: bytes = FRAME_TOPIC_PREFIX) -> None:
        self.sub.setsockopt(zmq.SUBSCRIBE, prefix)
        self._subscriptions.append(prefix)

    def open(self, pipeline: str, **options: Any) -> dict[str, Any]:
        opened = self.request("open", pipeline=pipeline, options=options)
        self.opened[opened["session"]] = (pipeline, options)
        return opened

    def close_session(self, session: str) -> dict[str, Any]:
        self.opened.pop(session, None)
        return self.request("close", session=session)

    # ------------------------------------------------------------ bridge restarts
    def lost_sessions(self) -> set[str]:
        """Sessions of ours the bridge no longer knows (UNKNOWN_SESSION replies, or closed by shutdown)."""
        self.poll_replies()
        gone = {e.get("session") for e in self.errors if e.get("code") == ErrorCode.UNKNOWN_SESSION}
        gone |= {e.get("session") for e in self.events if e.get("event") == "closed"}
        return {sid for sid in self.opened if sid in gone}

    def reconnect(self, timeout_s: float = 30.0) -> dict[str, str]:
        """After a bridge restart: fresh sockets, hello, subscriptions, and every session reopened.

        Returns old session id -> new session id. Fresh sockets drop the inputs queued for the old
        bridge (they name sessions that no longer exist). Retries until the bridge answers or
        `timeout_s` passes (then TimeoutError).
        """
        self.dealer.close(0)
        self.sub.close(0)
        self._connect()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.hello(self._client_name)
                break
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise
                self.dealer.close(0)  # a request that timed out may still be queued: start clean
                self.dealer = self._socket(zmq.DEALER)
                self.dealer.connect(f"tcp://{self.host}:{self.request_port}")
        previous, self.opened = self.opened, {}
        mapping = {
            sid: self.open(pipeline, **options)["session"] for sid, (pipeline, options) in previous.items()
        }
        subscriptions, self._subscriptions = self._subscriptions, []
        for prefix in subscriptions:  # a subscription to one old session follows it to its new id
            for old, new in mapping.items():
                prefix = prefix.replace(old.encode(), new.encode())
            self.subscribe(prefix)
        self.errors = [e for e in self.errors if e.get("session") not in mapping]
        self.events = [e for e in self.events if e.get("session") not in mapping]
        return mapping

    # ------------------------------------------------------------ inputs
    # An input is built as an item (what an `input` carries besides `op` and `v`), then sent alone
    # (`send_item`) or with other sessions' items in `inputs` messages (`send_inputs`).
    def image_item(
        self, session: str, seq: int, rgb: np.ndarray, t_capture_ns: int | None = None
    ) -> dict[str, Any]:
        h, w = rgb.shape[:2]
        return _item(session, seq, t_capture_ns, kind="image", width=w, height=h, data=rgb.tobytes())

    def jpeg_item(
        self, session: str, seq: int, jpeg: bytes, t_capture_ns: int | None = None
    ) -> dict[str, Any]:
        """An image input of JPEG bytes (protocol 1.3; `bridge.vision.jpeg.encode` makes them from RGB):
        the bridge reads width and height from the JPEG's header."""
        return _item(session, seq, t_capture_ns, kind="image", format="jpeg", data=jpeg)

    def audio_item(
        self, session: str, seq: int, pcm: np.ndarray, rate: int, t_capture_ns: int | None = None
    ) -> dict[str, Any]:
        s16 = (np.clip(pcm, -1.0, 1.0) * 32767).astype("<i2")
        return _item(session, seq, t_capture_ns, kind="audio", rate=rate, format="s16le", data=s16.tobytes())

    def features_item(
        self, session: str, seq: int, rows: np.ndarray, t_capture_ns: int | None = None
    ) -> dict[str, Any]:
        rows = np.ascontiguousarray(rows, dtype="<f4")
        return _item(
            session,
            seq,
            t_capture_ns,
            kind="features",
            rows=rows.shape[0],
            cols=rows.shape[1],
            data=rows.tobytes(),
        )

    def send_image(self, session: str, seq: int, rgb: np.ndarray, t_capture_ns: int | None = None) -> None:
        self.send_item(self.image_item(session, seq, rgb, t_capture_ns))

    def send_jpeg(self, session: str, seq: int, jpeg: bytes, t_capture_ns: int | None = None) -> None:
        self.send_item(self.jpeg_item(session, seq, jpeg, t_capture_ns))

    def send_audio(
        self, session: str, seq: int, pcm: np.ndarray, rate: int, t_capture_ns: int | None = None
    ) -> None:
        self.send_item(self.audio_item(session, seq, pcm, rate, t_capture_ns))

    def send_features(
        self, session: str, seq: int, rows: np.ndarray, t_capture_ns: int | None = None
    ) -> None:
        self.send_item(self.features_item(session, seq, rows, t_capture_ns))

    def send_item(self, item: dict[str, Any]) -> None:
        """One input as an `input` message."""
        self.dealer.send(pack({"op": "input", **item}))

    def send_inputs(self, items: Sequence[dict[str, Any]]) -> None:
        """Many sessions' inputs in as few `inputs` messages as the bridge's bounds allow (item count
        and message size from its hello reply; docs/protocol.md section 4.7), or one `input` each from
        a bridge that does not announce `inputs`."""
        limit = int(self.hello_reply.get("max_input_items", 0))
        if not limit:
            for item in items:
                self.send_item(item)
            return
        budget = int(self.hello_reply.get("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES)) - 1024
        chunk: list[dict[str, Any]] = []
        size = 0
        for item in items:
            cost = len(item["data"]) + 256  # the payload plus its keys, generously
            if chunk and (len(chunk) == limit or size + cost > budget):
                self._send_chunk(chunk)
                chunk, size = [], 0
            chunk.append(item)
            size += cost
        if chunk:
            self._send_chunk(chunk)

    def _send_chunk(self, items: list[dict[str, Any]]) -> None:
        self.dealer.send(pack({"op": "inputs", "v": PROTOCOL_VERSION, "items": items}))

    # ------------------------------------------------------------ receiving
    def poll_replies(self) -> None:
        """Collect asynchronous error replies (to inputs) without blocking."""
        while self.dealer.poll(0):
            self._keep(unpack_map(self.dealer.recv()))

    def recv_frames(self, timeout_ms: int = 0, limit: int = 10000) -> list[ReceivedFrame]:
        """Every frame that has arrived (waiting up to timeout_ms for the first); events go to `events`.
        A batch message counts as its rows, each the frame it means; a malformed one is dropped whole
        (`invalid_frames`). After a pause longer than `resume_after_s` nothing queued is returned:
        the SUB socket is replaced first (`resubscribes`), and what arrives on the new one follows."""
        if (
            self.resume_after_s > 0
            and self._last_read is not None
            and time.monotonic() - self._last_read > self.resume_after_s
            and self._frames_endpoint
        ):
            self._resubscribe()
        out: list[ReceivedFrame] = []
        wait = timeout_ms
        while len(out) < limit and self.sub.poll(wait):
            topic, payload = self.sub.recv_multipart()
            now = time.time_ns()
            wait = 0
            try:
                if topic.startswith(EVENT_TOPIC_PREFIX):
                    self.events.append(unpack_map(payload))
                elif topic.startswith(BATCH_TOPIC_PREFIX):
                    out.extend(ReceivedFrame(f, now) for f in decode_batch(payload).frames())
                    self.batches_received += 1
                else:
                    out.append(ReceivedFrame(decode_frame(payload), now))
            except ProtocolError as exc:
                self.invalid_frames.append(f"{topic!r}: {exc}")
        self._last_read = time.monotonic()
        return out

    def _resubscribe(self) -> None:
        """Drop the SUB socket and all it holds (linger 0), and subscribe a fresh one to the same
        prefixes: the bridge sends it what it publishes from a few milliseconds on."""
        self.sub.close(0)
        self.sub = self._sub_socket()
        for prefix in self._subscriptions:
            self.sub.setsockopt(zmq.SUBSCRIBE, prefix)
        self.sub.connect(self._frames_endpoint)
        self.resubscribes += 1

    def _keep(self, message: dict[str, Any]) -> None:
        if message.get("op") == "error":
            self.errors.append(message)

    def close(self) -> None:
        self.dealer.close(0)
        self.sub.close(0)


def _item(session: str, seq: int, t_capture_ns: int | None, **fields: Any) -> dict[str, Any]:
    t = time.time_ns() if t_capture_ns is None else t_capture_ns
    return {"session": session, "seq": seq, "t_capture_ns": t, **fields}
