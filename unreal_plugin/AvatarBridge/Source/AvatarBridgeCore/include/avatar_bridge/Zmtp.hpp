#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "avatar_bridge/Stream.hpp"

namespace avatar_bridge {

// One ZMTP 3.0 connection (rfc.zeromq.org spec 23) with the NULL security mechanism over a Stream, for the
// two client roles the bridge needs (docs/protocol.md §1): a DEALER talking to its ROUTER and a SUB talking
// to its PUB. We greet as 3.0, so a libzmq peer (which greets 3.1) falls back to 3.0 framing: subscriptions
// are plain messages (0x01 + prefix) and it sends no heartbeats unless configured to (PINGs are answered).
// CURVE is not implemented here; the libzmq build of BridgeClient covers it.
//
// Threads: one thread receives; send() may be called from any thread at the same time. Nothing throws.
enum class ZmtpSocketType { Dealer, Sub };

// One message part; shared so decoded frames can keep their bytes alive without copying.
using ZmtpPart = std::shared_ptr<const std::vector<std::uint8_t>>;

class ZmtpConnection {
public:
    static constexpr std::size_t kGreetingSize = 64;
    // Largest frame accepted from the peer: a bigger one is a protocol error, not an allocation.
    static constexpr std::uint64_t kDefaultMaxFrameBytes = 64u << 20;

    // Exchanges greetings and READY commands within `timeoutMs`. Null with `error` set when the peer is not
    // a compatible ZMTP 3 socket (wrong type, other mechanism, ERROR command) or goes away.
    static std::unique_ptr<ZmtpConnection> handshake(std::unique_ptr<Stream> stream, ZmtpSocketType type,
                                                     int timeoutMs, std::string& error,
                                                     std::uint64_t maxFrameBytes = kDefaultMaxFrameBytes) noexcept;

    ZmtpConnection(const ZmtpConnection&) = delete;
    ZmtpConnection& operator=(const ZmtpConnection&) = delete;

    // The next complete message. Timeout: nothing complete within `timeoutMs` (a part-received message is
    // kept for the next call). Closed: the stream ended or the peer broke the protocol (`error` says how);
    // the connection is then finished.
    IoStatus receive(std::vector<ZmtpPart>& message, int timeoutMs, std::string& error) noexcept;

    // One message of the given parts, written as one piece. Anything but Ok finishes the connection.
    IoStatus send(const std::vector<std::string_view>& parts, int timeoutMs) noexcept;
    // SUB only: starts (or with `on` false, cancels) receiving messages whose first part starts with `prefix`.
    IoStatus subscribe(std::string_view prefix, bool on, int timeoutMs) noexcept;

    // Any thread: ends the connection; a blocked receive() returns Closed soon.
    void close() noexcept { stream_->close(); }
    const std::string& peerSocketType() const { return peerType_; }

private:
    ZmtpConnection(std::unique_ptr<Stream> stream, ZmtpSocketType type, std::uint64_t maxFrameBytes)
        : stream_(std::move(stream)), type_(type), maxFrameBytes_(maxFrameBytes) {}

    bool exchangeGreetingAndReady(int timeoutMs, std::string& error);
    IoStatus writeFrames(const std::vector<std::string_view>& bodies, std::uint8_t lastFlags, int timeoutMs);
    // Makes `count` bytes available at in_[inStart_..]; Timeout or Closed when they did not arrive.
    IoStatus fill(std::size_t count, int timeoutMs, std::string& error);
    // One whole frame from the buffer if it is there; Closed on a protocol violation.
    enum class Parsed { Frame, NeedMore, Bad };
    Parsed parseFrame(std::uint8_t& flags, std::size_t& headerSize, std::uint64_t& bodySize, std::string& error) const;
    void handleCommand(const std::uint8_t* body, std::size_t size);

    std::unique_ptr<Stream> stream_;
    const ZmtpSocketType type_;
    const std::uint64_t maxFrameBytes_;
    std::string peerType_;

    std::mutex sendMutex_;  // frames of one message, and PONGs from the receiving thread, never interleave
    std::vector<std::uint8_t> out_;  // guarded by sendMutex_

    // Receiving thread only.
    std::vector<std::uint8_t> in_;
    std::size_t inStart_ = 0;
    std::size_t inEnd_ = 0;
    std::vector<ZmtpPart> partial_;  // parts of a message whose last part has not arrived yet
};

}  // namespace avatar_bridge
