#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "avatar_bridge/Stream.hpp"
#include "avatar_bridge/Zmtp.hpp"

namespace avatar_bridge {

// A connecting ZeroMQ socket of one peer, as libzmq's DEALER or SUB would be with connect(): it connects,
// handshakes, reconnects after a drop, queues outgoing messages while away (bounded, like libzmq's
// high-water mark: a full queue refuses new messages), and a SUB re-sends its subscriptions on every
// connection. A reader thread receives and calls `onMessage`; a writer thread drains the queue, so send()
// never waits on the network. stop() sets a flag and returns; finished() says when both threads are done.
class ZmtpPeer {
public:
    using OnMessage = std::function<void(std::vector<ZmtpPart>&& message, std::int64_t arrivalNs)>;

    struct Options {
        int connectTimeoutMs = 1000;
        int reconnectIntervalMs = 100;
        int sendTimeoutMs = 1000;  // a peer that takes nothing for this long is dropped and reconnected
        int pollMs = 20;           // how often blocked threads look at the stop flag
        std::size_t maxQueued = 1000;
        // SUB: a receive that returns more than this long after the previous one drops its message and the
        // connection, and connects again at once (resume at newest, BridgeClient.hpp); 0: never.
        int resumeAfterMs = 0;
    };

    // Starts the threads (std::system_error if they cannot start). `onMessage` runs on the reader thread.
    ZmtpPeer(std::shared_ptr<Network> network, ZmtpSocketType type, OnMessage onMessage, Options options);
    ZmtpPeer(std::shared_ptr<Network> network, ZmtpSocketType type, OnMessage onMessage)
        : ZmtpPeer(std::move(network), type, std::move(onMessage), Options()) {}
    ~ZmtpPeer();  // stop() and join

    ZmtpPeer(const ZmtpPeer&) = delete;
    ZmtpPeer& operator=(const ZmtpPeer&) = delete;

    // All of these: any thread, never wait on the network, never throw.
    // (Re)targets the peer; an empty host disconnects. The same endpoint again changes nothing.
    void setEndpoint(const std::string& host, int port) noexcept;
    // Queues a one-part message; false when the queue is full (the message is dropped).
    bool send(std::string payload) noexcept;
    // SUB: adds or cancels a prefix subscription, kept across reconnects.
    void subscribe(const std::string& prefix, bool on) noexcept;
    // Drops the connection and the queue and connects again at once (a fresh peer for the other side).
    void reset() noexcept;
    void stop() noexcept;
    bool finished() const noexcept { return readerDone_ && writerDone_; }

    bool connected() const noexcept;
    std::uint64_t connections() const noexcept { return connections_; }
    std::uint64_t resubscribes() const noexcept { return resubscribes_; }
    // Why the last connection attempt failed or the last connection ended; empty while connected.
    std::string lastError() const;

private:
    void readLoop();
    void writeLoop();
    // Waits up to `ms` or until the endpoint changes, a reset is asked for, or stop.
    void pause(std::unique_lock<std::mutex>& lock, int ms, std::uint64_t generation);

    const std::shared_ptr<Network> network_;
    const ZmtpSocketType type_;
    const OnMessage onMessage_;
    const Options options_;

    mutable std::mutex mutex_;  // guards everything below up to the threads
    std::condition_variable changed_;
    std::string host_;
    int port_ = 0;
    std::uint64_t generation_ = 0;  // bumped by setEndpoint and reset: the current connection is stale
    std::shared_ptr<ZmtpConnection> current_;
    std::deque<std::string> queue_;
    std::set<std::string> subscriptions_;
    std::string lastError_;
    bool stopping_ = false;

    std::atomic<std::uint64_t> connections_{0};
    std::atomic<std::uint64_t> resubscribes_{0};
    std::atomic<bool> readerDone_{false};
    std::atomic<bool> writerDone_{false};
    std::thread reader_;
    std::thread writer_;
};

// Splits "tcp://host:port" (host may be "[v6 address]"); false for anything else.
bool parseTcpEndpoint(const std::string& endpoint, std::string& host, int& port) noexcept;

}  // namespace avatar_bridge
