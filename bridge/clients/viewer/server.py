"""`serve --viewer`: the live viewer's HTTP pages and WebSocket feed (docs/protocol.md section 9).

One thread runs an asyncio loop with two parts:
- a SUB socket on the bridge's frames endpoint, a client like any other (`frame/` and `event/`), with
  a small receive high-water mark: when this thread falls behind, ZeroMQ drops frames for it and the
  bridge never waits;
- a `websockets` server that serves the page, the avatar files and `/ws`.
Each browser connection holds at most `FRAMES_PER_SESSION` unsent frames per session, enough to ride
out a short stall of this loop without a gap; past that the oldest goes (latest wins), and a bounded
queue of opened/closed notices; its sender task writes them
while the socket has room (`write_limit`). A browser that stops reading holds only that: its notices
overflow or a send times out, and it is disconnected. Connections are limited in number; requests
and incoming messages in size.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import zmq
import zmq.asyncio
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from bridge.clients.outputs.session import ObservedSessions, SessionInfo
from bridge.clients.viewer.messages import (
    VIEWER_PROTOCOL,
    closed_message,
    frame_message,
    opened_message,
    to_text,
)
from bridge.clients.viewer.vrm_check import Avatar
from bridge.protocol import ProtocolError, decode_frame
from bridge.protocol.events import decode_event
from bridge.protocol.versions import EVENT_TOPIC_PREFIX, FRAME_TOPIC_PREFIX

log = logging.getLogger(__name__)
# The library's own lines (each connection, each close) only when something goes wrong.
_WEBSOCKETS_LOG = logging.getLogger("bridge.clients.viewer.websockets")
_WEBSOCKETS_LOG.setLevel(logging.WARNING)

DEFAULT_MAX_CONNECTIONS = 16
FRAMES_PER_SESSION = 8  # unsent frames a connection keeps per session (130 ms at 60 fps) before dropping
SUB_RCVHWM = 256  # messages; a few frames per session before ZeroMQ drops for this reader
WRITE_LIMIT = 256 * 1024  # bytes buffered per connection before its sender waits
MAX_NOTICES = 1024  # opened/closed notices queued per connection; past it the browser is too slow
SEND_TIMEOUT_S = 5.0  # a send that waits longer than this disconnects that browser
MAX_INCOMING = 4096  # bytes: the page sends only short error reports
MAX_REPORTS = 20  # error reports logged per connection
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
_SECURITY_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("Cache-Control", "no-store"),
    # three.js makes textures from blob: URLs; everything else comes from this server.
    (
        "Content-Security-Policy",
        "default-src 'self'; img-src 'self' blob: data:; connect-src 'self' ws: wss: blob: data:; "
        "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    ),
)


def static_dir() -> Path:
    """The built page (viewer/ bundled by esbuild; the wheel carries it)."""
    return Path(str(resources.files("bridge.clients.viewer") / "static"))


@dataclass(eq=False)  # compared and hashed by identity: a set of connections
class _Client:
    connection: ServerConnection
    notices: deque[str] = field(default_factory=deque)
    latest: dict[str, deque[str]] = field(default_factory=dict)  # session -> its newest unsent frames
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    frames_sent: int = 0
    frames_replaced: int = 0
    reports: int = 0


@dataclass(frozen=True)
class ViewerConfig:
    host: str
    port: int
    frames_endpoint: str
    default_avatar: Avatar
    user_avatar: Avatar | None = None
    avatar_error: str | None = None  # why the user's avatar was refused (shown in the page)
    max_connections: int = DEFAULT_MAX_CONNECTIONS


class ViewerServer:
    """The viewer's thread: `start()` returns once it listens (`port` is then bound), `stop()` joins."""

    def __init__(self, config: ViewerConfig) -> None:
        self.config = config
        self.port = config.port
        self.frames_received = 0
        self.frames_replaced = 0  # frames a connection dropped unsent for newer ones (all connections)
        self.connections_refused = 0
        self._clients: set[_Client] = set()
        self._table = ObservedSessions()
        self._failed: set[bytes] = set()  # topic kinds whose handling raised (logged once each)
        self._opened: dict[str, dict[str, Any]] = {}  # open sessions' opened messages, for hello
        self._files = self._load_files()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="viewer", daemon=True)

    # ---------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("viewer did not start in time")
        if self._error is not None:
            raise OSError(f"viewer cannot listen on {self.config.host}:{self.config.port}: {self._error}")

    def stop(self, timeout: float = 5.0) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop ended on its own meanwhile
                loop.call_soon_threadsafe(stopping.set)
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def url(self) -> str:
        return viewer_url(self.config.host, self.port)

    def connections(self) -> int:
        return len(self._clients)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start(); a crash after it is logged
            if not self._ready.is_set():
                self._error = exc
                self._ready.set()
            else:
                log.exception("viewer stopped on an error")

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        context = zmq.asyncio.Context()
        sub = context.socket(zmq.SUB)
        sub.setsockopt(zmq.RCVHWM, SUB_RCVHWM)
        sub.setsockopt(zmq.LINGER, 0)
        sub.connect(self.config.frames_endpoint)
        sub.setsockopt(zmq.SUBSCRIBE, EVENT_TOPIC_PREFIX)
        sub.setsockopt(zmq.SUBSCRIBE, FRAME_TOPIC_PREFIX)
        try:
            server: Server = await serve(
                self._handle,
                self.config.host,
                self.config.port,
                process_request=self._process_request,
                compression=None,  # per-message deflate costs CPU per frame and buys little on JSON floats
                max_size=MAX_INCOMING,
                max_queue=4,
                write_limit=WRITE_LIMIT,
                open_timeout=5,
                ping_interval=10,
                ping_timeout=20,
                close_timeout=2,
                server_header=None,
                logger=_WEBSOCKETS_LOG,
            )
        except OSError:
            sub.close(0)
            context.term()
            raise
        self.port = server.sockets[0].getsockname()[1] if server.sockets else self.config.port
        self._ready.set()
        reader = asyncio.create_task(self._read_frames(sub))
        try:
            await self._stopping.wait()
        finally:
            reader.cancel()
            server.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 3.0)
            sub.close(0)
            context.term()

    # ---------------------------------------------------------------- bridge side
    async def _read_frames(self, sub: zmq.asyncio.Socket) -> None:
        while True:
            topic, payload = await sub.recv_multipart()
            try:
                if topic.startswith(FRAME_TOPIC_PREFIX):
                    self._on_frame(payload)
                elif topic.startswith(EVENT_TOPIC_PREFIX):
                    self._on_event(payload)
            except ProtocolError as exc:
                log.warning("viewer: dropping a message on %r: %s", topic[:40], exc.message)
            except Exception:  # a bug here must not end the feed for every browser: log it once
                key = topic[:6]
                if key not in self._failed:
                    self._failed.add(key)
                    log.exception(
                        "viewer: failed on a message on %r (logged once; the feed goes on)", topic[:40]
                    )

    def _on_event(self, payload: bytes) -> None:
        event = decode_event(payload)
        self._table.observe(event)
        if event.event == "opened" and event.rig is not None:
            info = SessionInfo(event.session, event.pipeline, event.rig, fps=event.fps, model=event.model)
            self._announce(opened_message(info))
        elif event.event == "closed" and event.session in self._opened:
            del self._opened[event.session]
            text = to_text(closed_message(event.session, event.reason))
            for client in self._clients:
                client.latest.pop(event.session, None)  # nothing of it after its closed notice
                self._notify(client, text)

    def _announce(self, message: dict[str, Any]) -> None:
        self._opened[message["session"]] = message
        text = to_text(message)
        for client in self._clients:
            self._notify(client, text)

    def _on_frame(self, payload: bytes) -> None:
        frame = decode_frame(payload)
        self.frames_received += 1
        session = frame.header.session
        if session not in self._opened:  # opened before we subscribed: the rig tables stand in
            self._announce(opened_message(self._table.info_for(frame)))
        text = to_text(frame_message(frame))
        for client in self._clients:
            pending = client.latest.setdefault(session, deque(maxlen=FRAMES_PER_SESSION))
            if len(pending) == FRAMES_PER_SESSION:
                client.frames_replaced += 1
                self.frames_replaced += 1
            pending.append(text)
            client.wake.set()

    def _notify(self, client: _Client, text: str) -> None:
        if len(client.notices) >= MAX_NOTICES:
            log.warning("viewer: %s does not read; disconnecting it", _peer(client.connection))
            client.connection.transport.abort()
            return
        client.notices.append(text)
        client.wake.set()

    # ---------------------------------------------------------------- browser side
    async def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = urlsplit(request.path).path
        if path == "/ws":
            if not _same_origin(request.headers):
                return self._respond(403, b"cross-origin WebSocket refused\n", ".txt")
            if len(self._clients) >= self.config.max_connections:
                self.connections_refused += 1
                return self._respond(503, b"too many viewer connections\n", ".txt")
            return None
        if request.headers.get("Upgrade"):
            return self._respond(404, b"not found\n", ".txt")
        if path == "/favicon.ico":
            return self._respond(204, b"", ".txt")
        found = self._files.get("/index.html" if path == "/" else path)
        if found is None:
            if path in ("/", "/index.html"):
                return self._respond(503, _NOT_BUILT, ".txt")
            return self._respond(404, b"not found\n", ".txt")
        body, suffix = found
        return self._respond(200, body, suffix)

    def _respond(self, status: int, body: bytes, suffix: str) -> Response:
        content_type = _CONTENT_TYPES.get(suffix, "application/octet-stream")
        headers = Headers(
            [("Content-Type", content_type), ("Content-Length", str(len(body))), *_SECURITY_HEADERS]
        )
        reason = {
            200: "OK",
            204: "No Content",
            403: "Forbidden",
            404: "Not Found",
            503: "Service Unavailable",
        }[status]
        return Response(status, reason, headers, body)

    async def _handle(self, connection: ServerConnection) -> None:
        if len(self._clients) >= self.config.max_connections:  # raced past the handshake check
            self.connections_refused += 1
            await connection.close(1013, "too many viewer connections")
            return
        client = _Client(connection)
        client.notices.append(to_text(self._hello()))
        client.wake.set()
        self._clients.add(client)
        sender = asyncio.create_task(self._send_loop(client))
        try:
            async for message in connection:
                self._on_report(client, message)
        except ConnectionClosed:
            pass
        finally:
            self._clients.discard(client)
            sender.cancel()

    def _hello(self) -> dict[str, Any]:
        config = self.config
        avatar = config.user_avatar or config.default_avatar
        return {
            "type": "hello",
            "v": VIEWER_PROTOCOL,
            "avatar": {
                "url": "/avatar/user.vrm" if config.user_avatar else "/avatar/default.vrm",
                "default_url": "/avatar/default.vrm",
                "name": avatar.name,
                "error": config.avatar_error,
            },
            "sessions": list(self._opened.values()),
        }

    async def _send_loop(self, client: _Client) -> None:
        connection = client.connection
        try:
            while True:
                await client.wake.wait()
                client.wake.clear()
                while client.notices or client.latest:
                    if client.notices:
                        text = client.notices.popleft()
                    else:
                        session = next(iter(client.latest))
                        pending = client.latest.pop(session)
                        text = pending.popleft()
                        if pending:  # its next frame waits behind the other sessions' (round robin)
                            client.latest[session] = pending
                        client.frames_sent += 1
                    await asyncio.wait_for(connection.send(text), SEND_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning(
                "viewer: %s stopped reading for %.0f s; disconnecting it", _peer(connection), SEND_TIMEOUT_S
            )
            connection.transport.abort()
        except ConnectionClosed:
            pass

    def _on_report(self, client: _Client, message: str | bytes) -> None:
        """The page's error reports (an avatar that failed to load), into the bridge's log."""
        client.reports += 1
        if client.reports > MAX_REPORTS:
            return
        text = message if isinstance(message, str) else message.decode("utf-8", "replace")
        try:
            report = json.loads(text)
            detail = str(report.get("message", ""))[:500] if isinstance(report, dict) else ""
        except ValueError:
            detail = ""
        if detail:
            log.error("viewer page %s: %r", _peer(client.connection), detail)

    def _load_files(self) -> dict[str, tuple[bytes, str]]:
        files: dict[str, tuple[bytes, str]] = {}
        folder = static_dir()
        for name in ("index.html", "viewer.js", "viewer.js.LEGAL.txt"):
            path = folder / name
            if path.is_file():
                files[f"/{name}"] = (path.read_bytes(), path.suffix)
        if "/index.html" not in files or "/viewer.js" not in files:
            log.warning(
                "viewer: the page is not built (%s); run scripts/install.sh or `npm run build` in viewer/",
                folder,
            )
            files.pop("/index.html", None)
        files["/avatar/default.vrm"] = (self.config.default_avatar.data, ".vrm")
        if self.config.user_avatar is not None:
            files["/avatar/user.vrm"] = (self.config.user_avatar.data, ".vrm")
        return files


_NOT_BUILT = (
    b"The viewer page is not built. Run scripts/install.sh (it needs node and npm), or in viewer/:\n"
    b"npm ci && npm run build\n"
)


def viewer_url(host: str, port: int) -> str:
    """The page's address as a browser on this machine reaches it."""
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def _same_origin(headers: Headers) -> bool:
    """A browser's WebSocket from another site's page carries that site's Origin: refuse it (a page
    elsewhere must not read the bridge's frames through the user's browser). Non-browser clients
    send no Origin."""
    origin = headers.get("Origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == headers.get("Host", "")


def _peer(connection: ServerConnection) -> str:
    address = connection.remote_address
    return f"{address[0]}:{address[1]}" if address else "a browser"
