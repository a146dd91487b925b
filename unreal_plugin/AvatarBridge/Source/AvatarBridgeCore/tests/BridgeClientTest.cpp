// BridgeClient against an in-process stand-in for the bridge's sockets (a ROUTER and a PUB on loopback),
// so routing, framing and failure handling can be tested exactly, without the real bridge.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <zmq.hpp>

#include "TestPayloads.hpp"
#include "avatar_bridge/BridgeClient.hpp"
#include "avatar_bridge/RequestEncoder.hpp"

using namespace avatar_bridge;
using namespace std::chrono_literals;

namespace {

class FakeBridgeSockets {
public:
    FakeBridgeSockets() {
        router.bind("tcp://127.0.0.1:*");
        pub.bind("tcp://127.0.0.1:*");
        requestEndpoint = router.get(zmq::sockopt::last_endpoint);
        framesEndpoint = pub.get(zmq::sockopt::last_endpoint);
    }

    // The next request as (identity, payload), or nothing within the timeout.
    std::optional<std::pair<std::string, std::string>> receive(std::chrono::milliseconds timeout) {
        std::vector<zmq::pollitem_t> items = {{router.handle(), 0, ZMQ_POLLIN, 0}};
        if (zmq::poll(items, timeout) == 0) {
            return std::nullopt;
        }
        zmq::message_t identity;
        zmq::message_t payload;
        (void)router.recv(identity);
        (void)router.recv(payload);
        return std::make_pair(identity.to_string(), payload.to_string());
    }

    void reply(const std::string& identity, const std::string& payload) {
        router.send(zmq::buffer(identity), zmq::send_flags::sndmore);
        router.send(zmq::buffer(payload));
    }

    void publish(const std::vector<std::string>& parts) {
        for (std::size_t i = 0; i < parts.size(); ++i) {
            pub.send(zmq::buffer(parts[i]), i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        }
    }

    zmq::context_t context;
    zmq::socket_t router{context, zmq::socket_type::router};
    zmq::socket_t pub{context, zmq::socket_type::pub};
    std::string requestEndpoint;
    std::string framesEndpoint;
};

// Thread-safe record of what the client's handlers saw.
struct Seen {
    std::mutex mutex;
    std::vector<Reply> unsolicited;
    std::vector<std::uint64_t> frameSeqs;
    std::vector<Event> events;
    std::atomic<int> decodeErrors{0};
    std::vector<std::size_t> batchRows;
    std::atomic<int> malformedBatches{0};

    BridgeClient::Handlers handlers() {
        BridgeClient::Handlers h;
        h.onUnsolicitedReply = [this](const Reply& r) {
            const std::lock_guard<std::mutex> lock(mutex);
            unsolicited.push_back(r);
        };
        h.onFrame = [this](DecodedFrame&& f, std::int64_t) {
            const std::lock_guard<std::mutex> lock(mutex);
            frameSeqs.push_back(f.header().seq);
        };
        h.onEvent = [this](const Event& e) {
            const std::lock_guard<std::mutex> lock(mutex);
            events.push_back(e);
        };
        h.onDecodeError = [this](const std::string&) { ++decodeErrors; };
        h.onMotionBatch = [this](MotionBatch&& b, std::int64_t) {
            const std::lock_guard<std::mutex> lock(mutex);
            batchRows.push_back(b.rows);
        };
        h.onMalformedBatch = [this](const std::string&) { ++malformedBatches; };
        return h;
    }

    template <typename F>
    bool waitFor(F&& done, std::chrono::milliseconds timeout = 3000ms) {
        const auto end = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < end) {
            {
                const std::lock_guard<std::mutex> lock(mutex);
                if (done()) {
                    return true;
                }
            }
            std::this_thread::sleep_for(5ms);
        }
        return false;
    }
};

}  // namespace

TEST(BridgeClient, RepliesAreMatchedToRequestsById) {
    FakeBridgeSockets bridge;
    Seen seen;
    BridgeClient client(bridge.requestEndpoint, seen.handlers());

    auto hello = client.request(7, RequestEncoder::hello(7, "test"));
    const auto request = bridge.receive(2000ms);
    ASSERT_TRUE(request.has_value());
    EXPECT_EQ(request->second, RequestEncoder::hello(7, "test"));  // one frame, exactly the encoded map

    // A reply for nobody first, then the awaited one: each goes where it belongs.
    bridge.reply(request->first, payloads::error(99, 107, "BAD_SIZE", "0123456789abcdef").bytes());
    bridge.reply(request->first, payloads::hello(7).bytes());
    ASSERT_EQ(hello.wait_for(2s), std::future_status::ready);
    const std::optional<Reply> helloReply = hello.get();
    ASSERT_TRUE(helloReply.has_value());
    EXPECT_EQ(std::get<HelloReply>(*helloReply).id, 7u);
    ASSERT_TRUE(seen.waitFor([&] { return seen.unsolicited.size() == 1; }));
    EXPECT_EQ(std::get<ErrorReply>(seen.unsolicited[0]).id, 99u);

    // A request that times out is forgotten: its late reply becomes unsolicited.
    EXPECT_FALSE(client.call(8, RequestEncoder::list(8), 50ms).has_value());
    const auto late = bridge.receive(2000ms);
    ASSERT_TRUE(late.has_value());
    bridge.reply(late->first, payloads::list(8).bytes());
    ASSERT_TRUE(seen.waitFor([&] { return seen.unsolicited.size() == 2; }));

    // Garbage is counted and dropped; the client keeps working.
    bridge.reply(late->first, "not msgpack");
    EXPECT_TRUE(seen.waitFor([&] { return seen.decodeErrors == 1; }));
    EXPECT_EQ(client.decodeErrors(), 1u);
}

TEST(BridgeClient, FramesAndEventsArriveAndBadMultipartIsCounted) {
    FakeBridgeSockets bridge;
    Seen seen;
    BridgeClient client(bridge.requestEndpoint, seen.handlers());
    client.connectFrames(bridge.framesEndpoint);
    client.subscribe("frame/");
    client.subscribe("event/");

    // PUB drops everything until the subscription has arrived: publish until the first frame lands.
    const std::string frame = payloads::motionFrame(0).bytes();
    ASSERT_TRUE(seen.waitFor([&] {
        bridge.publish({"frame/0123456789abcdef", frame});
        return !seen.frameSeqs.empty();
    }));

    bridge.publish({"frame/0123456789abcdef"});                         // no payload
    bridge.publish({"frame/0123456789abcdef", frame, "extra"});         // one part too many
    bridge.publish({"frame/0123456789abcdef", "\x93\x01\x02\x03"});     // not a map
    bridge.publish({"status/0123456789abcdef", frame});                 // not subscribed: never arrives
    bridge.publish({"event/0123456789abcdef", payloads::closedEvent("0123456789abcdef", "shutdown").bytes()});
    bridge.publish({"frame/0123456789abcdef", payloads::motionFrame(1).bytes()});
    ASSERT_TRUE(seen.waitFor([&] { return seen.frameSeqs.back() == 1 && seen.events.size() == 1; }));
    const std::lock_guard<std::mutex> lock(seen.mutex);
    EXPECT_EQ(std::count(seen.frameSeqs.begin(), seen.frameSeqs.end(), 1u), 1);
    EXPECT_EQ(std::get<ClosedEvent>(seen.events[0]).reason, "shutdown");
    EXPECT_EQ(seen.decodeErrors, 3);
    EXPECT_EQ(client.framesReceived(), seen.frameSeqs.size() + 1);  // the undecodable frame counts as received
}

TEST(BridgeClient, MotionBatchesArriveFromARealPubAndBadOnesAreCounted) {
    FakeBridgeSockets bridge;
    Seen seen;
    BridgeClient client(bridge.requestEndpoint, seen.handlers());
    client.connectFrames(bridge.framesEndpoint);
    client.subscribe("batch/motion");

    const std::vector<std::string> sessions = {"00000000000000a0", "00000000000000a1"};
    const std::string batch = payloads::motionBatch(sessions, {1, 1}).bytes();
    ASSERT_TRUE(seen.waitFor([&] {
        bridge.publish({"batch/motion", batch});
        return !seen.batchRows.empty();
    }));
    bridge.publish({"batch/motion", payloads::motionBatch(sessions, {2, 2}).floats("root", {0.0f}).bytes()});  // short column
    bridge.publish({"batch/motion", "\x93\x01\x02\x03"});                                                  // not a map
    bridge.publish({"frame/0123456789abcdef", payloads::motionFrame(0).bytes()});  // not subscribed: never arrives
    const std::vector<std::string> four = {"00000000000000b0", "00000000000000b1", "00000000000000b2", "00000000000000b3"};
    bridge.publish({"batch/motionx", payloads::motionBatch(four, {4, 4, 4, 4}).bytes()});  // not a motion batch
    const std::vector<std::string> grouped = {"00000000000000c0", "00000000000000c1", "00000000000000c2"};
    bridge.publish({"batch/motion/g1/", payloads::motionBatch(grouped, {5, 5, 5}).bytes()});
    bridge.publish({"batch/motion", payloads::motionBatch({"00000000000000a2"}, {3}).bytes()});
    ASSERT_TRUE(seen.waitFor([&] { return seen.batchRows.back() == 1; }));
    EXPECT_EQ(seen.malformedBatches, 2);
    EXPECT_EQ(seen.decodeErrors, 2);
    const std::lock_guard<std::mutex> lock(seen.mutex);
    EXPECT_TRUE(seen.frameSeqs.empty());
    // A batch group's message (`batch/motion/<group>/`) is a motion batch like `batch/motion`'s; another topic is not.
    EXPECT_EQ(std::count(seen.batchRows.begin(), seen.batchRows.end(), 3u), 1);
    EXPECT_EQ(std::count(seen.batchRows.begin(), seen.batchRows.end(), 4u), 0);
    EXPECT_EQ(client.batchesReceived(), seen.batchRows.size() + 2);  // the dropped ones count as received
}

TEST(BridgeClient, ResetCancelsPendingRequests) {
    FakeBridgeSockets bridge;
    BridgeClient client(bridge.requestEndpoint, {});
    auto pending = client.request(3, RequestEncoder::ping(3, ""));
    ASSERT_TRUE(bridge.receive(2000ms).has_value());  // the bridge got it but never answers
    client.reset();
    ASSERT_EQ(pending.wait_for(2s), std::future_status::ready);
    EXPECT_FALSE(pending.get().has_value());

    // The fresh socket works: the bridge sees a new peer and can answer it.
    auto again = client.request(4, RequestEncoder::ping(4, ""));
    const auto request = bridge.receive(2000ms);
    ASSERT_TRUE(request.has_value());
    bridge.reply(request->first, payloads::reply("pong", 4).uint("t_ns", 1).bytes());
    ASSERT_EQ(again.wait_for(2s), std::future_status::ready);
    const std::optional<Reply> pong = again.get();
    ASSERT_TRUE(pong.has_value());
    EXPECT_TRUE(std::holds_alternative<PongReply>(*pong));
}

TEST(BridgeClient, BadEndpointIsReportedInsteadOfEndingTheThread) {
    BridgeClient client("tcp://127.0.0.1:notaport", {});
    EXPECT_FALSE(client.call(1, RequestEncoder::hello(1, "test"), 200ms).has_value());
    EXPECT_FALSE(client.transportError().empty());
    client.reset();  // still alive and accepting commands
    EXPECT_FALSE(client.call(2, RequestEncoder::hello(2, "test"), 100ms).has_value());
}
