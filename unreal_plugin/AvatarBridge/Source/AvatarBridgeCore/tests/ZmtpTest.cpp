// Our ZMTP 3 client (Zmtp.hpp, ZmtpPeer.hpp) against real libzmq sockets (cppzmq) on loopback, and against
// a raw TCP peer that breaks the protocol on purpose.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include <zmq.hpp>

#include "avatar_bridge/Zmtp.hpp"
#include "avatar_bridge/ZmtpPeer.hpp"

using namespace avatar_bridge;
using namespace std::chrono_literals;

namespace {

int portOf(zmq::socket_t& socket) {
    std::string host;
    int port = 0;
    EXPECT_TRUE(parseTcpEndpoint(socket.get(zmq::sockopt::last_endpoint), host, port));
    return port;
}

std::unique_ptr<ZmtpConnection> connectTo(int port, ZmtpSocketType type, std::string& error, int timeoutMs = 2000) {
    auto stream = posixNetwork()->connect("127.0.0.1", port, timeoutMs, error);
    return stream ? ZmtpConnection::handshake(std::move(stream), type, timeoutMs, error) : nullptr;
}

std::string text(const ZmtpPart& part) { return std::string(part->begin(), part->end()); }

// A loopback TCP listener that runs `script` on the first connection it accepts.
class RawPeer {
public:
    explicit RawPeer(std::function<void(int fd)> script) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(listener_, 1), 0);
        socklen_t len = sizeof a;
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this, script = std::move(script)] {
            const int fd = ::accept(listener_, nullptr, nullptr);
            if (fd >= 0) {
                script(fd);
                ::close(fd);
            }
        });
    }
    ~RawPeer() {
        thread_.join();
        ::close(listener_);
    }
    int port() const { return port_; }

private:
    int listener_ = -1;
    int port_ = 0;
    std::thread thread_;
};

void writeBytes(int fd, const std::string& bytes) { ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size())); }

std::string readBytes(int fd, std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::recv(fd, out.data() + got, n - got, 0);
        if (r <= 0) {
            break;
        }
        got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return out;
}

// A NULL-mechanism ZMTP 3.0 server greeting, and a READY command announcing `type`.
std::string serverGreeting() {
    std::string g(64, '\0');
    g[0] = '\xff';
    g[9] = '\x7f';
    g[10] = 3;
    g[11] = 0;
    std::memcpy(g.data() + 12, "NULL", 4);
    return g;
}

std::string readyCommand(const std::string& type) {
    std::string body = std::string("\x05READY") + "\x0bSocket-Type" + std::string("\0\0\0", 3) +
                       static_cast<char>(type.size()) + type;
    return std::string("\x04") + static_cast<char>(body.size()) + body;
}

}  // namespace

TEST(Zmtp, ParsesTcpEndpoints) {
    std::string host;
    int port = 0;
    ASSERT_TRUE(parseTcpEndpoint("tcp://127.0.0.1:5570", host, port));
    EXPECT_EQ(host, "127.0.0.1");
    EXPECT_EQ(port, 5570);
    ASSERT_TRUE(parseTcpEndpoint("tcp://[::1]:80", host, port));
    EXPECT_EQ(host, "::1");
    for (const char* bad : {"udp://127.0.0.1:1", "tcp://127.0.0.1", "tcp://:5", "tcp://h:0", "tcp://h:70000", "tcp://h:5x"}) {
        EXPECT_FALSE(parseTcpEndpoint(bad, host, port)) << bad;
    }
}

TEST(Zmtp, DealerTalksToALibzmqRouterWithShortAndLongFrames) {
    zmq::context_t context;
    zmq::socket_t router(context, zmq::socket_type::router);
    router.bind("tcp://127.0.0.1:*");
    std::string error;
    auto dealer = connectTo(portOf(router), ZmtpSocketType::Dealer, error);
    ASSERT_TRUE(dealer) << error;
    EXPECT_EQ(dealer->peerSocketType(), "ROUTER");

    const std::string big(100000, 'x');  // 8-byte size form
    for (const std::string& payload : {std::string("hello"), big, std::string()}) {
        ASSERT_EQ(dealer->send({payload}, 1000), IoStatus::Ok);
        zmq::message_t identity;
        zmq::message_t body;
        ASSERT_TRUE(router.recv(identity));
        ASSERT_TRUE(router.recv(body));
        EXPECT_EQ(body.to_string(), payload);
        router.send(identity, zmq::send_flags::sndmore);
        router.send(zmq::buffer("re:" + payload));
        std::vector<ZmtpPart> reply;
        ASSERT_EQ(dealer->receive(reply, 2000, error), IoStatus::Ok) << error;
        ASSERT_EQ(reply.size(), 1u);
        EXPECT_EQ(text(reply[0]), "re:" + payload);
    }
    std::vector<ZmtpPart> none;
    EXPECT_EQ(dealer->receive(none, 30, error), IoStatus::Timeout);
}

TEST(Zmtp, SubReceivesOnlyWhatItSubscribedToFromALibzmqPub) {
    zmq::context_t context;
    zmq::socket_t pub(context, zmq::socket_type::pub);
    pub.bind("tcp://127.0.0.1:*");
    std::string error;
    auto sub = connectTo(portOf(pub), ZmtpSocketType::Sub, error);
    ASSERT_TRUE(sub) << error;
    EXPECT_EQ(sub->peerSocketType(), "PUB");
    ASSERT_EQ(sub->subscribe("frame/a", true, 1000), IoStatus::Ok);

    // PUB drops everything until the subscription has arrived: publish until the first message lands.
    std::vector<ZmtpPart> message;
    bool arrived = false;
    for (int i = 0; i < 200 && !arrived; ++i) {
        pub.send(zmq::buffer(std::string("frame/b")), zmq::send_flags::sndmore);
        pub.send(zmq::buffer(std::string("other")));
        pub.send(zmq::buffer(std::string("frame/a1")), zmq::send_flags::sndmore);
        pub.send(zmq::buffer(std::string(300, 'p')));
        arrived = sub->receive(message, 10, error) == IoStatus::Ok;
    }
    ASSERT_TRUE(arrived) << error;
    ASSERT_EQ(message.size(), 2u);
    EXPECT_EQ(text(message[0]), "frame/a1");
    EXPECT_EQ(message[1]->size(), 300u);
    while (sub->receive(message, 50, error) == IoStatus::Ok) {
        EXPECT_EQ(text(message[0]), "frame/a1");  // never frame/b
    }

    ASSERT_EQ(sub->subscribe("frame/a", false, 1000), IoStatus::Ok);
    std::this_thread::sleep_for(50ms);
    pub.send(zmq::buffer(std::string("frame/a2")), zmq::send_flags::sndmore);
    pub.send(zmq::buffer(std::string("late")));
    EXPECT_EQ(sub->receive(message, 100, error), IoStatus::Timeout);
}

TEST(Zmtp, HandshakeRefusesWrongSocketTypesAndMechanisms) {
    zmq::context_t context;
    zmq::socket_t router(context, zmq::socket_type::router);
    router.bind("tcp://127.0.0.1:*");
    std::string error;
    EXPECT_FALSE(connectTo(portOf(router), ZmtpSocketType::Sub, error));
    EXPECT_NE(error.find("cannot talk to a ROUTER"), std::string::npos) << error;

    if (zmq_has("curve") != 0) {
        char publicKey[41];
        char secretKey[41];
        ASSERT_EQ(zmq_curve_keypair(publicKey, secretKey), 0);
        zmq::socket_t secure(context, zmq::socket_type::router);
        secure.set(zmq::sockopt::curve_server, 1);
        secure.set(zmq::sockopt::curve_secretkey, std::string(secretKey));
        secure.bind("tcp://127.0.0.1:*");
        error.clear();
        EXPECT_FALSE(connectTo(portOf(secure), ZmtpSocketType::Dealer, error));
        EXPECT_NE(error.find("CURVE"), std::string::npos) << error;
    }
}

TEST(Zmtp, APeerThatIsNotZmtpOrNeverGreetsFailsWithinTheTimeout) {
    {
        RawPeer http([](int fd) {
            writeBytes(fd, "HTTP/1.1 400 Bad Request\r\n\r\n" + std::string(64, ' '));
            readBytes(fd, 64);
        });
        std::string error;
        EXPECT_FALSE(connectTo(http.port(), ZmtpSocketType::Dealer, error));
        EXPECT_NE(error.find("not a ZMTP 3 endpoint"), std::string::npos) << error;
    }
    {
        RawPeer silent([](int fd) { readBytes(fd, 64); std::this_thread::sleep_for(400ms); });
        std::string error;
        const auto start = std::chrono::steady_clock::now();
        EXPECT_FALSE(connectTo(silent.port(), ZmtpSocketType::Dealer, error, 200));
        EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
        EXPECT_FALSE(error.empty());
    }
}

TEST(Zmtp, ProtocolViolationsAfterTheHandshakeCloseTheConnection) {
    struct Case {
        const char* what;
        std::string bytes;
    };
    const Case cases[] = {
        {"reserved flag bits", std::string("\x10\x01x", 3)},
        {"a command with MORE", std::string("\x05\x01x", 3)},
        {"a frame over the limit", std::string("\x02\x00\x00\x00\x01\x00\x00\x00\x00", 9)},
    };
    for (const Case& c : cases) {
        RawPeer peer([&c](int fd) {
            writeBytes(fd, serverGreeting());
            readBytes(fd, 64);
            writeBytes(fd, readyCommand("PUB"));
            // A PING first: it must be answered with a PONG echoing the context, then the violation.
            writeBytes(fd, std::string("\x04\x0a\x04PING\x00\x0a", 9) + "ctx");
            readBytes(fd, 2 + 6 + 12 + 4 + 3);  // our READY (SUB)
            EXPECT_EQ(readBytes(fd, 2 + 5 + 3), std::string("\x04\x08\x04PONGctx", 10));
            writeBytes(fd, c.bytes);
            readBytes(fd, 1);  // until the client hangs up
        });
        std::string error;
        auto sub = connectTo(peer.port(), ZmtpSocketType::Sub, error);
        ASSERT_TRUE(sub) << error;
        std::vector<ZmtpPart> message;
        EXPECT_EQ(sub->receive(message, 2000, error), IoStatus::Closed) << c.what;
        EXPECT_FALSE(error.empty()) << c.what;
        sub->close();
    }
}

TEST(ZmtpPeer, QueuesWhileAwayReconnectsAndResubscribes) {
    zmq::context_t context;
    auto pub = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pub);
    pub->bind("tcp://127.0.0.1:*");
    const int port = portOf(*pub);

    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::string> topics;
    ZmtpPeer::Options options;
    options.reconnectIntervalMs = 20;
    ZmtpPeer peer(posixNetwork(), ZmtpSocketType::Sub, [&](std::vector<ZmtpPart>&& m, std::int64_t) {
        const std::lock_guard<std::mutex> lock(mutex);
        topics.push_back(text(m[0]));
        changed.notify_all();
    }, options);
    peer.subscribe("t/", true);  // before any connection: sent on connect
    peer.setEndpoint("127.0.0.1", port);

    const auto publishUntilSeen = [&](zmq::socket_t& socket, const std::string& topic) {
        for (int i = 0; i < 300; ++i) {
            socket.send(zmq::buffer(topic), zmq::send_flags::sndmore);
            socket.send(zmq::buffer(std::string("x")));
            std::unique_lock<std::mutex> lock(mutex);
            if (changed.wait_for(lock, 10ms, [&] { return !topics.empty() && topics.back() == topic; })) {
                return true;
            }
        }
        return false;
    };
    ASSERT_TRUE(publishUntilSeen(*pub, "t/1"));
    EXPECT_EQ(peer.connections(), 1u);

    // The publisher goes away and comes back on the same port: the peer reconnects and subscribes again.
    pub->set(zmq::sockopt::linger, 0);
    pub.reset();
    auto again = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pub);
    for (int attempt = 0;; ++attempt) {  // libzmq closes the old listener asynchronously
        try {
            again->bind("tcp://127.0.0.1:" + std::to_string(port));
            break;
        } catch (const zmq::error_t&) {
            ASSERT_LT(attempt, 200);
            std::this_thread::sleep_for(10ms);
        }
    }
    ASSERT_TRUE(publishUntilSeen(*again, "t/2"));
    EXPECT_EQ(peer.connections(), 2u);

    peer.stop();
    const auto end = std::chrono::steady_clock::now() + 2s;
    while (!peer.finished() && std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_TRUE(peer.finished());  // flag-then-poll: both threads ended without a join
}

TEST(ZmtpPeer, OutgoingQueueIsBoundedWhileDisconnected) {
    ZmtpPeer::Options options;
    options.maxQueued = 2;
    ZmtpPeer peer(posixNetwork(), ZmtpSocketType::Dealer, {}, options);
    EXPECT_TRUE(peer.send("a"));
    EXPECT_TRUE(peer.send("b"));
    EXPECT_FALSE(peer.send("c"));  // refused, like libzmq at its high-water mark
    peer.reset();                   // drops the queue
    EXPECT_TRUE(peer.send("d"));
    EXPECT_FALSE(peer.connected());
}
