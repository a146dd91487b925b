#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "avatar_bridge/AtomicSharedPtr.hpp"
#include "avatar_bridge/BridgeClient.hpp"
#include "avatar_bridge/MotionCrowd.hpp"
#include "avatar_bridge/RequestEncoder.hpp"
#include "avatar_bridge/SessionSpec.hpp"
#include "avatar_bridge/SubjectFeed.hpp"

namespace avatar_bridge {

// Everything an engine plugin needs from the bridge, engine-independent: connects, says hello, opens the
// configured sessions and publishes each as a SubjectFeed; keeps them alive with pings; notices when the
// bridge stops answering or restarts (a ping times out, or names a session the bridge no longer knows)
// and then reconnects, says hello and reopens. Optionally also publishes sessions other clients open
// (learned from `opened` events). A supervisor thread does the talking; the game thread only reads feeds.
class AvatarLink {
public:
    struct Config {
        std::string host = "127.0.0.1";
        int requestPort = 5570;
        int framesPort = 0;  // 0: the port the bridge announces in its hello reply
        std::string clientName = "avatar-bridge-cpp 0.1.0";
        std::vector<SessionSpec> sessions;  // opened by this client; subject names must be unique
        bool observeOtherSessions = false;
        // Also read the batched motion stream (`batch/motion`, protocol minor 1): the newest frame of every
        // motion session on the bridge, ours or not, in crowd(). For plugins that drive a crowd.
        bool motionCrowd = false;
        CurveKeys curve;  // for a bridge started with --curve-secret-key (libzmq build only)
        // Where TCP streams come from (ZMTP build); null: POSIX sockets. Unreal passes its FSocket one.
        std::shared_ptr<Network> network;
        // Receive thread, for every frame of a subject, once mapped to a pose and stamped with its frame time
        // (FrameClock), before it reaches the feed's mailbox. For engines that push from the receive thread
        // (Unreal's Live Link sources do) instead of polling takeAll(). Must not throw; must not block long.
        std::function<void(SubjectFeed& feed, const SubjectFeed::Attachment& attachment, const SubjectPose& pose)> onPose;
        // Resume at newest (BridgeClient.hpp, docs/protocol.md §1): after the receive thread was held up this
        // long, queued frames are dropped for a fresh subscription; 0: off.
        std::chrono::milliseconds resumeAfter = BridgeClient::kDefaultResumeAfter;
        std::chrono::milliseconds heartbeat{500};
        std::chrono::milliseconds requestTimeout{1500};
        std::chrono::milliseconds retryInterval{250};
    };

    enum class State { Connecting, Connected, Stopped };

    // Starts the supervisor and network threads. Nothing here throws: the core builds without exceptions, as
    // Unreal's modules do, and a thread that cannot start ends the process like running out of memory does.
    explicit AvatarLink(Config config);
    // requestStop(), then waits for stopped() (at most ~0.4 s: the supervisor closes our sessions first).
    ~AvatarLink();

    // Flag-then-poll shutdown for a game thread that must not wait: requestStop() returns at once; the
    // supervisor closes the sessions it opened (waiting at most ~0.3 s for the bridge to confirm) and the
    // network threads end; stopped() then turns true and destroying the link no longer waits.
    void requestStop() noexcept;
    bool stopped() const noexcept;

    AvatarLink(const AvatarLink&) = delete;
    AvatarLink& operator=(const AvatarLink&) = delete;

    State state() const noexcept { return state_; }
    std::string statusText() const;
    std::optional<HelloReply> lastHello() const;
    // Every (re)connection that completed a hello; 1 after the first.
    std::uint64_t connections() const { return connections_; }
    // Fresh frame subscriptions made by the resume-at-newest rule.
    std::uint64_t resubscribes() const noexcept { return client_->resubscribes(); }

    // Never blocks; a snapshot that stays valid while held.
    std::shared_ptr<const std::vector<std::shared_ptr<SubjectFeed>>> feeds() const { return feeds_.load(); }
    std::shared_ptr<SubjectFeed> feed(std::string_view subjectName) const;

    // Inputs to an owned or observed session, from any thread, never waiting on the network; false when the
    // subject has no session right now or the outgoing queue is full. `tCaptureNs` 0 means now. Errors
    // arrive asynchronously in the feed's stats.
    bool sendImage(SubjectFeed& feed, int width, int height, const std::uint8_t* rgb, std::size_t bytes,
                   std::int64_t tCaptureNs = 0) noexcept;
    // The bytes of one upright JPEG file (protocol 1.3: a bridge whose hello lists "jpeg" in image_formats).
    bool sendJpeg(SubjectFeed& feed, const std::uint8_t* jpeg, std::size_t bytes, std::int64_t tCaptureNs = 0) noexcept;
    bool sendAudio(SubjectFeed& feed, int rate, std::string_view format, const void* samples, std::size_t bytes,
                   std::int64_t tCaptureNs = 0) noexcept;
    bool sendFeatures(SubjectFeed& feed, int rows, int cols, const float* values, std::size_t bytes,
                      std::int64_t tCaptureNs = 0) noexcept;

    // With Config::motionCrowd: every motion session's newest batched frame (empty otherwise). Any thread.
    const MotionCrowd& crowd() const { return crowd_; }

    // The subject name a spec publishes under: its own, else its pipeline's name.
    static std::string subjectNameOf(const SessionSpec& spec);

private:
    void supervise();
    void closeOwnSessions();
    bool handshake();
    bool open(const std::shared_ptr<SubjectFeed>& feed);
    bool heartbeat();
    void loseConnection();
    void handleEvent(const Event& event);
    void routeFrame(DecodedFrame&& frame, std::int64_t arrivalNs);
    void routeReply(const Reply& reply);
    void bind(const std::string& session, const std::shared_ptr<SubjectFeed>& feed);
    void unbind(const std::string& session);
    void addFeed(std::shared_ptr<SubjectFeed> feed);
    void removeFeed(const std::shared_ptr<SubjectFeed>& feed);
    bool stopping() const;
    void waitFor(std::chrono::milliseconds duration);
    // The header of the feed's next input; empty when the feed has no session right now.
    std::optional<RequestEncoder::InputHeader> inputHeader(SubjectFeed& feed, std::int64_t tCaptureNs);

    const Config config_;
    MotionCrowd crowd_;  // before client_: the network threads write into it
    std::unique_ptr<BridgeClient> client_;
    std::atomic<State> state_{State::Connecting};
    std::atomic<std::uint64_t> connections_{0};

    AtomicSharedPtr<const std::vector<std::shared_ptr<SubjectFeed>>> feeds_;  // copy on write
    std::vector<std::shared_ptr<SubjectFeed>> owned_;                         // supervisor thread only

    mutable std::mutex mutex_;  // guards everything below
    std::map<std::string, std::shared_ptr<SubjectFeed>> bySession_;
    std::deque<Event> events_;
    // Which subject sent each recent input: the bridge leaves `session` out of errors it finds while
    // decoding an input, so those are matched by request id. Bounded; ids only grow.
    std::map<std::uint64_t, std::string> inputSenders_;
    std::optional<HelloReply> hello_;
    std::string status_ = "connecting";
    bool stopping_ = false;
    bool inFlightCancelled_ = false;  // requestStop has failed the supervisor's in-flight request
    std::condition_variable wake_;

    std::atomic<bool> supervisorDone_{false};
    std::thread supervisor_;
};

}  // namespace avatar_bridge
