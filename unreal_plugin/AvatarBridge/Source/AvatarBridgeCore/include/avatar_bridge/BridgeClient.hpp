#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "avatar_bridge/CurveKeys.hpp"
#include "avatar_bridge/Frame.hpp"
#include "avatar_bridge/Messages.hpp"

namespace avatar_bridge {

// The bridge's two sockets (docs/protocol.md §1): a DEALER for requests, replies and inputs, and a SUB
// for frames and events. ZeroMQ sockets are not thread-safe, so one I/O thread owns both; any thread
// may call the public methods, which queue commands for it and wake it through an inproc pipe.
// Frames are decoded on the I/O thread (zero-copy: the views point into the received message).
//
// This class moves messages; it knows nothing of sessions. AvatarLink adds the handshake, heartbeat and
// reconnect logic on top.
class BridgeClient {
public:
    struct Handlers {
        // I/O thread. `arrivalNs`: wall clock (CLOCK_REALTIME) when the message was received.
        std::function<void(DecodedFrame&& frame, std::int64_t arrivalNs)> onFrame;
        std::function<void(const Event& event)> onEvent;
        // Replies nobody waits for: errors and acks of inputs, late replies of cancelled requests.
        std::function<void(const Reply& reply)> onUnsolicitedReply;
        // A message from the bridge that broke the contract; it was dropped.
        std::function<void(const std::string& what)> onDecodeError;
    };

    // Thrown into a pending request's future by reset() and shutdown.
    class ConnectionReset : public std::runtime_error {
    public:
        ConnectionReset() : std::runtime_error("bridge connection reset") {}
    };

    // Connects the DEALER to `requestEndpoint` (e.g. "tcp://127.0.0.1:5570") and starts the I/O thread.
    // With `curve.enabled()`, both sockets authenticate and encrypt with CURVE.
    BridgeClient(std::string requestEndpoint, Handlers handlers, CurveKeys curve = {});
    ~BridgeClient();

    BridgeClient(const BridgeClient&) = delete;
    BridgeClient& operator=(const BridgeClient&) = delete;

    // Ids for requests and inputs: unique per client, never 0 (0 is what the bridge uses when it had none).
    std::uint64_t nextId() { return ++lastId_; }

    // Sends a request already encoded with `id`; the future gets the reply with that id.
    std::future<Reply> request(std::uint64_t id, std::string payload);
    // request() and wait; nothing on timeout (the request is then forgotten) or on reset.
    std::optional<Reply> call(std::uint64_t id, std::string payload, std::chrono::milliseconds timeout);
    // Fire-and-forget (inputs); their errors arrive through onUnsolicitedReply.
    void send(std::string payload);

    // (Re)connects the SUB socket to the bridge's PUB endpoint; subscriptions are kept across reconnects.
    void connectFrames(std::string endpoint);
    void subscribe(std::string prefix);
    void unsubscribe(std::string prefix);
    // Drops both sockets and everything queued in them, fails pending requests with ConnectionReset and
    // reconnects fresh ones: what to do when the bridge stopped answering or restarted.
    void reset();

    // Why libzmq refused a socket (bad endpoint or key), or empty. Requests time out meanwhile.
    std::string transportError() const;
    std::uint64_t framesReceived() const { return framesReceived_; }
    std::uint64_t decodeErrors() const { return decodeErrors_; }

private:
    struct Command;
    struct Shared;

    void enqueue(Command command);
    void run();

    Handlers handlers_;
    std::string requestEndpoint_;
    CurveKeys curve_;
    std::atomic<std::uint64_t> lastId_{0};
    std::atomic<std::uint64_t> framesReceived_{0};
    std::atomic<std::uint64_t> decodeErrors_{0};

    std::unique_ptr<Shared> shared_;  // context, command queue and wake pipe
    std::thread thread_;
};

}  // namespace avatar_bridge
