"""The harness client's "resume at newest" rule (docs/protocol.md section 1, issue 11 item 4).

A real bridge on loopback publishes one motion session at 60 Hz (a `Bystander`). A subscriber that
stops reading for longer than `resume_after_s` and reads again gets no queued frame: its first frame
was published after it resumed, and it counted one resubscribe. One that reads at a steady cadence
never resubscribes; one without the rule first reads the frames queued when it stopped.
"""

from __future__ import annotations

import time

from bridge.clients.harness.client import BridgeClient, ReceivedFrame
from bridge.serving.server import Bridge

from .bystander import Bystander

# The rule's threshold here: longer than the default 250 ms, so a stall of this test's own thread on
# a loaded 2-core machine is not read as a pause; the rule is the same at any threshold.
RESUME_AFTER_S = 0.75


def _subscriber(bridge: Bridge, session: str, resume_after_s: float) -> BridgeClient:
    client = BridgeClient("127.0.0.1", bridge.sockets.request_port, resume_after_s=resume_after_s)
    client.hello("resume test")
    client.subscribe(f"frame/{session}".encode())
    client.subscribe(b"event/")
    return client


def _first_frames(client: BridgeClient, timeout_s: float = 5.0) -> list[ReceivedFrame]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if got := client.recv_frames(20):
            return got
    return []


def test_a_paused_subscriber_resumes_at_the_newest_frame(bridge: Bridge) -> None:
    publisher = Bystander(bridge.sockets.request_port, drain_s=2.0)
    publisher.start()
    assert publisher.session is not None
    ruled = _subscriber(bridge, publisher.session, RESUME_AFTER_S)
    raw = _subscriber(bridge, publisher.session, 0.0)
    try:
        # A steady cadence (every 20 ms) reads every frame and never resubscribes.
        seqs: list[int] = []
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            seqs += [r.frame.header.seq for r in ruled.recv_frames(20)]
            raw.recv_frames(0)
        assert len(seqs) >= 20 and seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        assert ruled.resubscribes == 0

        time.sleep(3 * RESUME_AFTER_S)  # both stop reading; the bridge goes on publishing
        t_resume = time.time_ns()
        first = _first_frames(ruled)
        assert first, "no frame after resuming"
        assert ruled.resubscribes == 1
        assert first[0].frame.header.t_publish_ns >= t_resume  # nothing queued came through
        # Without the rule, the first frame read is one queued before the pause ended.
        stale = _first_frames(raw)
        assert stale and stale[0].frame.header.t_publish_ns < t_resume - 2 * RESUME_AFTER_S * 1e9
        assert raw.resubscribes == 0

        # The fresh socket kept the subscriptions: frames keep coming, at a cadence with no resubscribe.
        later: list[int] = [r.frame.header.seq for r in first]
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            later += [r.frame.header.seq for r in ruled.recv_frames(20)]
        assert len(later) >= 10 and later == list(range(later[0], later[0] + len(later)))
        assert ruled.resubscribes == 1 and not ruled.invalid_frames
    finally:
        ruled.close()
        raw.close()
        report = publisher.stop()
    assert report.clean, report
