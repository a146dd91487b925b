#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "avatar_bridge/CurveKeys.hpp"
#include "avatar_bridge/Frame.hpp"
#include "avatar_bridge/Messages.hpp"
#include "avatar_bridge/MotionBatch.hpp"
#include "avatar_bridge/Stream.hpp"

namespace avatar_bridge {

// The bridge's two sockets (docs/protocol.md §1): a DEALER for requests, replies and inputs, and a SUB
// for frames and events. Two builds share this interface:
// - the default speaks ZMTP 3 itself (Zmtp.hpp, ZmtpPeer.hpp) over a Network (POSIX sockets here, FSocket
//   in Unreal): no third-party library, NULL security only (loopback, or a trusted network);
// - with AVATAR_BRIDGE_WITH_LIBZMQ (BridgeClientLibzmq.cpp) it uses libzmq, which adds CURVE.
// Any thread may call the public methods; none waits on the network except call(). Replies are matched on
// the DEALER's receiving thread, frames decoded on the SUB's (zero-copy: the views point into the
// received message) and handed to the handlers there.
//
// Resume at newest (docs/protocol.md §1): the SUB's receiving thread notes when it last read (or waited to
// read). A read more than `resumeAfter` after the previous one (the thread was held up: a stopped process,
// a debugger, a handler that blocked) presumes whatever is queued stale: the SUB connection is dropped
// with all it holds and a fresh one subscribes to the same prefixes (counted in resubscribes()), so the
// first frame handed on after a pause is one published after it. 0 turns the rule off.
//
// This class moves messages; it knows nothing of sessions. AvatarLink adds the handshake, heartbeat and
// reconnect logic on top.
class BridgeClient {
public:
    static constexpr std::chrono::milliseconds kDefaultResumeAfter{250};

    struct Handlers {
        // Receiving thread. `arrivalNs`: wall clock (CLOCK_REALTIME) when the message was received.
        std::function<void(DecodedFrame&& frame, std::int64_t arrivalNs)> onFrame;
        std::function<void(const Event& event)> onEvent;
        // `batch/motion` messages (protocol minor 1), once subscribed to; zero-copy like frames.
        std::function<void(MotionBatch&& batch, std::int64_t arrivalNs)> onMotionBatch;
        // A batch that broke the contract and was dropped whole (also counted in decodeErrors and onDecodeError).
        std::function<void(const std::string& what)> onMalformedBatch;
        // Replies nobody waits for: errors and acks of inputs, late replies of cancelled requests.
        std::function<void(const Reply& reply)> onUnsolicitedReply;
        // A message from the bridge that broke the contract; it was dropped.
        std::function<void(const std::string& what)> onDecodeError;
    };

    // Connects the DEALER to `requestEndpoint` (e.g. "tcp://127.0.0.1:5570") and starts the threads.
    // With `curve.enabled()`, both sockets authenticate and encrypt with CURVE (libzmq build only; the
    // default build then reports why in transportError() and never connects). `network` is where the ZMTP
    // build opens its TCP streams; null means POSIX sockets (not on Windows, where it must be given).
    BridgeClient(std::string requestEndpoint, Handlers handlers, CurveKeys curve = {},
                 std::shared_ptr<Network> network = nullptr,
                 std::chrono::milliseconds resumeAfter = kDefaultResumeAfter);
    ~BridgeClient();

    BridgeClient(const BridgeClient&) = delete;
    BridgeClient& operator=(const BridgeClient&) = delete;

    // Whether this build can talk to a CURVE bridge.
    static bool supportsCurve() noexcept;

    // Ids for requests and inputs: unique per client, never 0 (0 is what the bridge uses when it had none).
    std::uint64_t nextId() noexcept { return ++lastId_; }

    // Sends a request already encoded with `id`; the future gets the reply with that id, or nothing when the
    // request was cancelled (reset(), cancelPending(), shutdown).
    std::future<std::optional<Reply>> request(std::uint64_t id, std::string payload);
    // request() and wait; nothing on timeout (the request is then forgotten) or on reset.
    std::optional<Reply> call(std::uint64_t id, std::string payload, std::chrono::milliseconds timeout);
    // Fire-and-forget (inputs); their errors arrive through onUnsolicitedReply. False when the outgoing
    // queue is full (the bridge has been away for long) and the message was dropped.
    bool send(std::string payload) noexcept;

    // (Re)connects the SUB socket to the bridge's PUB endpoint; subscriptions are kept across reconnects.
    void connectFrames(const std::string& endpoint) noexcept;
    void subscribe(const std::string& prefix) noexcept;
    void unsubscribe(const std::string& prefix) noexcept;
    // Drops both connections and everything queued in them, cancels pending requests (their futures get nothing) and
    // reconnects fresh ones: what to do when the bridge stopped answering or restarted.
    void reset() noexcept;
    // Cancels pending requests (their futures get nothing), keeping the connections (and with them the identity the
    // bridge knows as the owner of our sessions).
    void cancelPending() noexcept;
    // Flag-then-poll shutdown: stop() returns at once, finished() turns true when the threads are done
    // (within about 50 ms); the destructor then joins without waiting.
    void stop() noexcept;
    bool finished() const noexcept;

    // Why the request socket is not connected (bad endpoint, refused connection, CURVE unsupported), or empty.
    std::string transportError() const;
    std::uint64_t framesReceived() const noexcept;
    std::uint64_t batchesReceived() const noexcept;  // `batch/` messages, decodable or not
    std::uint64_t decodeErrors() const noexcept;
    // Fresh SUB connections made by the resume-at-newest rule.
    std::uint64_t resubscribes() const noexcept;

private:
    struct Impl;

    std::atomic<std::uint64_t> lastId_{0};
    std::unique_ptr<Impl> impl_;
};

}  // namespace avatar_bridge
