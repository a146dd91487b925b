"""Property-based fuzzing (hypothesis) of the protocol decoder and of every request type, live.

The decoder may only ever return a typed request or raise ProtocolError. The live bridge answers
every fuzzed message with a reply or an error that is never INTERNAL, and stays up. The corpus of
deep structures (issue 40: ~1 KB nested 1000 levels once ended the process) puts one in every position
of every request type, at depths around and far past what the decoder allows.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.protocol import ErrorCode, ProtocolError, decode_request, pack
from bridge.protocol.requests import Request
from bridge.serving.server import Bridge

from .conftest import start_bridge, stop_bridge

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
REPLY_OPS = {"hello", "list", "open", "close", "pong", "ack", "error"}

# Any msgpack value: what a hostile or buggy client can put in a field.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.binary(max_size=64)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


def mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a valid value, otherwise anything: whole messages often get deep into the decoder."""
    return st.integers(1, 10).flatmap(lambda n: values if n == 10 else valid)  # draws lean towards 1


uint = mostly(st.integers(0, 2**64 - 1))
small = mostly(st.integers(-2, 70))


def field_maps(required: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Maps that mostly look like the message, with fields dropped, mistyped or added at random."""
    extras = st.fixed_dictionaries(
        {}, optional={"id": uint, "v": mostly(st.just(1)), "extra": values, "op": values, "session": values}
    )
    partial = st.fixed_dictionaries({}, optional=required)  # required fields missing
    fields = st.integers(1, 5).flatmap(
        lambda n: partial if n == 5 else mostly(st.fixed_dictionaries(required))
    )
    return st.tuples(fields, extras, st.integers(1, 10)).map(lambda t: merge(*t))


def merge(fields: Any, extras: dict[str, Any], roll: int) -> Any:
    """Extra keys next to the fields; now and then they overwrite them (e.g. a wrong `op`)."""
    if not isinstance(fields, dict):
        return fields  # the whole message is not a map
    return {**fields, **extras} if roll == 10 else {**extras, **fields}


@st.composite
def blob_fields(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    """Input payload fields whose `data` often has exactly the declared size, so decoding goes deep."""
    if kind == "image":
        w, h = draw(small), draw(small)
        fields = {"width": w, "height": h, "format": draw(mostly(st.sampled_from(["rgb8", "bgr8"])))}
        size = w * h * 3 if isinstance(w, int) and isinstance(h, int) and 0 < w * h < 5000 else 0
    elif kind == "audio":
        fmt = draw(mostly(st.sampled_from(["s16le", "f32le", "u8"])))
        fields = {"rate": draw(mostly(st.sampled_from([8000, 48000, 192000, 7999]))), "format": fmt}
        size = draw(st.integers(0, 800))
    else:
        rows, cols = draw(small), draw(mostly(st.sampled_from([35, 35, 34])))
        fields = {"rows": rows, "cols": cols}
        ok = isinstance(rows, int) and isinstance(cols, int) and 0 < rows * cols < 5000
        size = rows * cols * 4 if ok else 0
    fields["data"] = draw(mostly(st.binary(min_size=size, max_size=size) | st.binary(max_size=64)))
    return fields


def requests(session: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Every request type of docs/protocol.md section 4, fuzzed."""
    hello = field_maps({"op": st.just("hello"), "client": mostly(st.text(max_size=20))})
    listing = field_maps({"op": st.just("list")})
    opening = field_maps(
        {
            "op": st.just("open"),
            "pipeline": mostly(st.sampled_from(["face", "motion", "dance"])),
            "model": mostly(st.sampled_from([None, "dance_lstm", "face_expression_small", "nope"])),
            "options": mostly(
                st.dictionaries(st.sampled_from(["style", "smoothing", "blendshapes", "mode", "x"]), values)
            ),
        }
    )
    closing = field_maps({"op": st.just("close"), "session": session})
    ping = field_maps({"op": st.just("ping"), "session": session})
    inputs = st.sampled_from(["image", "audio", "features", "video"]).flatmap(
        lambda kind: st.tuples(
            field_maps(
                {
                    "op": st.just("input"),
                    "session": session,
                    "kind": mostly(st.just(kind)),
                    "seq": uint,
                    "t_capture_ns": uint,
                    "ack": mostly(st.booleans()),
                }
            ),
            blob_fields(kind),
        ).map(lambda t: {**t[1], **t[0]} if isinstance(t[0], dict) else t[0])
    )
    return st.one_of(hello, listing, opening, closing, ping, inputs, inputs, inputs)  # inputs go deepest


def decode_or_protocol_error(payload: bytes) -> Request | None:
    try:
        return decode_request(payload, 1 << 20)
    except ProtocolError as exc:
        assert exc.code in set(ErrorCode) and exc.code != ErrorCode.INTERNAL
        return None


_PLACEHOLDER = b"\xc4\x08deep-key"  # a bin value no request carries: spliced out for the deep bytes
DEPTHS = (600, 1000, 5000, 100_000)
REQUESTS: dict[str, dict[str, Any]] = {
    "hello": {"op": "hello", "id": 1, "client": "fuzz"},
    "list": {"op": "list", "id": 1},
    "open": {"op": "open", "id": 1, "pipeline": "motion", "options": {"smoothing": 0.5}},
    "close": {"op": "close", "id": 1, "session": "0" * 16},
    "ping": {"op": "ping", "id": 1, "session": "0" * 16},
    "calibrate": {"op": "calibrate", "id": 1, "session": "0" * 16},
    "input": {
        "op": "input",
        "id": 1,
        "session": "0" * 16,
        "kind": "features",
        "seq": 0,
        "t_capture_ns": 0,
        "rows": 1,
        "cols": 35,
        "data": bytes(140),
    },
    "inputs": {"op": "inputs", "id": 1, "items": [{"session": "0" * 16, "kind": "features", "seq": 0}]},
}


def deep_corpus() -> Iterator[tuple[str, bytes]]:
    """(name, payload): a deep array in place of each field, as an unknown key's value, as an
    `open` option's value, as an `inputs` item and inside one, and as the whole message."""
    marker = msgpack.unpackb(_PLACEHOLDER)
    for depth in DEPTHS:
        deep = b"\x91" * depth + b"\xc0"
        yield f"whole message/{depth}", deep
        for op, request in REQUESTS.items():
            variants = {f"{op}.{key}": {**request, key: marker} for key in request}
            variants[f"{op}.unknown key"] = {**request, "extra": marker}
            if op == "open":
                variants["open.options value"] = {**request, "options": {"smoothing": marker}}
            if op == "inputs":
                variants["inputs.item"] = {**request, "items": [request["items"][0], marker]}
                variants["inputs.item field"] = {**request, "items": [{**request["items"][0], "seq": marker}]}
            for name, message in variants.items():
                yield f"{name}/{depth}", pack(message).replace(_PLACEHOLDER, deep)


@pytest.mark.parametrize(
    ("name", "payload"), list(deep_corpus()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_decoder_refuses_deep_structures_in_every_position(name: str, payload: bytes) -> None:
    decode_or_protocol_error(payload)


@FUZZ
@given(st.binary(max_size=512))
def test_decoder_survives_arbitrary_bytes(payload: bytes) -> None:
    decode_or_protocol_error(payload)


@FUZZ
@given(requests(st.text(max_size=20) | values))
def test_decoder_survives_every_request_type(message: Any) -> None:
    decode_or_protocol_error(msgpack.packb(message, use_bin_type=True))


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[Bridge, zmq.Socket[bytes], list[str]]]:
    """A bridge, a raw DEALER to it, and a face and a motion session fuzzed inputs can name."""
    server, thread = start_bridge(idle_timeout_s=60)
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{server.sockets.request_port}")
    sessions = []
    for pipeline in ("face", "motion"):
        sock.send(pack({"op": "open", "id": 1, "pipeline": pipeline}))
        assert sock.poll(10000)
        sessions.append(msgpack.unpackb(sock.recv())["session"])
    yield server, sock, sessions
    sock.close(0)
    stop_bridge(server, thread)


_ids = itertools.count(1 << 40)


def exchange(sock: zmq.Socket[bytes], message: Any) -> list[dict[str, Any]]:
    """Send one message, then a ping; the replies before the pong are the message's answers."""
    return exchange_raw(sock, msgpack.packb(message, use_bin_type=True))


@FUZZ
@given(data=st.data())
def test_live_bridge_answers_every_fuzzed_request(
    live: tuple[Bridge, zmq.Socket[bytes], list[str]], data: st.DataObject
) -> None:
    _, sock, sessions = live
    message = data.draw(requests(st.sampled_from(sessions) | st.text(max_size=20) | values))
    for reply in exchange(sock, message):
        assert reply["op"] in REPLY_OPS and reply["v"] == 1
        if reply["op"] == "error":
            assert reply["code"] in set(ErrorCode) and reply["code"] != ErrorCode.INTERNAL, reply
        elif reply["op"] == "open":  # keep the session count bounded
            assert not exchange(sock, {"op": "close", "id": 2, "session": reply["session"]})[0].get("code")


def test_live_bridge_answers_every_deep_structure(live: tuple[Bridge, zmq.Socket[bytes], list[str]]) -> None:
    _, sock, sessions = live
    for name, payload in deep_corpus():
        for reply in exchange_raw(sock, payload.replace(b"0" * 16, sessions[1].encode())):
            assert reply["op"] in REPLY_OPS and reply.get("code") != ErrorCode.INTERNAL, (name, reply)
            if reply["op"] == "open":  # an unknown key within the decoder's depth: served
                exchange(sock, {"op": "close", "id": 2, "session": reply["session"]})


def exchange_raw(sock: zmq.Socket[bytes], payload: bytes) -> list[dict[str, Any]]:
    """Send one message (its bytes), then a ping; the replies before the pong are its answers."""
    sock.send(payload)
    marker = next(_ids)
    sock.send(pack({"op": "ping", "id": marker}))
    replies: list[dict[str, Any]] = []
    while True:
        assert sock.poll(10000), "the bridge stopped answering"
        reply = msgpack.unpackb(sock.recv())
        if reply.get("op") == "pong" and reply.get("id") == marker:
            return replies
        replies.append(reply)


def test_live_bridge_still_serves_after_fuzzing(live: tuple[Bridge, zmq.Socket[bytes], list[str]]) -> None:
    server, sock, _ = live
    assert server.stats.error_counts().get(ErrorCode.INTERNAL.name, 0) == 0
    [opened] = exchange(sock, {"op": "open", "id": 5, "pipeline": "motion"})
    features = {"rows": 1, "cols": 35, "data": bytes(140), "kind": "features", "seq": 0, "t_capture_ns": 0}
    [ack] = exchange(sock, {"op": "input", "id": 6, "session": opened["session"], "ack": True, **features})
    assert ack["op"] == "ack" and ack["session"] == opened["session"]
