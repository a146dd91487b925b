"""One thread per live source: open a session on the bridge, feed it in real time, answer every fault.

The feeder is a client over loopback (bridge.clients.harness.client), so a source's session is an ordinary
session: the bridge validates and bounds its inputs as any client's, and every output publishes it.
Faults and their answers (docs/sources.md):
- a file's end: loop (`loop=True`) or close the session and stop;
- a device that stops delivering (unplugged camera, stalled microphone): a `source` event with state
  `lost`, reopen attempts with backoff (0.5 s doubling to 8 s) while pings keep the session open, and a
  `source` event with state `resumed` once it delivers again;
- an error reply to an input: logged and counted (`errors`); the feeder goes on.

A second source can feed the same session (`SourceFeeder.joined`: the microphone's voice into the camera's
face session opened with `speech: true`). Sessions belong to the connection that opened them, so the joined
feeder shares its host's client, one call at a time under a lock; the host opens and closes the session,
and stops its guests before it closes the connection.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.clients.sources.audio import Speaker
from bridge.clients.sources.base import MediaSource, SourceError
from bridge.clients.sources.preview import Preview
from bridge.protocol.events import encode_source_event, event_topic
from bridge.vision.jpeg import encode as encode_jpeg

__all__ = ["FeederOptions", "SourceFeeder"]

log = logging.getLogger(__name__)

Publish = Callable[[bytes, bytes], object]  # (topic, payload) onto the bridge's frame socket
_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
_PING_S = 1.0


@dataclass
class FeederOptions:
    pipeline: str  # the session's pipeline: face for images, motion (or speech) for audio
    open_options: dict[str, Any] = field(default_factory=dict)
    loop: bool = False
    preview_dir: Path | None = None
    play_offset_s: float | None = None  # audio files: play to the speakers this long after sending
    jpeg_quality: int | None = None  # images: sent as JPEG at this quality (1..100), else raw rgb8


class SourceFeeder:
    def __init__(
        self,
        source: MediaSource,
        options: FeederOptions,
        client: BridgeClient,
        publish: Publish | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        *,
        host: SourceFeeder | None = None,
    ) -> None:
        self.source = source
        self.options = options
        self._client = client
        self._publish = publish
        self._clock = clock
        self._sleep = sleep
        self._stop = threading.Event()
        self._host = host  # the feeder whose session (and client) this one feeds; None: its own session
        self._guests: list[SourceFeeder] = []
        self._guests_stopped = False  # the host's session is over: a guest joined later never feeds
        # Not the client's lock: `serve` joins a guest while the host may be waiting for its open reply.
        self._guests_lock = threading.Lock()
        self._lock: threading.Lock = host._lock if host is not None else threading.Lock()  # the client's
        self._thread = threading.Thread(target=self._run, name=f"source {source.label}", daemon=True)
        self.session = ""
        self.inputs_sent = 0
        self.errors = 0
        self.finished = threading.Event()
        self._opened = threading.Event()
        self.open_error: BridgeError | TimeoutError | None = None
        self._preview = Preview(options.preview_dir, source.label) if options.preview_dir else None
        self._last_image: np.ndarray | None = None

    def joined(self, source: MediaSource, options: FeederOptions) -> SourceFeeder:
        """A feeder of `source` into this feeder's session (not yet started). `options` gives its loop and
        playback; the session's pipeline, open options and preview stay this feeder's."""
        guest = SourceFeeder(
            source, options, self._client, self._publish, self._clock, self._sleep, host=self
        )
        with self._guests_lock:
            if self._guests_stopped:
                guest._stop.set()
            self._guests.append(guest)
        return guest

    def start(self) -> None:
        """Start feeding. The session opens on the feeder's thread (the bridge may not be answering yet:
        `serve` starts its sources before its I/O loop); `wait_open` waits for it."""
        self._thread.start()

    def wait_open(self, timeout_s: float = 10.0) -> str:
        """The session id once open; raises what the bridge answered if it refused."""
        if not self._opened.wait(timeout_s):
            raise TimeoutError(f"source {self.source.label}: no session within {timeout_s} s")
        if self.open_error is not None:
            raise self.open_error
        return self.session

    def _open(self) -> None:
        if self._host is not None:
            self._join(self._host)
            return
        try:
            with self._lock:
                self._client.hello(client=f"avatar-bridge source ({self.source.label})")
                opened = self._client.open(self.options.pipeline, **self.options.open_options)
            self.session = str(opened["session"])
        except (BridgeError, TimeoutError) as exc:
            self.open_error = exc
            log.error("source %s: the bridge refused its session: %s", self.source.label, exc)
            raise
        finally:
            self._opened.set()
        if self._preview is not None:
            with self._lock:
                self._client.subscribe(f"frame/{self.session}".encode())
        log.info("%s -> %s session %s", self.source.describe(), self.options.pipeline, self.session)

    def _join(self, host: SourceFeeder) -> None:
        """Feed the host's session once it is open; its refusal is this feeder's too."""
        while not host._opened.wait(0.1):
            if self._stop.is_set():
                self._opened.set()
                raise TimeoutError(f"source {self.source.label}: stopped before its session opened")
        self.session, self.open_error = host.session, host.open_error
        self._opened.set()
        if self.open_error is not None:
            raise self.open_error
        log.info("%s -> %s session %s too", self.source.describe(), self.options.pipeline, self.session)

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread.ident is not None:  # started
            self._thread.join(timeout_s)

    def _stop_guests(self) -> None:
        with self._guests_lock:
            self._guests_stopped = True
            guests = list(self._guests)
        for guest in guests:
            guest.stop()

    # ------------------------------------------------------------------------------------------
    def _event(self, state: str, message: str) -> None:
        log.warning("%s: %s", self.source.label, message)
        if self._publish is not None:
            self._publish(  # the bridge's own socket (publish_event locks it), not the client
                event_topic(self.session),
                encode_source_event(self.session, state=state, source=self.source.label, message=message),
            )

    def _run(self) -> None:
        speaker = None
        try:
            self._open()
            if self.options.play_offset_s is not None and self.source.kind == "audio":
                speaker = Speaker(self.source.rate, self.options.play_offset_s)
            self._feed(speaker)
        except (BridgeError, TimeoutError):
            pass  # the session never opened: logged by _open, raised by wait_open
        except Exception:  # the feeder must never take the bridge down: report and end this source
            log.exception("source %s stopped", self.source.label)
            self._event("failed", "the source stopped on an unexpected error (see the bridge log)")
        finally:
            if speaker is not None:
                speaker.close()
            self.source.close()
            if self._host is None:  # the connection is the host's: its guests stop first
                self._stop_guests()
                with self._lock:
                    self._client.close()
            self.finished.set()

    def _feed(self, speaker: Speaker | None) -> None:
        start, sent_units = self._clock(), 0.0  # units: frames (images) or samples (audio)
        delayed: list[tuple[float, np.ndarray]] = []
        while not self._stop.is_set():
            item = self.source.read()
            if item is None:
                if self.source.live:
                    if not self._recover():
                        return
                    start, sent_units = self._clock(), 0.0
                    continue
                if self.options.loop:
                    self.source.rewind()
                    if (item := self.source.read()) is None:
                        self._event("ended", "the file has nothing to loop over")
                        return
                else:
                    self._event("ended", "end of file")
                    if self._host is None:  # a guest's end leaves the host's session to the host
                        self._stop_guests()
                        with self._lock:
                            self._client.close_session(self.session)
                    return
            if not self.source.realtime:  # files: send each unit when its time comes
                due = start + sent_units / self.source.rate
                if (wait := due - self._clock()) > 0:
                    self._sleep(wait)
            self._send(item)
            sent_units += 1 if self.source.kind == "image" else len(item)
            if speaker is not None:
                delayed.append((self._clock() + (self.options.play_offset_s or 0.0), item))
                while delayed and delayed[0][0] <= self._clock():
                    speaker.play(delayed.pop(0)[1])
            self._drain()

    def _send(self, item: np.ndarray) -> None:
        seq = self.inputs_sent  # per source: the bridge copies seq into frames, and orders nothing by it
        if self.source.kind == "image":
            self._last_image = item
            captured = time.time_ns()  # before encoding: the encode is part of the frame's latency
            if self.options.jpeg_quality is None:
                with self._lock:
                    self._client.send_image(self.session, seq, item, captured)
            else:  # encoded on this thread: ~2 ms for 640x480, and 20x fewer bytes to the bridge
                jpeg = encode_jpeg(item, self.options.jpeg_quality)
                with self._lock:
                    self._client.send_jpeg(self.session, seq, jpeg, captured)
        else:
            with self._lock:
                self._client.send_audio(self.session, seq, item, round(self.source.rate))
        self.inputs_sent += 1

    def _drain(self) -> None:
        """Error replies and (with a preview) our frames; nothing accumulates. A shared connection's
        replies are counted by whichever of its feeders reads them (each reply names its input)."""
        with self._lock:
            self._client.poll_replies()
            errors = list(self._client.errors)
            self._client.errors.clear()
            received = self._client.recv_frames(0) if self._preview is not None else []
            self._client.events.clear()
        if errors:
            self.errors += len(errors)
            log.warning("%s: bridge refused an input: %s", self.source.label, errors[-1])
        if self._preview is not None:
            for frame in received:
                self._preview.show(frame.frame, self._last_image)

    def _recover(self) -> bool:
        """Reopen a lost device with backoff, keeping the session alive; False once asked to stop."""
        self._event("lost", "the device stopped delivering; retrying")
        attempt = 0
        while not self._stop.is_set():
            delay = _BACKOFF_S[min(attempt, len(_BACKOFF_S) - 1)]
            waited = 0.0
            while waited < delay and not self._stop.is_set():
                with self._lock:
                    self._client.request("ping", session=self.session)
                step = min(_PING_S, delay - waited)
                self._sleep(step)
                waited += step
            try:
                self.source.reopen()
            except SourceError as exc:
                attempt += 1
                log.info("%s: still gone (%s)", self.source.label, exc)
                continue
            self._event("resumed", "the device delivers again")
            return True
        return False
