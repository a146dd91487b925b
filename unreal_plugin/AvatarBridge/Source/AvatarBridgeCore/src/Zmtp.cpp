#include "avatar_bridge/Zmtp.hpp"

#include "Deadline.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace avatar_bridge {
namespace {

constexpr std::uint8_t kMore = 0x01;
constexpr std::uint8_t kLong = 0x02;
constexpr std::uint8_t kCommand = 0x04;
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kMaxCommandBytes = 64 * 1024;
constexpr int kPongTimeoutMs = 1000;

using Clock = std::chrono::steady_clock;


std::uint64_t readBigEndian64(const std::uint8_t* p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
        v = (v << 8) | p[i];
    }
    return v;
}

std::uint32_t readBigEndian32(const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

void appendHeader(std::vector<std::uint8_t>& out, std::uint8_t flags, std::size_t size) {
    if (size <= 255) {
        out.push_back(flags);
        out.push_back(static_cast<std::uint8_t>(size));
        return;
    }
    out.push_back(static_cast<std::uint8_t>(flags | kLong));
    for (int shift = 56; shift >= 0; shift -= 8) {
        out.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(size) >> shift));
    }
}

// Command body: name length, name, data (spec 23's grammar; e.g. "\x05READY" + properties).
std::string command(std::string_view name, std::string_view data) {
    std::string body;
    body.push_back(static_cast<char>(name.size()));
    body.append(name);
    body.append(data);
    return body;
}

std::string property(std::string_view name, std::string_view value) {
    std::string p;
    p.push_back(static_cast<char>(name.size()));
    p.append(name);
    const auto n = static_cast<std::uint32_t>(value.size());
    for (int shift = 24; shift >= 0; shift -= 8) {
        p.push_back(static_cast<char>((n >> shift) & 0xff));
    }
    p.append(value);
    return p;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
               return lower(x) == lower(y);
           });
}

}  // namespace

std::unique_ptr<ZmtpConnection> ZmtpConnection::handshake(std::unique_ptr<Stream> stream, ZmtpSocketType type,
                                                          int timeoutMs, std::string& error,
                                                          std::uint64_t maxFrameBytes) noexcept {
    if (!stream) {
        error = "no stream";
        return nullptr;
    }
    std::unique_ptr<ZmtpConnection> c(new ZmtpConnection(std::move(stream), type, maxFrameBytes));
    if (!c->exchangeGreetingAndReady(timeoutMs, error)) {
        c->close();
        return nullptr;
    }
    return c;
}

bool ZmtpConnection::exchangeGreetingAndReady(int timeoutMs, std::string& error) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    std::uint8_t greeting[kGreetingSize] = {};
    greeting[0] = 0xff;  // signature; bytes 1-8 are padding
    greeting[9] = 0x7f;  // end of signature, low bit set: a versioned (3.x) peer
    greeting[10] = 3;    // major
    greeting[11] = 0;    // minor: 3.0 (see the header)
    std::memcpy(greeting + 12, "NULL", 4);
    // as-server (byte 32) = 0 for NULL, and the filler stays zero.
    if (stream_->writeAll(greeting, sizeof greeting, remainingMs(deadline)) != IoStatus::Ok) {
        error = "could not send the ZMTP greeting";
        return false;
    }
    const IoStatus greeted = fill(kGreetingSize, remainingMs(deadline), error);
    const std::uint8_t* peer = in_.data() + inStart_;
    const std::size_t mechanismEnd = 32;
    const auto mechanismOf = [peer] {
        return std::string(reinterpret_cast<const char*>(peer + 12), strnlen(reinterpret_cast<const char*>(peer + 12), 20));
    };
    if (greeted != IoStatus::Ok) {
        // libzmq hangs up on a mechanism mismatch, sometimes right after the part of its greeting naming its own.
        if (inEnd_ - inStart_ >= mechanismEnd && peer[0] == 0xff && mechanismOf() != "NULL") {
            error = "the peer wants the " + mechanismOf() + " security mechanism; this build speaks NULL only (CURVE needs the libzmq build)";
        } else if (greeted == IoStatus::Closed) {
            // libzmq hangs up on a mechanism mismatch after sending part of its greeting (which the reset
            // may discard), so a NULL client cannot always tell this from any other hang-up.
            error = "the peer hung up during the ZMTP greeting (a CURVE bridge does this to NULL clients; "
                    "CURVE needs the libzmq build)";
        } else {
            error = "no ZMTP greeting from the peer in time";
        }
        return false;
    }
    if (peer[0] != 0xff || (peer[9] & 1) == 0) {
        error = "the peer is not a ZMTP 3 endpoint (bad signature)";
        return false;
    }
    if (peer[10] < 3) {
        error = "the peer speaks ZMTP " + std::to_string(peer[10]) + ".x; 3.0 or later is needed";
        return false;
    }
    const std::string mechanism = mechanismOf();
    if (mechanism != "NULL") {
        error = "the peer wants the " + mechanism + " security mechanism; this build speaks NULL only (CURVE needs the libzmq build)";
        return false;
    }
    inStart_ += kGreetingSize;

    const std::string ready =
        command("READY", property("Socket-Type", type_ == ZmtpSocketType::Dealer ? "DEALER" : "SUB"));
    {
        const std::lock_guard<std::mutex> lock(sendMutex_);
        if (writeFrames({ready}, kCommand, remainingMs(deadline)) != IoStatus::Ok) {
            error = "could not send READY";
            return false;
        }
    }

    std::uint8_t flags = 0;
    std::size_t headerSize = 0;
    std::uint64_t bodySize = 0;
    for (;;) {
        const Parsed parsed = parseFrame(flags, headerSize, bodySize, error);
        if (parsed == Parsed::Bad) {
            return false;
        }
        if (parsed == Parsed::Frame) {
            break;
        }
        if (fill(headerSize + bodySize, remainingMs(deadline), error) != IoStatus::Ok) {
            if (error.empty()) {
                error = "no READY from the peer";
            }
            return false;
        }
    }
    const std::uint8_t* body = in_.data() + inStart_ + headerSize;
    const auto size = static_cast<std::size_t>(bodySize);
    inStart_ += headerSize + size;
    if ((flags & kCommand) == 0 || size < 1 || std::size_t{body[0]} + 1 > size) {
        error = "the peer sent a message before READY";
        return false;
    }
    const std::string_view name(reinterpret_cast<const char*>(body + 1), body[0]);
    std::size_t p = 1 + std::size_t{body[0]};
    if (name == "ERROR") {
        const std::size_t reason = p < size ? std::min<std::size_t>(body[p], size - p - 1) : 0;
        error = "the peer refused the handshake: " + std::string(reinterpret_cast<const char*>(body + p + 1), reason);
        return false;
    }
    if (name != "READY") {
        error = "expected READY, got " + std::string(name);
        return false;
    }
    while (p < size) {
        const std::size_t nameLength = body[p++];
        if (p + nameLength + 4 > size) {
            error = "truncated READY property";
            return false;
        }
        const std::string_view key(reinterpret_cast<const char*>(body + p), nameLength);
        p += nameLength;
        const std::uint32_t valueLength = readBigEndian32(body + p);
        p += 4;
        if (valueLength > size - p) {
            error = "truncated READY property";
            return false;
        }
        if (equalsIgnoreCase(key, "Socket-Type")) {
            peerType_.assign(reinterpret_cast<const char*>(body + p), valueLength);
        }
        p += valueLength;
    }
    const bool compatible = type_ == ZmtpSocketType::Dealer
                                ? peerType_ == "ROUTER" || peerType_ == "DEALER" || peerType_ == "REP"
                                : peerType_ == "PUB" || peerType_ == "XPUB";
    if (!compatible) {
        error = std::string("a ") + (type_ == ZmtpSocketType::Dealer ? "DEALER" : "SUB") + " cannot talk to a " +
                (peerType_.empty() ? "peer without Socket-Type" : peerType_);
        return false;
    }
    return true;
}

IoStatus ZmtpConnection::fill(std::size_t count, int timeoutMs, std::string& error) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    if (inEnd_ - inStart_ >= count) {
        return IoStatus::Ok;
    }
    if (inStart_ > 0) {  // keep unread bytes at the front, so the buffer grows only for big frames
        std::memmove(in_.data(), in_.data() + inStart_, inEnd_ - inStart_);
        inEnd_ -= inStart_;
        inStart_ = 0;
    }
    if (in_.size() < std::max(count, kReadChunk)) {
        in_.resize(std::max(count, kReadChunk));
    }
    while (inEnd_ < count) {
        std::size_t received = 0;
        const IoStatus s = stream_->read(in_.data() + inEnd_, in_.size() - inEnd_, remainingMs(deadline), received);
        if (s != IoStatus::Ok) {
            if (s == IoStatus::Closed && error.empty()) {
                error = "the connection closed";
            }
            return s;
        }
        inEnd_ += received;
    }
    return IoStatus::Ok;
}

ZmtpConnection::Parsed ZmtpConnection::parseFrame(std::uint8_t& flags, std::size_t& headerSize, std::uint64_t& bodySize,
                                                  std::string& error) const {
    const std::size_t available = inEnd_ - inStart_;
    bodySize = 0;
    headerSize = 2;
    if (available < 1) {
        return Parsed::NeedMore;
    }
    const std::uint8_t* p = in_.data() + inStart_;
    flags = p[0];
    if ((flags & 0xf8) != 0 || ((flags & kCommand) != 0 && (flags & kMore) != 0)) {
        error = "invalid ZMTP frame flags";
        return Parsed::Bad;
    }
    headerSize = (flags & kLong) != 0 ? 9 : 2;
    if (available < headerSize) {
        return Parsed::NeedMore;
    }
    bodySize = (flags & kLong) != 0 ? readBigEndian64(p + 1) : p[1];
    const std::uint64_t limit = (flags & kCommand) != 0 ? kMaxCommandBytes : maxFrameBytes_;
    if (bodySize > limit) {
        error = "a ZMTP frame of " + std::to_string(bodySize) + " bytes exceeds the limit of " + std::to_string(limit);
        return Parsed::Bad;
    }
    return available - headerSize >= bodySize ? Parsed::Frame : Parsed::NeedMore;
}

IoStatus ZmtpConnection::receive(std::vector<ZmtpPart>& message, int timeoutMs, std::string& error) noexcept {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    for (;;) {
        std::uint8_t flags = 0;
        std::size_t headerSize = 0;
        std::uint64_t bodySize = 0;
        const Parsed parsed = parseFrame(flags, headerSize, bodySize, error);
        if (parsed == Parsed::Bad) {
            close();
            return IoStatus::Closed;
        }
        if (parsed == Parsed::NeedMore) {
            const IoStatus s = fill(headerSize + bodySize, remainingMs(deadline), error);
            if (s != IoStatus::Ok) {
                return s;
            }
            continue;
        }
        const std::uint8_t* body = in_.data() + inStart_ + headerSize;
        const auto size = static_cast<std::size_t>(bodySize);
        inStart_ += headerSize + size;
        if ((flags & kCommand) != 0) {
            handleCommand(body, size);
            continue;
        }
        partial_.push_back(std::make_shared<const std::vector<std::uint8_t>>(body, body + size));
        if ((flags & kMore) == 0) {
            message.clear();
            message.swap(partial_);
            return IoStatus::Ok;
        }
    }
}

void ZmtpConnection::handleCommand(const std::uint8_t* body, std::size_t size) {
    if (size < 1 || std::size_t{body[0]} + 1 > size) {
        return;
    }
    const std::string_view name(reinterpret_cast<const char*>(body + 1), body[0]);
    if (name != "PING") {
        return;  // PONG, a stray SUBSCRIBE or a later extension: nothing a client needs
    }
    // PING: name, 2-byte TTL, context; PONG echoes the context (spec 37).
    const std::size_t contextAt = 1 + 4 + 2;
    const std::string_view context = size > contextAt ? std::string_view(reinterpret_cast<const char*>(body + contextAt), size - contextAt)
                                                      : std::string_view();
    const std::string pong = command("PONG", context);
    const std::lock_guard<std::mutex> lock(sendMutex_);
    if (writeFrames({pong}, kCommand, kPongTimeoutMs) != IoStatus::Ok) {
        close();
    }
}

IoStatus ZmtpConnection::writeFrames(const std::vector<std::string_view>& bodies, std::uint8_t lastFlags, int timeoutMs) {
    out_.clear();
    for (std::size_t i = 0; i < bodies.size(); ++i) {
        appendHeader(out_, i + 1 < bodies.size() ? kMore : lastFlags, bodies[i].size());
        out_.insert(out_.end(), bodies[i].begin(), bodies[i].end());
    }
    return stream_->writeAll(out_.data(), out_.size(), timeoutMs);
}

IoStatus ZmtpConnection::send(const std::vector<std::string_view>& parts, int timeoutMs) noexcept {
    const std::lock_guard<std::mutex> lock(sendMutex_);
    const IoStatus s = writeFrames(parts, 0, timeoutMs);
    if (s != IoStatus::Ok) {
        close();  // part of a message may be out: the stream cannot carry another
    }
    return s;
}

IoStatus ZmtpConnection::subscribe(std::string_view prefix, bool on, int timeoutMs) noexcept {
    if (type_ != ZmtpSocketType::Sub) {
        return IoStatus::Closed;
    }
    std::string body(1, on ? '\x01' : '\x00');
    body.append(prefix);
    return send({body}, timeoutMs);
}

}  // namespace avatar_bridge
