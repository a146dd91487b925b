#include "avatar_bridge/AvatarLink.hpp"

#include <algorithm>

#include "avatar_bridge/ErrorCode.hpp"
#include "avatar_bridge/WallClock.hpp"

namespace avatar_bridge {
namespace {

// Subscriptions reach the bridge asynchronously; give one this long before the first input can be sent,
// so the session's first frames are not published to nobody (docs/protocol.md §1, last point).
constexpr std::chrono::milliseconds kSubscriptionSettle{30};
// Inputs remembered for matching error replies; errors come back within milliseconds.
constexpr std::size_t kRememberedInputs = 512;
// How long a closing link waits for the bridge to confirm its sessions closed (they are reaped anyway).
constexpr std::chrono::milliseconds kCloseTimeout{300};

std::string endpoint(const std::string& host, int port) { return "tcp://" + host + ":" + std::to_string(port); }

}  // namespace

std::string AvatarLink::subjectNameOf(const SessionSpec& spec) {
    return spec.subjectName.empty() ? spec.pipeline : spec.subjectName;
}

AvatarLink::AvatarLink(Config config) : config_(std::move(config)) {
    for (const SessionSpec& spec : config_.sessions) {
        owned_.push_back(std::make_shared<SubjectFeed>(subjectNameOf(spec), spec));
    }
    feeds_.store(std::make_shared<const std::vector<std::shared_ptr<SubjectFeed>>>(owned_));

    BridgeClient::Handlers handlers;
    handlers.onFrame = [this](DecodedFrame&& frame, std::int64_t arrivalNs) { routeFrame(std::move(frame), arrivalNs); };
    handlers.onEvent = [this](const Event& event) {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            events_.push_back(event);
        }
        wake_.notify_all();
    };
    handlers.onUnsolicitedReply = [this](const Reply& reply) { routeReply(reply); };
    if (config_.motionCrowd) {
        handlers.onMotionBatch = [this](MotionBatch&& batch, std::int64_t arrivalNs) { crowd_.ingest(batch, arrivalNs); };
        handlers.onMalformedBatch = [this](const std::string&) { crowd_.countMalformed(); };
    }
    client_ = std::make_unique<BridgeClient>(endpoint(config_.host, config_.requestPort), std::move(handlers), config_.curve,
                                             config_.network, config_.resumeAfter);
    supervisor_ = std::thread([this] {
        supervise();
        {
            // The closes must not be sent before requestStop's cancel: it would fail their replies too,
            // and the dealer would stop with the closes still queued (the sessions then only time out).
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait_for(lock, kCloseTimeout, [this] { return inFlightCancelled_; });
        }
        closeOwnSessions();
        client_->stop();
        supervisorDone_ = true;
    });
}

AvatarLink::~AvatarLink() {
    requestStop();
    supervisor_.join();
    client_.reset();  // joins the network threads, whose handlers point at this object
    state_ = State::Stopped;
}

void AvatarLink::requestStop() noexcept {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    client_->cancelPending();  // fails the supervisor's in-flight request, if any, so it sees `stopping_` at once
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        inFlightCancelled_ = true;
    }
    wake_.notify_all();
}

bool AvatarLink::stopped() const noexcept { return supervisorDone_ && client_->finished(); }

void AvatarLink::closeOwnSessions() {
    // Send all closes, then give the replies one short shared deadline.
    std::vector<std::future<std::optional<Reply>>> closing;
    for (const auto& feed : owned_) {
        if (const auto att = feed->attachment()) {
            const std::uint64_t id = client_->nextId();
            closing.push_back(client_->request(id, RequestEncoder::close(id, att->session)));
        }
    }
    const auto deadline = std::chrono::steady_clock::now() + kCloseTimeout;
    for (auto& reply : closing) {
        reply.wait_until(deadline);
    }
}

std::string AvatarLink::statusText() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return status_;
}

std::optional<HelloReply> AvatarLink::lastHello() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return hello_;
}

std::shared_ptr<SubjectFeed> AvatarLink::feed(std::string_view subjectName) const {
    for (const auto& f : *feeds()) {
        if (f->name() == subjectName) {
            return f;
        }
    }
    return nullptr;
}

void AvatarLink::supervise() {
    auto lastHeartbeat = std::chrono::steady_clock::now();
    while (!stopping()) {
        bool due = std::chrono::steady_clock::now() - lastHeartbeat >= config_.heartbeat;
        if (state_ != State::Connected) {
            if (!handshake()) {
                waitFor(config_.retryInterval);
                continue;
            }
            due = true;
        }
        if (due) {
            // (Re)open what is missing at most once per heartbeat, so a refused open does not spin.
            lastHeartbeat = std::chrono::steady_clock::now();
            for (const auto& feed : owned_) {
                if (!feed->attachment() && !open(feed)) {
                    break;
                }
            }
        }
        std::deque<Event> events;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            events.swap(events_);
        }
        for (const Event& event : events) {
            handleEvent(event);
        }
        if (due && !heartbeat() && !stopping()) {
            loseConnection();
            continue;
        }
        waitFor(config_.heartbeat / 4);
    }
}

bool AvatarLink::handshake() {
    const std::uint64_t id = client_->nextId();
    const auto reply = client_->call(id, RequestEncoder::hello(id, config_.clientName), config_.requestTimeout);
    const auto* hello = reply ? std::get_if<HelloReply>(&*reply) : nullptr;
    if (hello == nullptr) {
        const auto* refused = reply ? std::get_if<ErrorReply>(&*reply) : nullptr;
        const std::string why = refused != nullptr ? refused->name + ": " + refused->message : client_->transportError();
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            status_ = "no hello from " + endpoint(config_.host, config_.requestPort) + (why.empty() ? "" : " (" + why + ")") +
                      "; retrying";
        }
        client_->reset();  // drop the queued hello so a bridge that comes up later gets a fresh one
        return false;
    }
    const int framesPort = config_.framesPort > 0 ? config_.framesPort : hello->framesPort;
    const std::string frames = endpoint(config_.host, framesPort);
    client_->connectFrames(frames);
    if (config_.observeOtherSessions || config_.motionCrowd) {
        client_->subscribe("event/");  // crowd: `closed` events retire sessions from it
    }
    if (config_.observeOtherSessions) {
        client_->subscribe("frame/");
    }
    if (config_.motionCrowd) {
        client_->subscribe("batch/motion");
    }
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        hello_ = *hello;
        status_ = "connected to " + hello->server + " at " + endpoint(config_.host, config_.requestPort);
    }
    std::this_thread::sleep_for(kSubscriptionSettle);
    ++connections_;
    state_ = State::Connected;
    return true;
}

bool AvatarLink::open(const std::shared_ptr<SubjectFeed>& feed) {
    const std::uint64_t id = client_->nextId();
    const auto reply = client_->call(id, RequestEncoder::open(id, *feed->spec()), config_.requestTimeout);
    if (!reply) {
        return false;
    }
    if (const auto* error = std::get_if<ErrorReply>(&*reply)) {
        feed->recordInputError(*error);
        const std::lock_guard<std::mutex> lock(mutex_);
        status_ = "cannot open '" + feed->name() + "': " + error->name + ": " + error->message;
        return false;
    }
    const auto* opened = std::get_if<OpenReply>(&*reply);
    if (opened == nullptr) {
        return false;
    }
    client_->subscribe(opened->topic);
    std::this_thread::sleep_for(kSubscriptionSettle);
    bind(opened->session, feed);
    feed->attach(opened->session, opened->pipeline, opened->fps, opened->rig);
    return true;
}

bool AvatarLink::heartbeat() {
    bool pinged = false;
    for (const auto& feed : owned_) {
        const auto att = feed->attachment();
        if (!att) {
            continue;
        }
        pinged = true;
        const std::uint64_t id = client_->nextId();
        const auto reply = client_->call(id, RequestEncoder::ping(id, att->session), config_.requestTimeout);
        if (!reply) {
            return false;
        }
        const auto* error = std::get_if<ErrorReply>(&*reply);
        if (error != nullptr && (error->code == static_cast<int>(ErrorCode::UnknownSession) ||
                                 error->code == static_cast<int>(ErrorCode::NotOwner))) {
            // The bridge restarted or reaped the session, or our connection dropped and came back with a
            // new routing id, which no longer owns it (docs/protocol.md §4): reopen under the same name.
            unbind(att->session);
            feed->detach();
        }
    }
    if (!pinged) {
        const std::uint64_t id = client_->nextId();
        return client_->call(id, RequestEncoder::ping(id, ""), config_.requestTimeout).has_value();
    }
    return true;
}

void AvatarLink::loseConnection() {
    state_ = State::Connecting;
    std::map<std::string, std::shared_ptr<SubjectFeed>> sessions;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        sessions.swap(bySession_);
        status_ = "lost the bridge; reconnecting";
    }
    crowd_.clear();  // its sessions died with the bridge (or will reappear in the next batches)
    for (const auto& [session, feed] : sessions) {
        client_->unsubscribe("frame/" + session);
        feed->detach();
        if (!feed->spec()) {
            removeFeed(feed);  // observed sessions die with the bridge; new ones announce themselves
        }
    }
    client_->reset();
}

void AvatarLink::handleEvent(const Event& event) {
    if (const auto* opened = std::get_if<OpenedEvent>(&event)) {
        if (!config_.observeOtherSessions) {
            return;
        }
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (bySession_.count(opened->session) != 0) {
                return;  // one of ours
            }
        }
        auto feed = std::make_shared<SubjectFeed>(opened->pipeline + "_" + opened->session.substr(0, 8), std::nullopt);
        feed->attach(opened->session, opened->pipeline, opened->fps, opened->rig);
        bind(opened->session, feed);
        addFeed(feed);
        return;
    }
    const auto& closed = std::get<ClosedEvent>(event);
    crowd_.forget(closed.session);
    std::shared_ptr<SubjectFeed> feed;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto it = bySession_.find(closed.session);
        if (it == bySession_.end()) {
            return;
        }
        feed = it->second;
    }
    unbind(closed.session);
    feed->detach();
    if (!feed->spec()) {
        feed->markClosed();
        removeFeed(feed);
    }
}

void AvatarLink::routeFrame(DecodedFrame&& frame, std::int64_t arrivalNs) {
    std::shared_ptr<SubjectFeed> feed;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto it = bySession_.find(frame.header().session);
        if (it == bySession_.end()) {
            return;
        }
        feed = it->second;
    }
    feed->deliver(frame, arrivalNs, config_.onPose ? &config_.onPose : nullptr);
}

void AvatarLink::routeReply(const Reply& reply) {
    const auto* error = std::get_if<ErrorReply>(&reply);
    if (error == nullptr) {
        return;
    }
    std::shared_ptr<SubjectFeed> feed;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (const auto it = bySession_.find(error->session); it != bySession_.end()) {
            feed = it->second;
        } else if (const auto sender = inputSenders_.find(error->id); sender != inputSenders_.end()) {
            for (const auto& [session, f] : bySession_) {
                if (f->name() == sender->second) {
                    feed = f;
                }
            }
        }
    }
    if (feed) {
        feed->recordInputError(*error);
    }
}

void AvatarLink::bind(const std::string& session, const std::shared_ptr<SubjectFeed>& feed) {
    const std::lock_guard<std::mutex> lock(mutex_);
    bySession_[session] = feed;
}

void AvatarLink::unbind(const std::string& session) {
    client_->unsubscribe("frame/" + session);
    const std::lock_guard<std::mutex> lock(mutex_);
    bySession_.erase(session);
}

void AvatarLink::addFeed(std::shared_ptr<SubjectFeed> feed) {
    auto next = std::make_shared<std::vector<std::shared_ptr<SubjectFeed>>>(*feeds());
    next->push_back(std::move(feed));
    feeds_.store(std::move(next));
}

void AvatarLink::removeFeed(const std::shared_ptr<SubjectFeed>& feed) {
    auto next = std::make_shared<std::vector<std::shared_ptr<SubjectFeed>>>(*feeds());
    next->erase(std::remove(next->begin(), next->end(), feed), next->end());
    feeds_.store(std::move(next));
}

bool AvatarLink::stopping() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stopping_;
}

void AvatarLink::waitFor(std::chrono::milliseconds duration) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait_for(lock, duration, [this] { return stopping_ || !events_.empty(); });
}

std::optional<RequestEncoder::InputHeader> AvatarLink::inputHeader(SubjectFeed& feed, std::int64_t tCaptureNs) {
    const auto att = feed.attachment();
    if (!att) {
        return std::nullopt;
    }
    RequestEncoder::InputHeader h;
    h.id = client_->nextId();
    h.session = att->session;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        inputSenders_[h.id] = feed.name();
        while (inputSenders_.size() > kRememberedInputs) {
            inputSenders_.erase(inputSenders_.begin());
        }
    }
    h.seq = feed.nextInputSeq();
    h.tCaptureNs = tCaptureNs != 0 ? tCaptureNs : WallClock::nowNs();
    return h;
}

bool AvatarLink::sendImage(SubjectFeed& feed, int width, int height, const std::uint8_t* rgb, std::size_t bytes,
                           std::int64_t tCaptureNs) noexcept {
    const auto h = inputHeader(feed, tCaptureNs);
    return h && client_->send(RequestEncoder::image(*h, width, height, rgb, bytes));
}

bool AvatarLink::sendJpeg(SubjectFeed& feed, const std::uint8_t* jpeg, std::size_t bytes,
                          std::int64_t tCaptureNs) noexcept {
    const auto h = inputHeader(feed, tCaptureNs);
    return h && client_->send(RequestEncoder::jpegImage(*h, jpeg, bytes));
}

bool AvatarLink::sendAudio(SubjectFeed& feed, int rate, std::string_view format, const void* samples,
                           std::size_t bytes, std::int64_t tCaptureNs) noexcept {
    const auto h = inputHeader(feed, tCaptureNs);
    return h && client_->send(RequestEncoder::audio(*h, rate, format, samples, bytes));
}

bool AvatarLink::sendFeatures(SubjectFeed& feed, int rows, int cols, const float* values, std::size_t bytes,
                              std::int64_t tCaptureNs) noexcept {
    const auto h = inputHeader(feed, tCaptureNs);
    return h && client_->send(RequestEncoder::features(*h, rows, cols, values, bytes));
}

}  // namespace avatar_bridge
