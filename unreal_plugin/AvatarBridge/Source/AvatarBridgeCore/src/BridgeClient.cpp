// The default build of BridgeClient: our own ZMTP 3 client (ZmtpPeer) over a Network, no third-party
// library. BridgeClientLibzmq.cpp is the libzmq build (CURVE); exactly one of the two is compiled.
#include "avatar_bridge/BridgeClient.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>

#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/ZmtpPeer.hpp"
#include "PublishedMessage.hpp"

namespace avatar_bridge {

struct BridgeClient::Impl {
    Impl(Handlers h, CurveKeys keys) : handlers(std::move(h)), curve(std::move(keys)) {}

    void onReply(std::vector<ZmtpPart>&& message);
    void onPublished(std::vector<ZmtpPart>&& message, std::int64_t arrivalNs);
    void decodeError(const std::string& what);
    void failPending();

    const Handlers handlers;
    const CurveKeys curve;
    std::atomic<std::uint64_t> framesReceived{0};
    std::atomic<std::uint64_t> batchesReceived{0};
    std::atomic<std::uint64_t> decodeErrors{0};

    mutable std::mutex mutex;  // guards `pending` and `endpointError`
    std::map<std::uint64_t, std::shared_ptr<std::promise<std::optional<Reply>>>> pending;
    std::string endpointError;

    // Last, so they are destroyed (their threads joined) before what their callbacks use.
    std::unique_ptr<ZmtpPeer> dealer;
    std::unique_ptr<ZmtpPeer> sub;
};

void BridgeClient::Impl::decodeError(const std::string& what) {
    ++decodeErrors;
    if (handlers.onDecodeError) {
        handlers.onDecodeError(what);
    }
}

void BridgeClient::Impl::failPending() {
    std::map<std::uint64_t, std::shared_ptr<std::promise<std::optional<Reply>>>> failed;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        failed.swap(pending);
    }
    for (auto& entry : failed) {
        entry.second->set_value(std::nullopt);
    }
}

void BridgeClient::Impl::onReply(std::vector<ZmtpPart>&& message) {
    // One frame per reply; an empty delimiter frame is only echoed to clients that sent one.
    const ZmtpPart& part = message.back();
    if (part->empty()) {
        return;
    }
    Result<Reply> reply = Decoder::reply(part->data(), part->size());
    if (!reply) {
        decodeError("reply: " + reply.error().message);
        return;
    }
    std::shared_ptr<std::promise<std::optional<Reply>>> waiting;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        const auto it = pending.find(replyId(reply.value()));
        if (it != pending.end()) {
            waiting = std::move(it->second);
            pending.erase(it);
        }
    }
    if (waiting) {
        waiting->set_value(std::move(reply).value());
    } else if (handlers.onUnsolicitedReply) {
        handlers.onUnsolicitedReply(reply.value());
    }
}

void BridgeClient::Impl::onPublished(std::vector<ZmtpPart>&& message, std::int64_t arrivalNs) {
    if (message.size() < 2) {
        decodeError("PUB message without a payload frame");
        return;
    }
    if (message.size() > 2) {
        decodeError("PUB message with more than [topic, payload]");
        return;
    }
    const std::string name(message[0]->begin(), message[0]->end());
    const ZmtpPart& payload = message[1];
    const std::string error =
        dispatchPublished(name, payload->data(), payload->size(), payload, arrivalNs, handlers, {framesReceived, batchesReceived});
    if (!error.empty()) {
        decodeError(error);
    }
}

BridgeClient::BridgeClient(std::string requestEndpoint, Handlers handlers, CurveKeys curve, std::shared_ptr<Network> network,
                           std::chrono::milliseconds resumeAfter)
    : impl_(std::make_unique<Impl>(std::move(handlers), std::move(curve))) {
#if !defined(_WIN32)
    if (!network) {
        network = posixNetwork();
    }
#endif
    Impl* impl = impl_.get();
    impl->dealer = std::make_unique<ZmtpPeer>(network, ZmtpSocketType::Dealer,
                                              [impl](std::vector<ZmtpPart>&& m, std::int64_t) { impl->onReply(std::move(m)); });
    ZmtpPeer::Options subOptions;
    subOptions.resumeAfterMs =
        static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(resumeAfter.count(), 0, std::numeric_limits<int>::max()));
    impl->sub = std::make_unique<ZmtpPeer>(
        network, ZmtpSocketType::Sub,
        [impl](std::vector<ZmtpPart>&& m, std::int64_t at) { impl->onPublished(std::move(m), at); }, subOptions);
    std::string host;
    int port = 0;
    if (!network) {
        impl->endpointError = "no network to connect with";
    } else if (impl->curve.enabled()) {
        impl->endpointError = "CURVE needs the libzmq build of the plugin core (AVATAR_BRIDGE_WITH_LIBZMQ)";
    } else if (!parseTcpEndpoint(requestEndpoint, host, port)) {
        impl->endpointError = "not a tcp://host:port endpoint: " + requestEndpoint;
    } else {
        impl->dealer->setEndpoint(host, port);
    }
}

BridgeClient::~BridgeClient() {
    stop();
    impl_->dealer.reset();  // joins its threads: no reply arrives after this
    impl_->sub.reset();
    impl_->failPending();
}

bool BridgeClient::supportsCurve() noexcept { return false; }

std::future<std::optional<Reply>> BridgeClient::request(std::uint64_t id, std::string payload) {
    auto promise = std::make_shared<std::promise<std::optional<Reply>>>();
    auto future = promise->get_future();
    {
        const std::lock_guard<std::mutex> lock(impl_->mutex);
        impl_->pending[id] = std::move(promise);
    }
    (void)impl_->dealer->send(std::move(payload));  // a full queue: the request times out like a lost one
    return future;
}

std::optional<Reply> BridgeClient::call(std::uint64_t id, std::string payload, std::chrono::milliseconds timeout) {
    auto future = request(id, std::move(payload));
    if (future.wait_for(timeout) != std::future_status::ready) {
        const std::lock_guard<std::mutex> lock(impl_->mutex);
        impl_->pending.erase(id);
        return std::nullopt;
    }
    return future.get();
}

bool BridgeClient::send(std::string payload) noexcept { return impl_->dealer->send(std::move(payload)); }

void BridgeClient::connectFrames(const std::string& endpoint) noexcept {
    std::string host;
    int port = 0;
    if (parseTcpEndpoint(endpoint, host, port) && impl_->endpointError.empty()) {
        impl_->sub->setEndpoint(host, port);
    }
}

void BridgeClient::subscribe(const std::string& prefix) noexcept { impl_->sub->subscribe(prefix, true); }

void BridgeClient::unsubscribe(const std::string& prefix) noexcept { impl_->sub->subscribe(prefix, false); }

void BridgeClient::cancelPending() noexcept { impl_->failPending(); }

void BridgeClient::reset() noexcept {
    cancelPending();
    impl_->dealer->reset();
    impl_->sub->reset();
}

void BridgeClient::stop() noexcept {
    if (impl_->dealer) {
        impl_->dealer->stop();
    }
    if (impl_->sub) {
        impl_->sub->stop();
    }
}

bool BridgeClient::finished() const noexcept { return impl_->dealer->finished() && impl_->sub->finished(); }

std::string BridgeClient::transportError() const {
    {
        const std::lock_guard<std::mutex> lock(impl_->mutex);
        if (!impl_->endpointError.empty()) {
            return impl_->endpointError;
        }
    }
    return impl_->dealer->lastError();
}

std::uint64_t BridgeClient::framesReceived() const noexcept { return impl_->framesReceived; }

std::uint64_t BridgeClient::batchesReceived() const noexcept { return impl_->batchesReceived; }

std::uint64_t BridgeClient::decodeErrors() const noexcept { return impl_->decodeErrors; }

std::uint64_t BridgeClient::resubscribes() const noexcept { return impl_->sub->resubscribes(); }

}  // namespace avatar_bridge
