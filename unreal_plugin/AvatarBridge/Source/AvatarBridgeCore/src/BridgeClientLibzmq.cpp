// The libzmq build of BridgeClient (AVATAR_BRIDGE_WITH_LIBZMQ): what a CURVE-secured bridge needs. The default
// build uses BridgeClient.cpp (own ZMTP) instead; exactly one of the two is compiled. cppzmq reports errors
// with exceptions, so this file (alone in the core) needs them on: AvatarBridge.Build.cs enables them only in
// the libzmq build, and every zmq::error_t is caught here, on the I/O thread.
#include "avatar_bridge/BridgeClient.hpp"

#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <zmq.hpp>

#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/ProtocolError.hpp"
#include "avatar_bridge/WallClock.hpp"
#include "PublishedMessage.hpp"

namespace avatar_bridge {

// Named, not anonymous: Impl (external linkage) holds a queue of them, which GCC's -Wsubobject-linkage refuses.
namespace libzmq_client {

// What the public methods ask of the I/O thread, which alone touches the sockets.
struct Command {
    enum class Kind { Send, Request, Cancel, CancelAll, ConnectFrames, Subscribe, Unsubscribe, Reset, Stop };
    explicit Command(Kind k, std::string d = {}, std::uint64_t i = 0, std::shared_ptr<std::promise<std::optional<Reply>>> p = {})
        : kind(k), data(std::move(d)), id(i), promise(std::move(p)) {}

    Kind kind;
    std::string data;
    std::uint64_t id;
    std::shared_ptr<std::promise<std::optional<Reply>>> promise;
};

}  // namespace libzmq_client

using libzmq_client::Command;

struct BridgeClient::Impl {
    Impl(std::string endpoint, Handlers h, CurveKeys keys, std::chrono::milliseconds resume)
        : handlers(std::move(h)), requestEndpoint(std::move(endpoint)), curve(std::move(keys)), resumeAfter(resume) {}

    void enqueue(Command command);
    void run();

    Handlers handlers;
    std::string requestEndpoint;
    CurveKeys curve;
    const std::chrono::milliseconds resumeAfter;
    std::atomic<std::uint64_t> resubscribes{0};
    std::atomic<std::uint64_t> framesReceived{0};
    std::atomic<std::uint64_t> batchesReceived{0};
    std::atomic<std::uint64_t> decodeErrors{0};
    std::atomic<bool> finished{false};

    zmq::context_t context{1};
    std::mutex mutex;  // guards `commands`, `wakeSender` (a socket: one thread at a time), `transportError`
    std::deque<Command> commands;
    std::string transportError;  // also guarded by `mutex`
    zmq::socket_t wakeSender{context, zmq::socket_type::pair};
    zmq::socket_t wakeReceiver{context, zmq::socket_type::pair};
    std::thread thread;
};

namespace {

constexpr int kReconnectIntervalMs = 100;
// With a SUB, the I/O thread wakes at least this often, so that a gap between two of its reads longer than
// resumeAfter means it was held up, not that the bridge was quiet.
constexpr std::chrono::milliseconds kReadPoll{20};

zmq::socket_t makeSocket(zmq::context_t& context, zmq::socket_type type, const CurveKeys& curve) {
    zmq::socket_t s(context, type);
    s.set(zmq::sockopt::linger, 0);  // never hang on close with unsent inputs for a dead bridge
    s.set(zmq::sockopt::reconnect_ivl, kReconnectIntervalMs);
    if (curve.enabled()) {
        s.set(zmq::sockopt::curve_serverkey, curve.serverPublic);
        s.set(zmq::sockopt::curve_publickey, curve.clientPublic);
        s.set(zmq::sockopt::curve_secretkey, curve.clientSecret);
    }
    return s;
}

}  // namespace

BridgeClient::BridgeClient(std::string requestEndpoint, Handlers handlers, CurveKeys curve, std::shared_ptr<Network> /*network*/,
                           std::chrono::milliseconds resumeAfter)
    : impl_(std::make_unique<Impl>(std::move(requestEndpoint), std::move(handlers), std::move(curve), resumeAfter)) {
    CurveKeys& keys = impl_->curve;
    if (keys.enabled()) {
        char publicKey[41];
        char secretKey[41];
        if (keys.clientSecret.empty()) {
            if (zmq_curve_keypair(publicKey, secretKey) != 0) {
                impl_->transportError = "this libzmq was built without CURVE support";
            } else {
                keys.clientSecret = secretKey;
            }
        } else if (zmq_curve_public(publicKey, keys.clientSecret.c_str()) != 0) {
            impl_->transportError = "invalid CURVE client secret key";
        }
        if (impl_->transportError.empty()) {
            keys.clientPublic = publicKey;  // always derived from the secret, so the two cannot disagree
        }
    }
    // A unique inproc name per client, so several sources can live in one process.
    const std::string wake = "inproc://avatar-bridge-wake-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
    impl_->wakeReceiver.bind(wake);
    impl_->wakeSender.connect(wake);
    impl_->thread = std::thread([impl = impl_.get()] {
        try {
            impl->run();
        } catch (...) {  // out of memory: the client goes quiet, requests time out
        }
        impl->finished = true;
    });
}

BridgeClient::~BridgeClient() {
    stop();
    impl_->thread.join();
}

bool BridgeClient::supportsCurve() noexcept { return zmq_has("curve") != 0; }

void BridgeClient::stop() noexcept {
    try {
        impl_->enqueue(Command(Command::Kind::Stop));
    } catch (...) {
    }
}

bool BridgeClient::finished() const noexcept { return impl_->finished; }

std::uint64_t BridgeClient::framesReceived() const noexcept { return impl_->framesReceived; }

std::uint64_t BridgeClient::batchesReceived() const noexcept { return impl_->batchesReceived; }

std::uint64_t BridgeClient::decodeErrors() const noexcept { return impl_->decodeErrors; }

std::uint64_t BridgeClient::resubscribes() const noexcept { return impl_->resubscribes; }

void BridgeClient::Impl::enqueue(Command command) {
    const std::lock_guard<std::mutex> lock(mutex);
    commands.push_back(std::move(command));
    wakeSender.send(zmq::const_buffer("", 0), zmq::send_flags::dontwait);
}

std::future<std::optional<Reply>> BridgeClient::request(std::uint64_t id, std::string payload) {
    auto promise = std::make_shared<std::promise<std::optional<Reply>>>();
    auto future = promise->get_future();
    impl_->enqueue(Command(Command::Kind::Request, std::move(payload), id, std::move(promise)));
    return future;
}

std::optional<Reply> BridgeClient::call(std::uint64_t id, std::string payload, std::chrono::milliseconds timeout) {
    auto future = request(id, std::move(payload));
    if (future.wait_for(timeout) != std::future_status::ready) {
        impl_->enqueue(Command(Command::Kind::Cancel, {}, id));
        return std::nullopt;
    }
    return future.get();
}

bool BridgeClient::send(std::string payload) noexcept {
    try {
        impl_->enqueue(Command(Command::Kind::Send, std::move(payload)));
        return true;
    } catch (...) {
        return false;
    }
}

void BridgeClient::connectFrames(const std::string& endpoint) noexcept {
    try {
        impl_->enqueue(Command(Command::Kind::ConnectFrames, endpoint));
    } catch (...) {
    }
}

void BridgeClient::subscribe(const std::string& prefix) noexcept {
    try {
        impl_->enqueue(Command(Command::Kind::Subscribe, prefix));
    } catch (...) {
    }
}

void BridgeClient::unsubscribe(const std::string& prefix) noexcept {
    try {
        impl_->enqueue(Command(Command::Kind::Unsubscribe, prefix));
    } catch (...) {
    }
}

void BridgeClient::cancelPending() noexcept {
    try {
        impl_->enqueue(Command(Command::Kind::CancelAll));
    } catch (...) {
    }
}

void BridgeClient::reset() noexcept {
    try {
        impl_->enqueue(Command(Command::Kind::Reset));
    } catch (...) {
    }
}

std::string BridgeClient::transportError() const {
    const std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->transportError;
}

void BridgeClient::Impl::run() {
        // Either socket may be missing: a bad endpoint or key makes libzmq refuse it, and the client then
    // stays quiet (requests time out) and says why in transportError() instead of ending the thread.
    std::optional<zmq::socket_t> dealer;
    std::optional<zmq::socket_t> sub;
    std::string framesEndpoint;
    std::set<std::string> subscriptions;
    std::optional<std::chrono::steady_clock::time_point> lastRead;  // of the current SUB
    std::map<std::uint64_t, std::shared_ptr<std::promise<std::optional<Reply>>>> pending;

    const auto setTransportError = [&](std::string what) {
        const std::lock_guard<std::mutex> lock(mutex);
        transportError = std::move(what);
    };
    const auto openDealer = [&] {
        dealer.reset();
        zmq::socket_t s = makeSocket(context, zmq::socket_type::dealer, curve);
        s.connect(requestEndpoint);
        dealer = std::move(s);
        setTransportError({});
    };
    const auto openSub = [&] {
        sub.reset();
        if (framesEndpoint.empty()) {
            return;
        }
        zmq::socket_t s = makeSocket(context, zmq::socket_type::sub, curve);
        for (const auto& prefix : subscriptions) {
            s.set(zmq::sockopt::subscribe, prefix);
        }
        s.connect(framesEndpoint);
        sub = std::move(s);
        lastRead.reset();
    };
    // Resume at newest (BridgeClient.hpp): every wake-up and every receive is a read; true when the previous
    // one was longer ago than resumeAfter, and then what the SUB holds is stale.
    const auto pausedTooLong = [&] {
        const auto now = std::chrono::steady_clock::now();
        const bool paused = resumeAfter.count() > 0 && lastRead && now - *lastRead > resumeAfter;
        lastRead = now;
        return paused;
    };
    const auto resumeAtNewest = [&] {
        openSub();  // the old socket closes with linger 0: its queue is dropped
        ++resubscribes;
    };
    const auto failPending = [&] {
        for (auto& [id, promise] : pending) {
            promise->set_value(std::nullopt);
        }
        pending.clear();
    };
    const auto decodeError = [&](const std::string& what) {
        ++decodeErrors;
        if (handlers.onDecodeError) {
            handlers.onDecodeError(what);
        }
    };

    const auto runCommand = [&](Command& c) {
        switch (c.kind) {
            case Command::Kind::Request:
                pending[c.id] = std::move(c.promise);
                [[fallthrough]];
            case Command::Kind::Send:
                // DEALER queues while the bridge is away (up to its high-water mark); a full queue drops the
                // message, which only happens when the bridge is gone for long.
                if (dealer) {
                    (void)dealer->send(zmq::buffer(c.data), zmq::send_flags::dontwait);
                }
                break;
            case Command::Kind::Cancel: pending.erase(c.id); break;
            case Command::Kind::CancelAll: failPending(); break;
            case Command::Kind::ConnectFrames:
                framesEndpoint = c.data;
                openSub();
                break;
            case Command::Kind::Subscribe:
                if (subscriptions.insert(c.data).second && sub) {
                    sub->set(zmq::sockopt::subscribe, c.data);
                }
                break;
            case Command::Kind::Unsubscribe:
                if (subscriptions.erase(c.data) != 0 && sub) {
                    sub->set(zmq::sockopt::unsubscribe, c.data);
                }
                break;
            case Command::Kind::Reset:
                failPending();
                openDealer();
                openSub();
                break;
            case Command::Kind::Stop: break;  // handled by runCommands
        }
    };

    // Applies queued commands; false on Stop.
    const auto runCommands = [&] {
        zmq::message_t ignored;
        while (wakeReceiver.recv(ignored, zmq::recv_flags::dontwait)) {
        }
        std::deque<Command> batch;
        {
            const std::lock_guard<std::mutex> lock(mutex);
            batch.swap(commands);
        }
        for (Command& c : batch) {
            if (c.kind == Command::Kind::Stop) {
                return false;
            }
            // One refused socket must not swallow the commands queued behind it.
            try {
                runCommand(c);
            } catch (const zmq::error_t& e) {
                setTransportError(e.what());
            }
        }
        return true;
    };

    const auto receiveReplies = [&] {
        zmq::message_t part;
        while (dealer->recv(part, zmq::recv_flags::dontwait)) {
            // One frame per reply; an empty delimiter frame is only echoed to clients that sent one.
            if (part.more() || part.size() == 0) {
                continue;
            }
            Result<Reply> reply = Decoder::reply(static_cast<const std::uint8_t*>(part.data()), part.size());
            if (!reply) {
                decodeError("reply: " + reply.error().message);
                continue;
            }
            const auto it = pending.find(replyId(reply.value()));
            if (it != pending.end()) {
                it->second->set_value(std::move(reply).value());
                pending.erase(it);
            } else if (handlers.onUnsolicitedReply) {
                handlers.onUnsolicitedReply(reply.value());
            }
        }
    };

    const auto receivePublished = [&] {
        zmq::message_t topic;
        for (;;) {
            if (pausedTooLong()) {  // a handler held this thread up
                resumeAtNewest();
                return;
            }
            if (!sub->recv(topic, zmq::recv_flags::dontwait)) {
                return;
            }
            const std::int64_t arrival = WallClock::nowNs();
            if (!topic.more()) {
                decodeError("PUB message without a payload frame");
                continue;
            }
            // The parts of one multipart message are delivered together, so these receives never wait.
            auto payload = std::make_shared<zmq::message_t>();
            if (!sub->recv(*payload, zmq::recv_flags::none)) {
                return;
            }
            if (payload->more()) {
                zmq::message_t rest;
                while (sub->recv(rest, zmq::recv_flags::none) && rest.more()) {
                }
                decodeError("PUB message with more than [topic, payload]");
                continue;
            }
            const std::string_view name(static_cast<const char*>(topic.data()), topic.size());
            const auto* bytes = static_cast<const std::uint8_t*>(payload->data());
            const std::string error = dispatchPublished(name, bytes, payload->size(), payload, arrival, handlers,
                                                        {framesReceived, batchesReceived});
            if (!error.empty()) {
                decodeError(error);
            }
        }
    };

    bool running = true;
    bool keysRefused = false;  // by the constructor: no socket then, and transportError keeps the reason
    {
        const std::lock_guard<std::mutex> lock(mutex);
        keysRefused = !transportError.empty();
    }
    try {
        if (!keysRefused) {
            openDealer();
        }
    } catch (const zmq::error_t& e) {
        setTransportError(requestEndpoint + ": " + e.what());
    }
    while (running) {
        try {
            // Rebuilt every pass (the sockets may be replaced between passes), on the stack: no allocation per frame.
            std::array<zmq::pollitem_t, 3> items{};
            std::size_t count = 0;
            items[count++] = {wakeReceiver.handle(), 0, ZMQ_POLLIN, 0};
            const std::size_t dealerAt = count;
            if (dealer) {
                items[count++] = {dealer->handle(), 0, ZMQ_POLLIN, 0};
            }
            const std::size_t subAt = count;
            if (sub) {
                items[count++] = {sub->handle(), 0, ZMQ_POLLIN, 0};
            }
            zmq::poll(items.data(), count, sub && resumeAfter.count() > 0 ? kReadPoll : std::chrono::milliseconds(-1));
            if (sub && pausedTooLong()) {
                resumeAtNewest();
                continue;
            }
            if (items[0].revents & ZMQ_POLLIN) {
                running = runCommands();
                continue;  // the sockets may have been replaced; poll again with fresh handles
            }
            if (dealer && (items[dealerAt].revents & ZMQ_POLLIN)) {
                receiveReplies();
            }
            if (sub && (items[subAt].revents & ZMQ_POLLIN)) {
                receivePublished();
            }
        } catch (const zmq::error_t& e) {
            setTransportError(e.what());
        }
    }
    failPending();
}

}  // namespace avatar_bridge
