// BSD-socket implementation of Stream/Network for Linux and macOS builds outside Unreal (the tests, the
// fuzz target, tools). The Unreal module uses FSocket instead and does not compile this file.
#include "avatar_bridge/Stream.hpp"

#include "Deadline.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

namespace avatar_bridge {
namespace {

#if defined(MSG_NOSIGNAL)
constexpr int kSendFlags = MSG_NOSIGNAL;  // a vanished peer is an error return, not SIGPIPE
#else
constexpr int kSendFlags = 0;
#endif


// Waits for `events` on `fd`; false on timeout or error.
bool waitFor(int fd, short events, int timeoutMs) {
    pollfd p{fd, events, 0};
    for (;;) {
        const int n = ::poll(&p, 1, timeoutMs);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        return n > 0;
    }
}

class PosixStream final : public Stream {
public:
    explicit PosixStream(int fd) : fd_(fd) {}
    ~PosixStream() override { ::close(fd_); }

    PosixStream(const PosixStream&) = delete;
    PosixStream& operator=(const PosixStream&) = delete;

    IoStatus read(std::uint8_t* into, std::size_t capacity, int timeoutMs, std::size_t& received) noexcept override {
        received = 0;
        if (closed_) {
            return IoStatus::Closed;
        }
        if (!waitFor(fd_, POLLIN, timeoutMs)) {
            return closed_ ? IoStatus::Closed : IoStatus::Timeout;
        }
        for (;;) {
            const ssize_t n = ::recv(fd_, into, capacity, 0);
            if (n > 0) {
                received = static_cast<std::size_t>(n);
                return IoStatus::Ok;
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                return IoStatus::Timeout;
            }
            return IoStatus::Closed;  // 0: orderly end; < 0: reset or close()
        }
    }

    IoStatus writeAll(const std::uint8_t* data, std::size_t size, int timeoutMs) noexcept override {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
        while (size > 0) {
            if (closed_) {
                return IoStatus::Closed;
            }
            const ssize_t n = ::send(fd_, data, size, kSendFlags);
            if (n > 0) {
                data += n;
                size -= static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (!waitFor(fd_, POLLOUT, remainingMs(deadline))) {
                    return closed_ ? IoStatus::Closed : IoStatus::Timeout;
                }
                continue;
            }
            return IoStatus::Closed;
        }
        return IoStatus::Ok;
    }

    void close() noexcept override {
        closed_ = true;
        // shutdown (not close) wakes a thread blocked in poll/recv on this descriptor and keeps the number
        // valid until the destructor, so it cannot be reused under a reader's feet.
        ::shutdown(fd_, SHUT_RDWR);
    }

private:
    const int fd_;
    std::atomic<bool> closed_{false};
};

class PosixNetwork final : public Network {
public:
    std::unique_ptr<Stream> connect(const std::string& host, int port, int timeoutMs, std::string& error) noexcept override {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        const std::string service = std::to_string(port);
        const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
        if (rc != 0) {
            error = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
            return nullptr;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
        error = "no address for '" + host + "'";
        std::unique_ptr<Stream> stream;
        for (addrinfo* a = found; a != nullptr && !stream; a = a->ai_next) {
            stream = tryConnect(*a, remainingMs(deadline), error);
        }
        ::freeaddrinfo(found);
        if (stream) {
            error.clear();
        }
        return stream;
    }

private:
    static std::unique_ptr<Stream> tryConnect(const addrinfo& a, int timeoutMs, std::string& error) {
        const int fd = ::socket(a.ai_family, a.ai_socktype, a.ai_protocol);
        if (fd < 0) {
            error = std::string("socket: ") + std::strerror(errno);
            return nullptr;
        }
        // Non-blocking for a bounded connect and for writes that give up at their deadline.
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
        ::fcntl(fd, F_SETFD, FD_CLOEXEC);
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small frames: latency over packets
#if defined(SO_NOSIGPIPE)
        ::setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
        int rc = ::connect(fd, a.ai_addr, a.ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            int soError = ETIMEDOUT;
            if (waitFor(fd, POLLOUT, timeoutMs)) {
                socklen_t len = sizeof soError;
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len);
            }
            rc = soError == 0 ? 0 : -1;
            errno = soError;
        }
        if (rc != 0) {
            error = std::string("connect: ") + std::strerror(errno);
            ::close(fd);
            return nullptr;
        }
        auto* stream = new (std::nothrow) PosixStream(fd);
        if (stream == nullptr) {
            ::close(fd);
            error = "out of memory";
        }
        return std::unique_ptr<Stream>(stream);
    }
};

}  // namespace

std::shared_ptr<Network> posixNetwork() noexcept {
    return std::make_shared<PosixNetwork>();
}

}  // namespace avatar_bridge
