#include "avatar_bridge/BridgeClient.hpp"

#include <array>
#include <deque>
#include <map>
#include <mutex>
#include <set>

#include <zmq.hpp>

#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/ProtocolError.hpp"
#include "avatar_bridge/WallClock.hpp"

namespace avatar_bridge {

struct BridgeClient::Command {
    enum class Kind { Send, Request, Cancel, ConnectFrames, Subscribe, Unsubscribe, Reset, Stop };
    explicit Command(Kind k, std::string d = {}, std::uint64_t i = 0, std::shared_ptr<std::promise<Reply>> p = {})
        : kind(k), data(std::move(d)), id(i), promise(std::move(p)) {}

    Kind kind;
    std::string data;
    std::uint64_t id;
    std::shared_ptr<std::promise<Reply>> promise;
};

struct BridgeClient::Shared {
    zmq::context_t context{1};
    std::mutex mutex;  // guards `commands`, `wakeSender` (a socket: one thread at a time), `transportError`
    std::deque<Command> commands;
    std::string transportError;  // also guarded by `mutex`
    zmq::socket_t wakeSender{context, zmq::socket_type::pair};
    zmq::socket_t wakeReceiver{context, zmq::socket_type::pair};
};

namespace {

constexpr int kReconnectIntervalMs = 100;

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

BridgeClient::BridgeClient(std::string requestEndpoint, Handlers handlers, CurveKeys curve)
    : handlers_(std::move(handlers)),
      requestEndpoint_(std::move(requestEndpoint)),
      curve_(std::move(curve)),
      shared_(std::make_unique<Shared>()) {
    if (curve_.enabled()) {
        char publicKey[41];
        char secretKey[41];
        if (curve_.clientSecret.empty()) {
            if (zmq_curve_keypair(publicKey, secretKey) != 0) {
                throw std::runtime_error("this libzmq was built without CURVE support");
            }
            curve_.clientSecret = secretKey;
        } else if (zmq_curve_public(publicKey, curve_.clientSecret.c_str()) != 0) {
            throw std::runtime_error("invalid CURVE client secret key");
        }
        curve_.clientPublic = publicKey;  // always derived from the secret, so the two cannot disagree
    }
    // A unique inproc name per client, so several sources can live in one process.
    const std::string wake = "inproc://avatar-bridge-wake-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
    shared_->wakeReceiver.bind(wake);
    shared_->wakeSender.connect(wake);
    thread_ = std::thread([this] { run(); });
}

BridgeClient::~BridgeClient() {
    enqueue(Command(Command::Kind::Stop));
    thread_.join();
}

void BridgeClient::enqueue(Command command) {
    const std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->commands.push_back(std::move(command));
    shared_->wakeSender.send(zmq::const_buffer("", 0), zmq::send_flags::dontwait);
}

std::future<Reply> BridgeClient::request(std::uint64_t id, std::string payload) {
    auto promise = std::make_shared<std::promise<Reply>>();
    auto future = promise->get_future();
    enqueue(Command(Command::Kind::Request, std::move(payload), id, std::move(promise)));
    return future;
}

std::optional<Reply> BridgeClient::call(std::uint64_t id, std::string payload, std::chrono::milliseconds timeout) {
    auto future = request(id, std::move(payload));
    if (future.wait_for(timeout) != std::future_status::ready) {
        enqueue(Command(Command::Kind::Cancel, {}, id));
        return std::nullopt;
    }
    try {
        return future.get();
    } catch (const ConnectionReset&) {
        return std::nullopt;
    }
}

void BridgeClient::send(std::string payload) { enqueue(Command(Command::Kind::Send, std::move(payload))); }

void BridgeClient::connectFrames(std::string endpoint) { enqueue(Command(Command::Kind::ConnectFrames, std::move(endpoint))); }

void BridgeClient::subscribe(std::string prefix) { enqueue(Command(Command::Kind::Subscribe, std::move(prefix))); }

void BridgeClient::unsubscribe(std::string prefix) { enqueue(Command(Command::Kind::Unsubscribe, std::move(prefix))); }

void BridgeClient::reset() { enqueue(Command(Command::Kind::Reset)); }

std::string BridgeClient::transportError() const {
    const std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->transportError;
}

void BridgeClient::run() {
    zmq::context_t& context = shared_->context;
    // Either socket may be missing: a bad endpoint or key makes libzmq refuse it, and the client then
    // stays quiet (requests time out) and says why in transportError() instead of ending the thread.
    std::optional<zmq::socket_t> dealer;
    std::optional<zmq::socket_t> sub;
    std::string framesEndpoint;
    std::set<std::string> subscriptions;
    std::map<std::uint64_t, std::shared_ptr<std::promise<Reply>>> pending;

    const auto setTransportError = [&](std::string what) {
        const std::lock_guard<std::mutex> lock(shared_->mutex);
        shared_->transportError = std::move(what);
    };
    const auto openDealer = [&] {
        dealer.reset();
        zmq::socket_t s = makeSocket(context, zmq::socket_type::dealer, curve_);
        s.connect(requestEndpoint_);
        dealer = std::move(s);
        setTransportError({});
    };
    const auto openSub = [&] {
        sub.reset();
        if (framesEndpoint.empty()) {
            return;
        }
        zmq::socket_t s = makeSocket(context, zmq::socket_type::sub, curve_);
        for (const auto& prefix : subscriptions) {
            s.set(zmq::sockopt::subscribe, prefix);
        }
        s.connect(framesEndpoint);
        sub = std::move(s);
    };
    const auto failPending = [&] {
        for (auto& [id, promise] : pending) {
            promise->set_exception(std::make_exception_ptr(ConnectionReset()));
        }
        pending.clear();
    };
    const auto decodeError = [&](const std::string& what) {
        ++decodeErrors_;
        if (handlers_.onDecodeError) {
            handlers_.onDecodeError(what);
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
        while (shared_->wakeReceiver.recv(ignored, zmq::recv_flags::dontwait)) {
        }
        std::deque<Command> commands;
        {
            const std::lock_guard<std::mutex> lock(shared_->mutex);
            commands.swap(shared_->commands);
        }
        for (Command& c : commands) {
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
            try {
                Reply reply = Decoder::reply(static_cast<const std::uint8_t*>(part.data()), part.size());
                const auto it = pending.find(replyId(reply));
                if (it != pending.end()) {
                    it->second->set_value(std::move(reply));
                    pending.erase(it);
                } else if (handlers_.onUnsolicitedReply) {
                    handlers_.onUnsolicitedReply(reply);
                }
            } catch (const ProtocolError& e) {
                decodeError(std::string("reply: ") + e.what());
            }
        }
    };

    const auto receivePublished = [&] {
        zmq::message_t topic;
        while (sub->recv(topic, zmq::recv_flags::dontwait)) {
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
            try {
                if (name.rfind("frame/", 0) == 0) {
                    ++framesReceived_;
                    DecodedFrame frame = Decoder::frame(bytes, payload->size(), payload);
                    if (handlers_.onFrame) {
                        handlers_.onFrame(std::move(frame), arrival);
                    }
                } else if (name.rfind("event/", 0) == 0) {
                    const Event event = Decoder::event(bytes, payload->size());
                    if (handlers_.onEvent) {
                        handlers_.onEvent(event);
                    }
                }
            } catch (const ProtocolError& e) {
                decodeError(std::string(name) + ": " + e.what());
            }
        }
    };

    bool running = true;
    try {
        openDealer();
    } catch (const zmq::error_t& e) {
        setTransportError(requestEndpoint_ + ": " + e.what());
    }
    while (running) {
        try {
            // Rebuilt every pass (the sockets may be replaced between passes), on the stack: no allocation per frame.
            std::array<zmq::pollitem_t, 3> items{};
            std::size_t count = 0;
            items[count++] = {shared_->wakeReceiver.handle(), 0, ZMQ_POLLIN, 0};
            const std::size_t dealerAt = count;
            if (dealer) {
                items[count++] = {dealer->handle(), 0, ZMQ_POLLIN, 0};
            }
            const std::size_t subAt = count;
            if (sub) {
                items[count++] = {sub->handle(), 0, ZMQ_POLLIN, 0};
            }
            zmq::poll(items.data(), count, std::chrono::milliseconds(-1));
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
