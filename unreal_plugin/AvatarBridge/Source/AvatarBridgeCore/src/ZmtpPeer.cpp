#include "avatar_bridge/ZmtpPeer.hpp"

#include <chrono>
#include <string_view>

#include "avatar_bridge/WallClock.hpp"

namespace avatar_bridge {
namespace {

// A SUB's subscription as a ZMTP 3.0 message: 0x01 (or 0x00 to cancel) + prefix.
std::string subscription(const std::string& prefix, bool on) {
    std::string body(1, on ? '\x01' : '\x00');
    body += prefix;
    return body;
}

}  // namespace

bool parseTcpEndpoint(const std::string& endpoint, std::string& host, int& port) noexcept {
    const std::string_view scheme = "tcp://";
    if (endpoint.compare(0, scheme.size(), scheme) != 0) {
        return false;
    }
    const std::string rest = endpoint.substr(scheme.size());
    const std::size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
        return false;
    }
    std::string h = rest.substr(0, colon);
    if (h.front() == '[') {
        if (h.size() < 3 || h.back() != ']') {
            return false;
        }
        h = h.substr(1, h.size() - 2);
    }
    long p = 0;
    for (char c : rest.substr(colon + 1)) {
        if (c < '0' || c > '9' || p > 65535) {
            return false;
        }
        p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) {
        return false;
    }
    host = std::move(h);
    port = static_cast<int>(p);
    return true;
}

ZmtpPeer::ZmtpPeer(std::shared_ptr<Network> network, ZmtpSocketType type, OnMessage onMessage, Options options)
    : network_(std::move(network)), type_(type), onMessage_(std::move(onMessage)), options_(options) {
    reader_ = std::thread([this] {
        readLoop();
        readerDone_ = true;
    });
    writer_ = std::thread([this] {
        writeLoop();
        writerDone_ = true;
    });
}

ZmtpPeer::~ZmtpPeer() {
    stop();
    reader_.join();
    writer_.join();
}

void ZmtpPeer::setEndpoint(const std::string& host, int port) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (host == host_ && port == port_) {
        return;
    }
    host_ = host;
    port_ = port;
    ++generation_;
    if (current_) {
        current_->close();
        current_.reset();  // the writer waits for the next connection instead of writing into this one
    }
    changed_.notify_all();
}

bool ZmtpPeer::send(std::string payload) noexcept {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (queue_.size() >= options_.maxQueued) {
            return false;
        }
        queue_.push_back(std::move(payload));
    }
    changed_.notify_all();
    return true;
}

void ZmtpPeer::subscribe(const std::string& prefix, bool on) noexcept {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        const bool changed = on ? subscriptions_.insert(prefix).second : subscriptions_.erase(prefix) != 0;
        if (!changed || !current_) {
            return;  // a connection made later sends the whole set
        }
        queue_.push_back(subscription(prefix, on));
    }
    changed_.notify_all();
}

void ZmtpPeer::reset() noexcept {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        ++generation_;
        queue_.clear();
        if (current_) {
            current_->close();
            current_.reset();  // what is queued from now on goes to the next connection
        }
    }
    changed_.notify_all();
}

void ZmtpPeer::stop() noexcept {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        if (current_) {
            current_->close();
        }
    }
    changed_.notify_all();
}

bool ZmtpPeer::connected() const noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    return current_ != nullptr;
}

std::string ZmtpPeer::lastError() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return lastError_;
}

void ZmtpPeer::pause(std::unique_lock<std::mutex>& lock, int ms, std::uint64_t generation) {
    changed_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stopping_ || generation_ != generation; });
}

void ZmtpPeer::readLoop() {
    std::vector<ZmtpPart> message;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        const std::uint64_t generation = generation_;
        if (host_.empty() || !network_) {
            pause(lock, options_.pollMs * 10, generation);
            continue;
        }
        const std::string host = host_;
        const int port = port_;
        lock.unlock();

        std::string error;
        std::shared_ptr<ZmtpConnection> connection;
        if (auto stream = network_->connect(host, port, options_.connectTimeoutMs, error)) {
            connection = ZmtpConnection::handshake(std::move(stream), type_, options_.connectTimeoutMs, error);
        }

        lock.lock();
        if (!connection) {
            lastError_ = "tcp://" + host + ":" + std::to_string(port) + ": " + error;
            pause(lock, options_.reconnectIntervalMs, generation);
            continue;
        }
        if (stopping_ || generation_ != generation) {
            connection->close();
            continue;
        }
        current_ = connection;
        lastError_.clear();
        ++connections_;
        if (type_ == ZmtpSocketType::Sub) {
            // Whatever was queued targeted the old connection; this one starts from the whole set.
            queue_.clear();
            for (const std::string& prefix : subscriptions_) {
                queue_.push_back(subscription(prefix, true));
            }
        }
        changed_.notify_all();
        lock.unlock();

        error.clear();
        // Each receive returns within pollMs; a longer gap means this thread was held up (resume at newest).
        const auto resumeAfter = std::chrono::milliseconds(type_ == ZmtpSocketType::Sub ? options_.resumeAfterMs : 0);
        auto lastRead = std::chrono::steady_clock::now();
        bool resubscribe = false;
        for (;;) {
            const IoStatus s = connection->receive(message, options_.pollMs, error);
            const auto now = std::chrono::steady_clock::now();
            const bool paused = resumeAfter.count() > 0 && now - lastRead > resumeAfter;
            lastRead = now;
            if (s == IoStatus::Ok && paused) {
                resubscribe = true;  // this message and all queued behind it are stale
                ++resubscribes_;
                break;
            }
            if (s == IoStatus::Ok) {
                if (onMessage_) {
                    onMessage_(std::move(message), WallClock::nowNs());
                }
                continue;
            }
            if (s == IoStatus::Closed) {
                break;
            }
            const std::lock_guard<std::mutex> check(mutex_);
            if (stopping_ || generation_ != generation) {
                break;
            }
        }
        connection->close();

        lock.lock();
        if (current_ == connection) {
            current_.reset();
        }
        // Reset, new endpoint or resubscribe: connect again at once.
        const bool replaced = resubscribe || generation_ != generation;
        if (!replaced && !stopping_) {
            lastError_ = "tcp://" + host + ":" + std::to_string(port) + ": " + (error.empty() ? "connection lost" : error);
            pause(lock, options_.reconnectIntervalMs, generation);
        }
    }
}

void ZmtpPeer::writeLoop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        changed_.wait(lock, [this] { return stopping_ || (current_ && !queue_.empty()); });
        if (stopping_) {
            break;
        }
        const std::shared_ptr<ZmtpConnection> connection = current_;
        std::string payload = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        // A failed send closes the connection; the reader sees that and reconnects. The message is lost,
        // as it would be with libzmq when a connection drops.
        (void)connection->send({payload}, options_.sendTimeoutMs);
        lock.lock();
    }
}

}  // namespace avatar_bridge
