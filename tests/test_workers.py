"""`serve --workers N`: one front end, worker processes behind it, over real loopback sockets.

Each test runs a real `avatar-bridge serve --workers 2` (bridge.clients.harness.process) with the bundled ONNX
engines: the harness loses nothing with sessions on both workers; ownership and quotas hold across
workers (by connection, and by CURVE key); an `inputs` message over both workers is answered item by
item; a killed worker is restarted, its session closed with reason `worker_lost`, and a bystander
session on the other worker loses nothing.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zmq

from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.harness.run import run_harness
from bridge.protocol.batch_frames import MotionBatch, batch_topic
from bridge.protocol.codec import pack, unpack_map
from bridge.protocol.errors import ErrorCode
from bridge.serving.cluster.workers import WorkerSpecFactory
from bridge.serving.server import ServeConfig
from bridge.transport.curve import generate_key_pair, load_secret_key
from bridge.transport.zmq_sockets import TransportConfig
from tests.bystander import Bystander
from tests.pressure_support import until
from tests.test_batch_groups import raw_sub, read, rows_by_session

ROWS = np.random.default_rng(3).standard_normal((60, 35)).astype(np.float32)
SERVE = ("--workers", "2", "--no-face-tracking", "--metrics-port", "0", "--idle-timeout", "30")


def metrics_get(bridge: BridgeProcess, path: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{bridge.ports['metrics_port']}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def session_workers(bridge: BridgeProcess, sessions: list[str]) -> dict[str, str]:
    """session id -> worker index, from the per-session figures of /metrics (rendered at most every
    0.25 s by each worker and by the front end, so a new session shows after a moment)."""
    out: dict[str, str] = {}
    deadline = time.monotonic() + 5.0
    while not set(sessions) <= set(out) and time.monotonic() < deadline:
        time.sleep(0.1)
        _, text = metrics_get(bridge, "/metrics")
        for line in text.splitlines():
            if line.startswith("avatar_bridge_session_frames_published_total{"):
                pairs = line[line.index("{") + 1 : line.index("}")].split(",")
                labels = {k: v.strip('"') for k, v in (kv.split("=", 1) for kv in pairs)}
                out[labels["session"]] = labels["worker"]
    return out


@pytest.fixture(scope="module")
def bridge() -> Iterator[BridgeProcess]:
    with BridgeProcess(*SERVE, "--max-sessions-per-client", "3", "--max-sessions", "5") as b:
        yield b


def test_harness_loses_nothing_with_sessions_on_both_workers(bridge: BridgeProcess) -> None:
    client = BridgeClient(request_port=bridge.request_port)
    try:
        report = run_harness(client, "motion", seconds=1.0, sessions=2, feature_rows=ROWS)
    finally:
        client.close()
    assert report.ok, report.to_json()
    assert report.frames_published == report.frames_received == 2 * 60
    _, text = metrics_get(bridge, "/metrics")
    opened = [line for line in text.splitlines() if line.startswith("avatar_bridge_sessions_opened_total")]
    assert sorted(line.split("}")[0] for line in opened) == [
        'avatar_bridge_sessions_opened_total{worker="0"',
        'avatar_bridge_sessions_opened_total{worker="1"',
    ]
    assert all(float(line.split()[-1]) >= 1 for line in opened), opened  # one session on each worker
    # Each worker froze its start-up heap out of full collections (bridge.serving.heap), so did the front end.
    frozen = [line for line in text.splitlines() if "python_gc_frozen_objects" in line and line[0] != "#"]
    assert len(frozen) == 3 and all(float(line.split()[-1]) > 10_000 for line in frozen), frozen
    # and times its collections from then on, by generation
    pauses = [line for line in text.splitlines() if "python_gc_pause_seconds_count{" in line]
    assert (
        len(pauses) == 9
        and 'avatar_bridge_worker_python_gc_pause_seconds_count{worker="1",generation="2"}' in text
    )
    assert metrics_get(bridge, "/healthz") == (200, "ok\n")
    status, body = metrics_get(bridge, "/readyz")
    assert status == 200 and set(json.loads(body)["workers"]) == {"0", "1"}


def test_ownership_and_quotas_hold_across_workers(bridge: BridgeProcess) -> None:
    owner = BridgeClient(request_port=bridge.request_port)
    other = BridgeClient(request_port=bridge.request_port)
    try:
        owner.hello()
        other.hello()
        sessions = [owner.open("motion")["session"] for _ in range(3)]
        assert set(session_workers(bridge, sessions).values()) == {"0", "1"}
        with pytest.raises(BridgeError) as quota:
            owner.open("motion")  # its quota of 3, counted over both workers
        assert quota.value.code == ErrorCode.CLIENT_SESSION_LIMIT
        for sid in sessions:  # whichever worker holds it, only its opener may use it
            for op in ("close", "ping"):
                with pytest.raises(BridgeError) as refused:
                    other.request(op, session=sid)
                assert refused.value.code == ErrorCode.NOT_OWNER
        other_sessions = [other.open("motion")["session"] for _ in range(2)]
        with pytest.raises(BridgeError) as limit:
            other.open("motion")  # the bridge-wide 5, over both workers
        assert limit.value.code == ErrorCode.SESSION_LIMIT
        for sid in sessions:
            owner.close_session(sid)
        for sid in other_sessions:
            other.close_session(sid)
        assert owner.open("motion")["session"]  # closes gave the places back (closed events seen)
    finally:
        owner.close()
        other.close()


def test_inputs_message_over_both_workers_answers_each_item_by_its_index(bridge: BridgeProcess) -> None:
    client = BridgeClient(request_port=bridge.request_port)
    try:
        client.hello()
        client.subscribe()
        sessions = [client.open("motion")["session"] for _ in range(2)]
        assert set(session_workers(bridge, sessions).values()) == {"0", "1"}
        time.sleep(0.1)
        row = {"kind": "features", "seq": 7, "t_capture_ns": time.time_ns(), "rows": 1, "cols": 35}
        items = [
            {**row, "session": sessions[0], "data": ROWS[0].tobytes()},
            {**row, "session": "0" * 16, "data": ROWS[1].tobytes(), "id": 5},
            {**row, "session": sessions[1], "data": ROWS[2].tobytes(), "ack": True, "id": 6},
        ]
        client.dealer.send(pack({"op": "inputs", "v": 1, "items": items}))
        frames: list[str] = []
        replies: list[dict[str, Any]] = []

        def both_frames() -> bool:
            frames.extend(r.frame.header.session for r in client.recv_frames(20))
            return len(frames) == 2

        def both_replies() -> bool:
            while client.dealer.poll(0):
                replies.append(unpack_map(client.dealer.recv()))
            return len(replies) == 2

        assert until(both_frames, 5.0), frames
        assert sorted(frames) == sorted(sessions)
        assert until(both_replies, 5.0), replies
        by_op = {r["op"]: r for r in replies}
        (failed,) = by_op["error"]["items"]  # one reply listing the failed items, by the client's index
        assert failed["code"] == ErrorCode.UNKNOWN_SESSION and failed["item"] == 1 and failed["id"] == 5
        assert (
            by_op["ack"]["item"] == 2 and by_op["ack"]["session"] == sessions[1] and by_op["ack"]["id"] == 6
        )
        frames.clear()
        # All on the worker that is not the least loaded: the message goes whole, to that worker.
        client.dealer.send(
            pack({"op": "inputs", "items": [{**row, "session": sessions[1], "data": ROWS[3].tobytes()}]})
        )
        assert until(lambda: both_frames() or frames == [sessions[1]], 5.0), frames
        time.sleep(0.2)
        both_replies()
        assert [r for r in replies[2:] if r["op"] == "error"] == []
        for sid in sessions:
            client.close_session(sid)
    finally:
        client.close()


def test_batch_groups_through_the_front_end(bridge: BridgeProcess) -> None:
    """Two clients' sessions in groups ga and gb: each group on one worker (its rows one call and one
    message), the two groups on both; each group's subscriber gets only its rows, a `batch/`
    subscriber every row once (the subscriptions reach the workers through the front end's forwarder)."""
    clients = [BridgeClient(request_port=bridge.request_port) for _ in range(2)]
    subs: list[zmq.Socket[bytes]] = []
    try:
        for c in clients:
            c.hello()
        frames = f"tcp://127.0.0.1:{clients[0].hello_reply['frames_port']}"
        prefixes = [batch_topic("motion", "ga"), batch_topic("motion", "gb"), b"batch/"]
        subs = [raw_sub(frames, p) for p in prefixes]
        owned = {
            g: [c.open("motion", batch_group=g)["session"] for _ in range(2)]
            for c, g in zip(clients, ("ga", "gb"), strict=True)
        }
        every = [sid for sids in owned.values() for sid in sids]
        where = session_workers(bridge, every)
        homes = [{where[sid] for sid in sids} for sids in owned.values()]
        assert [len(h) for h in homes] == [1, 1] and set.union(*homes) == {"0", "1"}, where
        time.sleep(0.3)  # the subscriptions reach the workers (already, while session_workers waited)
        got: list[list[tuple[bytes, MotionBatch]]] = [[] for _ in subs]
        for seq, row in enumerate(ROWS[:20]):
            for c, sids in zip(clients, owned.values(), strict=True):
                for sid in sids:
                    c.send_features(sid, seq, row[None])
            time.sleep(1 / 60)
            for sub, into in zip(subs, got, strict=True):
                read(sub, into)
        for sub, into in zip(subs, got, strict=True):
            read(sub, into, quiet_ms=300)
        expected = {sid: list(range(20)) for sid in every}
        for group, messages in zip(("ga", "gb"), got, strict=False):
            assert {t for t, _ in messages} == {batch_topic("motion", group)}
            assert rows_by_session(messages) == {sid: expected[sid] for sid in owned[group]}
        assert rows_by_session(got[2]) == expected
        for c, sids in zip(clients, owned.values(), strict=True):
            assert [c.close_session(sid)["frames_published"] for sid in sids] == [20, 20]
    finally:
        for sub in subs:
            sub.close()
        for c in clients:
            c.close()


def front_end_refused(bridge: BridgeProcess) -> float:
    _, text = metrics_get(bridge, "/metrics")
    name = "avatar_bridge_front_end_subscriptions_refused_total "
    return next(float(line.split()[1]) for line in text.splitlines() if line.startswith(name))


def test_subscriptions_per_connection_are_bounded_at_the_front_end(bridge: BridgeProcess) -> None:
    """The public frames port of `serve --workers` stores at most max_subscriptions (256) prefixes
    per connection, like a single bridge: one over is refused and counted, that connection misses
    only those frames, another connection gets them, and a connection's count ends with it; a
    bystander streaming meanwhile loses nothing."""
    client = BridgeClient(request_port=bridge.request_port)
    subs: list[zmq.Socket[bytes]] = []
    bystander = Bystander(bridge.request_port)
    bystander.start()
    report = None
    try:
        client.hello()
        frames = f"tcp://127.0.0.1:{client.hello_reply['frames_port']}"
        sid = client.open("motion")["session"]
        topic = f"frame/{sid}".encode()
        before = front_end_refused(bridge)
        greedy = raw_sub(frames, b"event/")
        for i in range(255):
            greedy.setsockopt(zmq.SUBSCRIBE, b"frame/%016d" % i)  # ids no session has: stored
        greedy.setsockopt(zmq.SUBSCRIBE, topic)  # the 257th: refused
        fair = raw_sub(frames, topic)
        subs = [greedy, fair]
        assert until(lambda: front_end_refused(bridge) == before + 1, 5.0)
        seen: dict[int, set[bytes]] = {0: set(), 1: set()}
        for seq, row in enumerate(ROWS[:30]):
            client.send_features(sid, seq, row[None])
            time.sleep(1 / 60)
            for k, sub in enumerate(subs):
                while sub.poll(0):
                    seen[k].add(sub.recv_multipart()[0])
        time.sleep(0.3)
        for k, sub in enumerate(subs):
            while sub.poll(0):
                seen[k].add(sub.recv_multipart()[0])
        assert topic in seen[1] and topic not in seen[0]
        greedy.close()  # its count ends with it: a new connection stores the same 257 prefixes
        subs = [fair]
        time.sleep(0.3)
        again = raw_sub(frames, b"event/")
        subs.append(again)
        for i in range(255):
            again.setsockopt(zmq.SUBSCRIBE, b"frame/%016d" % (1000 + i))
        again.setsockopt(zmq.UNSUBSCRIBE, b"event/")
        again.setsockopt(zmq.SUBSCRIBE, topic)  # its 256th
        time.sleep(0.5)
        for seq, row in enumerate(ROWS[30:40], start=30):
            client.send_features(sid, seq, row[None])
            time.sleep(1 / 60)
        assert again.poll(2000) and again.recv_multipart()[0] == topic
        assert front_end_refused(bridge) == before + 1
        client.close_session(sid)
        report = bystander.stop()
        assert report.clean, report
    finally:
        if report is None:
            bystander.stop()
        for sub in subs:
            sub.close()
        client.close()


def test_killed_frames_forwarder_is_restarted_on_the_same_port(bridge: BridgeProcess) -> None:
    """The forwarder process killed: /healthz is red until it runs again on the same frames port,
    the restart is counted, and a subscriber's SUB socket (which reconnects) gets frames again."""
    client = BridgeClient(request_port=bridge.request_port)
    sub = None
    try:
        client.hello()
        sid = client.open("motion")["session"]
        sub = raw_sub(f"tcp://127.0.0.1:{client.hello_reply['frames_port']}", f"frame/{sid}".encode())
        _, body = metrics_get(bridge, "/readyz")
        pid = json.loads(body)["frames_forwarder"]["pid"]
        os.kill(pid, signal.SIGKILL)
        assert until(lambda: metrics_get(bridge, "/healthz")[0] == 503, 5.0)
        assert until(lambda: metrics_get(bridge, "/healthz")[0] == 200, 10.0)
        restarted = "avatar_bridge_frames_forwarder_restarts_total 1.0"
        assert until(lambda: restarted in metrics_get(bridge, "/metrics")[1], 5.0)
        # The subscriber and the workers reconnect on their own (0.6-1 s measured on two cores): a
        # frame within 10 s.
        got, seq, deadline = False, 0, time.monotonic() + 10.0
        while not got and time.monotonic() < deadline:
            client.send_features(sid, seq, ROWS[seq % len(ROWS)][None])
            seq += 1
            got = sub.poll(1000 // 60) != 0
        assert got, "no frame after the forwarder's restart"
        client.close_session(sid)
    finally:
        if sub is not None:
            sub.close()
        client.close()


def test_killed_worker_is_restarted_and_the_other_workers_session_loses_nothing(tmp_path: Path) -> None:
    """Over CURVE with an allow-list: sessions belong to the key, across connections and workers."""
    generate_key_pair(tmp_path, "server")
    alice, bob = (load_secret_key(generate_key_pair(tmp_path / "clients", n)[1]) for n in ("alice", "bob"))
    server_key = load_secret_key(tmp_path / "server.key_secret")[0]
    curve = (
        "--curve-secret-key",
        str(tmp_path / "server.key_secret"),
        "--curve-client-keys",
        str(tmp_path / "clients"),
    )

    with BridgeProcess(*SERVE, *curve) as bridge:

        def keyed(keys: tuple[bytes, bytes]) -> BridgeClient:
            return BridgeClient(request_port=bridge.request_port, server_key=server_key, client_keys=keys)

        bystander = Bystander(bridge.request_port, server_key=server_key, client_keys=alice)
        bystander.start()  # the first session: worker 0 (least loaded, lowest index)
        victim, again, other = keyed(alice), keyed(alice), keyed(bob)
        try:
            for c in (victim, again, other):
                c.hello()
            victim.subscribe(b"event/")
            time.sleep(0.1)
            doomed = victim.open("motion")["session"]
            assert bystander.session is not None
            workers = session_workers(bridge, [doomed, bystander.session])
            assert workers[doomed] != workers[bystander.session]
            assert (
                again.request("ping", session=doomed)["op"] == "pong"
            )  # the key owns it, not the connection
            with pytest.raises(BridgeError) as refused:
                other.request("ping", session=doomed)
            assert refused.value.code == ErrorCode.NOT_OWNER
            stranger = BridgeClient(
                request_port=bridge.request_port,
                timeout_s=1.0,
                server_key=server_key,
                client_keys=zmq.curve_keypair(),
            )
            with pytest.raises(TimeoutError):
                stranger.hello()  # a key not on the list: refused at the front end's handshake, counted
            stranger.close()
            refusals = 'avatar_bridge_front_end_handshake_failures_total{reason="auth"} 1.0'
            assert until(lambda: refusals in metrics_get(bridge, "/metrics")[1], 5.0)
            _, body = metrics_get(bridge, "/readyz")
            pid = json.loads(body)["workers"][workers[doomed]]["pid"]
            time.sleep(0.3)
            os.kill(pid, signal.SIGKILL)

            def closed() -> list[dict[str, object]]:
                victim.recv_frames(20)
                return [e for e in victim.events if e.get("session") == doomed and e.get("event") == "closed"]

            assert until(lambda: bool(closed()), 5.0), victim.events
            assert closed()[0]["reason"] == "worker_lost"
            assert until(lambda: metrics_get(bridge, "/healthz")[0] == 200, 30.0), "worker not restarted"
            with pytest.raises(BridgeError) as gone:
                victim.request("ping", session=doomed)
            assert gone.value.code == ErrorCode.UNKNOWN_SESSION
            assert victim.open("motion")["session"]  # served again
            _, text = metrics_get(bridge, "/metrics")
            assert f'avatar_bridge_worker_restarts_total{{worker="{workers[doomed]}"}} 1.0' in text
        finally:
            for c in (victim, again, other):
                c.close()
            report = bystander.stop()
        assert report.clean, report
        assert report.received > 30


def test_worker_specs_take_the_public_edge_away_and_spread_gpus(tmp_path: Path) -> None:
    public = ServeConfig(
        transport=TransportConfig(host="127.0.0.1", request_port=5570, frames_port=5571, frames_hwm=64),
        metrics_port=9464,
    )
    envs = [{"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"}]
    factory = WorkerSpecFactory(public, tmp_path, f"ipc://{tmp_path}/forward", 5571, envs)
    specs = [factory(i, 0) for i in range(3)]
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["0", "1", "0"]
    t = specs[0].config.transport
    assert (t.request_port, t.frames_port, t.frames_hwm, t.curve_secret_key) == (0, 0, 0, None)
    assert specs[0].config.metrics_port == 0 and specs[0].public_frames_port == 5571
    assert (
        specs[0].request_endpoint.startswith("ipc://")
        and factory(0, 1).request_endpoint != specs[0].request_endpoint
    )
