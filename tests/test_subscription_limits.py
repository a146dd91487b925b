"""Subscriptions per frames-port connection (docs/protocol.md section 1, issue 11 item 3): the bridge
stores at most `max_subscriptions` prefixes per connection and none that can match no topic; a
refused one costs nothing and only that connection misses its frames; a connection's count ends with
it. Real bridge on loopback, a bystander streaming throughout."""

from __future__ import annotations

import time

import zmq

from bridge.serving.server import Bridge
from bridge.transport.zmq_sockets import BridgeSockets, TransportConfig, can_match

from .conftest import running
from .pressure_support import until
from .test_pressure_delivery import bystander, raw_sub

LIMIT = 8


def limited() -> TransportConfig:
    return TransportConfig(request_port=0, frames_port=0, max_subscriptions=LIMIT)


def topics_received(sub: zmq.Socket[bytes], seconds: float) -> set[bytes]:
    seen = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if sub.poll(50):
            seen.add(sub.recv_multipart()[0])
    return seen


def refused(bridge: Bridge) -> int:
    return bridge.sockets.connections.refused


def test_a_connection_holds_at_most_its_limit_and_the_others_are_untouched() -> None:
    with running(transport=limited()) as bridge, bystander(bridge) as b:
        topic = f"frame/{b.session}".encode()
        greedy = raw_sub(bridge, b"event/")
        for i in range(LIMIT - 1):
            greedy.setsockopt(zmq.SUBSCRIBE, b"frame/%016d" % i)  # ids no session has: stored
        greedy.setsockopt(zmq.SUBSCRIBE, topic)  # one over the limit
        assert until(lambda: refused(bridge) == 1, 3.0), refused(bridge)
        fair = raw_sub(bridge, topic)  # another connection has its own limit
        assert topic in topics_received(fair, 1.0)
        assert topic not in topics_received(greedy, 0.5), "a refused subscription delivered frames"
        # Room again after an unsubscribe: the same subscription is stored now.
        greedy.setsockopt(zmq.UNSUBSCRIBE, b"frame/%016d" % 0)
        greedy.setsockopt(zmq.SUBSCRIBE, topic)
        assert topic in topics_received(greedy, 1.5)
        assert refused(bridge) == 1
        for s in (greedy, fair):
            s.close()


def test_a_prefix_that_matches_no_topic_is_not_stored() -> None:
    assert can_match(b"") and can_match(b"fr") and can_match(b"batch/motion")
    assert not can_match(b"zzz") and not can_match(b"frame/" + b"0" * 40)
    with running(transport=limited()) as bridge, bystander(bridge) as b:
        junk = raw_sub(bridge, b"zzz")
        junk.setsockopt(zmq.SUBSCRIBE, b"frame/" + b"0" * 40)  # longer than any topic
        assert until(lambda: refused(bridge) == 2, 3.0), refused(bridge)
        junk.setsockopt(zmq.SUBSCRIBE, f"frame/{b.session}".encode())  # the connection still serves
        assert f"frame/{b.session}".encode() in topics_received(junk, 1.5)
        junk.close()


def test_a_connections_count_ends_with_it() -> None:
    with running(transport=limited()) as bridge, bystander(bridge) as b:
        topic = f"frame/{b.session}".encode()
        for _ in range(3):  # a client that keeps reconnecting (resume at newest does) starts afresh
            sub = raw_sub(bridge, b"event/")
            for i in range(LIMIT - 2):
                sub.setsockopt(zmq.SUBSCRIBE, b"frame/%016d" % i)
            sub.setsockopt(zmq.SUBSCRIBE, topic)  # its 8th: within the limit every time
            assert topic in topics_received(sub, 1.0)
            sub.close()
            time.sleep(0.2)  # its end reaches the bridge
        assert refused(bridge) == 0


def test_frames_sockets_made_one_after_another_each_see_their_subscribers() -> None:
    # A socket monitor on the XPUB once made every later frames socket in the process deaf to
    # subscriptions after the first had published to a subscriber that never reads.
    context = zmq.Context.instance()
    for _ in range(12):
        sockets = BridgeSockets(TransportConfig(request_port=0, frames_port=0))
        sub = context.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.connect(sockets.frames_endpoint)
        sub.setsockopt(zmq.SUBSCRIBE, b"frame/x")
        assert until(lambda s=sockets: s.matching([b"frame/x"])[0], 3.0)
        for _ in range(3000):
            sockets.publish(b"frame/x", b"y" * 200)
        sub.close()
        sockets.close()
