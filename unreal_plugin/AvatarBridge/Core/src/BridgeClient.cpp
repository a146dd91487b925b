#include "avatar_bridge/BridgeClient.hpp"

#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <vector>

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
    std::mutex mutex;  // guards `commands` and `wakeSender` (a socket, so one thread at a time)
    std::deque<Command> commands;
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

void BridgeClient::run() {
    zmq::context_t& context = shared_->context;
    std::optional<zmq::socket_t> dealer;
    std::optional<zmq::socket_t> sub;
    std::string framesEndpoint;
    std::set<std::string> subscriptions;
    std::map<std::uint64_t, std::shared_ptr<std::promise<Reply>>> pending;

    const auto openDealer = [&] {
        dealer.emplace(makeSocket(context, zmq::socket_type::dealer, curve_));
        dealer->connect(requestEndpoint_);
    };
    const auto openSub = [&] {
        sub.reset();
        if (framesEndpoint.empty()) {
            return;
        }
        sub.emplace(makeSocket(context, zmq::socket_type::sub, curve_));
        for (const auto& prefix : subscriptions) {
            sub->set(zmq::sockopt::subscribe, prefix);
        }
        sub->connect(framesEndpoint);
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

    openDealer();
    bool running = true;
    while (running) {
        std::vector<zmq::pollitem_t> items = {{shared_->wakeReceiver.handle(), 0, ZMQ_POLLIN, 0},
                                              {dealer->handle(), 0, ZMQ_POLLIN, 0}};
        if (sub) {
            items.push_back({sub->handle(), 0, ZMQ_POLLIN, 0});
        }
        zmq::poll(items, std::chrono::milliseconds(-1));

        if (items[0].revents & ZMQ_POLLIN) {
            zmq::message_t ignored;
            while (shared_->wakeReceiver.recv(ignored, zmq::recv_flags::dontwait)) {
            }
            std::deque<Command> commands;
            {
                const std::lock_guard<std::mutex> lock(shared_->mutex);
                commands.swap(shared_->commands);
            }
            for (Command& c : commands) {
                switch (c.kind) {
                    case Command::Kind::Request:
                        pending[c.id] = std::move(c.promise);
                        [[fallthrough]];
                    case Command::Kind::Send:
                        // DEALER queues while the bridge is away (up to its high-water mark); a full queue
                        // drops the message, which only happens when the bridge is gone for long.
                        dealer->send(zmq::buffer(c.data), zmq::send_flags::dontwait);
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
                        if (subscriptions.erase(c.data) && sub) {
                            sub->set(zmq::sockopt::unsubscribe, c.data);
                        }
                        break;
                    case Command::Kind::Reset:
                        failPending();
                        openDealer();
                        openSub();
                        break;
                    case Command::Kind::Stop: running = false; break;
                }
            }
            if (!running) {
                break;
            }
            continue;  // the sockets may have been replaced; poll again with fresh handles
        }

        if (items[1].revents & ZMQ_POLLIN) {
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
        }

        if (sub && items.size() > 2 && (items[2].revents & ZMQ_POLLIN)) {
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
                    break;
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
        }
    }
    failPending();
}

}  // namespace avatar_bridge
