#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace avatar_bridge {

// The little the ZMTP client needs from an operating system: a connected TCP byte stream with timeouts.
// PosixNetwork implements it with BSD sockets (tests, tools); the Unreal module implements it with
// FSocket (Source/AvatarBridge/Private/UnrealNetwork.cpp). Nothing here throws.
enum class IoStatus { Ok, Timeout, Closed };

class Stream {
public:
    virtual ~Stream() = default;
    // Reads at most `capacity` bytes, waiting up to `timeoutMs` for the first one. Ok: `received` > 0.
    // Closed: the peer ended the stream, an error occurred, or close() was called.
    virtual IoStatus read(std::uint8_t* into, std::size_t capacity, int timeoutMs, std::size_t& received) noexcept = 0;
    // Writes every byte, waiting up to `timeoutMs` in all for the peer to take them. Anything but Ok
    // leaves the stream unusable (part of a frame may have gone out).
    virtual IoStatus writeAll(const std::uint8_t* data, std::size_t size, int timeoutMs) noexcept = 0;
    // Any thread, any number of times: pending and later reads and writes return Closed soon.
    virtual void close() noexcept = 0;
};

class Network {
public:
    virtual ~Network() = default;
    // A stream to host:port (a name or a numeric IPv4/IPv6 address), or null with `error` set.
    virtual std::unique_ptr<Stream> connect(const std::string& host, int port, int timeoutMs,
                                            std::string& error) noexcept = 0;
};

#if !defined(_WIN32)
// BSD sockets (Linux, macOS).
std::shared_ptr<Network> posixNetwork() noexcept;
#endif

}  // namespace avatar_bridge
