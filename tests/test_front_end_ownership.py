"""Issue 40 attacks 10 and 11 through `serve --workers 2`: the front end tells clients apart by
connection (a new connection reusing a victim's ROUTING_ID is another client), and a named batch group
belongs to its first client across workers (the front end places opens by load, so a second client's
open naming the group would otherwise land on another worker, which has never seen it). A bystander
streams throughout and must keep every frame."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from bridge.clients.harness.client import BridgeError
from bridge.clients.harness.process import BridgeProcess
from bridge.protocol import ErrorCode

from .bystander import Bystander, streaming_beside
from .pressure_support import ask, connect, raw_dealer


@pytest.fixture(scope="module")
def front() -> Iterator[BridgeProcess]:
    with BridgeProcess("--workers", "2", "--no-face-tracking", start_timeout_s=180.0) as b:
        yield b


@pytest.fixture
def bystander(front: BridgeProcess) -> Iterator[Bystander]:
    with streaming_beside(front.request_port) as b:
        yield b
    assert front.proc.poll() is None


def test_a_reused_routing_id_inherits_no_session(front: BridgeProcess, bystander: Bystander) -> None:
    victim = raw_dealer(front.request_port, b"victim")
    sid = ask(victim, {"op": "open", "id": 1, "pipeline": "motion"})["session"]
    victim.close(0)
    time.sleep(0.3)
    thief = raw_dealer(front.request_port, b"victim")
    for message in ({"op": "ping", "id": 3, "session": sid}, {"op": "close", "id": 4, "session": sid}):
        reply = ask(thief, message)
        assert reply["op"] == "error" and reply["code"] == ErrorCode.NOT_OWNER, reply
    thief.close(0)


def test_a_named_group_belongs_to_its_first_client_across_workers(
    front: BridgeProcess, bystander: Bystander
) -> None:
    owner, other = connect(front.request_port), connect(front.request_port)
    first = owner.open("motion", batch_group="crowd")["session"]
    for _ in range(3):  # whichever worker the least-loaded rule picks
        with pytest.raises(BridgeError) as taken:
            other.open("motion", batch_group="crowd")
        assert taken.value.code == ErrorCode.NOT_OWNER
    second = owner.open("motion", batch_group="crowd")["session"]
    token = other.open("motion", batch_group=True)
    assert len(token["batch_group"]) == 16
    for sid in (first, second):
        owner.close_session(sid)
    deadline = time.monotonic() + 5  # the front end learns of the closes from the workers' events
    while True:
        try:
            assert other.open("motion", batch_group="crowd")["batch_group"] == "crowd"
            break
        except BridgeError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    owner.close()
    other.close()
