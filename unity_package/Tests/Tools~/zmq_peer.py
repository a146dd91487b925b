"""A libzmq (pyzmq) ROUTER + XPUB peer for the C# ZMTP client's tests.

Prints {"router": port, "pub": port} on stdout once bound, then serves commands sent by a DEALER,
one frame each (anything else is answered with "multipart <n>"):
  echo <bytes>           -> <bytes>
  multi                  -> a two-frame reply: "a", "b"
  subs                   -> JSON list of the subscription messages the XPUB saw, hex encoded
  publish <topic> <n> <size>
                         -> waits until a subscription covering <topic> arrived, publishes one message
                            on "zzz/other" (which the test must not receive), then n messages
                            [<topic>, 4-byte index + <size> bytes], then answers "done"
  quit                   -> answers "bye", closes the sockets and exits
XPUB rather than PUB so the test can check the exact subscription bytes the client sent.
"""

from __future__ import annotations

import json
import struct
import sys
import time

import zmq


def main() -> int:
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router_port = router.bind_to_random_port("tcp://127.0.0.1")
    pub = ctx.socket(zmq.XPUB)
    pub.linger = 0
    pub.setsockopt(zmq.XPUB_VERBOSE, 1)
    pub.sndhwm = 100000
    pub_port = pub.bind_to_random_port("tcp://127.0.0.1")
    print(json.dumps({"router": router_port, "pub": pub_port}), flush=True)

    subscriptions: list[bytes] = []
    poller = zmq.Poller()
    poller.register(router, zmq.POLLIN)
    poller.register(pub, zmq.POLLIN)

    def drain_subscriptions(timeout_ms: int) -> None:
        if pub.poll(timeout_ms, zmq.POLLIN):
            while pub.poll(0, zmq.POLLIN):
                subscriptions.append(pub.recv())

    while True:
        events = dict(poller.poll(10000))
        if pub in events:
            drain_subscriptions(0)
        if router not in events:
            continue
        identity, *body = router.recv_multipart()
        if len(body) != 1:
            router.send_multipart([identity, b"multipart %d" % len(body)])
            continue
        command = body[0]
        if command.startswith(b"echo "):
            router.send_multipart([identity, command[5:]])
        elif command == b"multi":
            router.send_multipart([identity, b"a", b"b"])
        elif command == b"subs":
            router.send_multipart([identity, json.dumps([s.hex() for s in subscriptions]).encode()])
        elif command.startswith(b"publish "):
            _, topic, count, size = command.split(b" ")
            deadline = time.monotonic() + 5
            while not any(s[:1] == b"\x01" and topic.startswith(s[1:]) for s in subscriptions):
                if time.monotonic() > deadline:
                    break
                drain_subscriptions(50)
            pub.send_multipart([b"zzz/other", b"not for you"])
            for i in range(int(count)):
                pub.send_multipart([topic, struct.pack("<i", i) + bytes([i % 251]) * int(size)])
            router.send_multipart([identity, b"done"])
        elif command == b"quit":
            router.send_multipart([identity, b"bye"])
            time.sleep(0.1)
            router.close()
            pub.close()
            ctx.term()
            return 0
        else:
            router.send_multipart([identity, b"unknown " + command[:32]])


if __name__ == "__main__":
    sys.exit(main())
