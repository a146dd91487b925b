#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "avatar_bridge/AtomicSharedPtr.hpp"
#include "avatar_bridge/FrameClock.hpp"
#include "avatar_bridge/JitterBuffer.hpp"
#include "avatar_bridge/Messages.hpp"
#include "avatar_bridge/PoseMailbox.hpp"
#include "avatar_bridge/SessionSpec.hpp"
#include "avatar_bridge/SubjectMapper.hpp"

namespace avatar_bridge {

// One Live Link subject fed by one bridge session at a time. The session may change (the bridge
// restarted and AvatarLink reopened it); the subject name stays, and `attachment()` says what the subject
// currently looks like. Threads: AvatarLink attaches/detaches, the network thread delivers frames, the
// game thread calls attachment() and sample(), which never wait on the others.
class SubjectFeed {
public:
    struct Attachment {
        std::string session;
        std::string pipeline;
        std::shared_ptr<const SubjectLayout> layout;
        std::int64_t periodNs = 0;
        std::uint64_t version = 0;  // increases with every (re)open: push static data again when it changes
    };

    struct Stats {
        std::uint64_t frames = 0;        // frames received for this subject, all sessions
        std::uint64_t lostFrames = 0;    // gaps in `seq` (publisher dropped them: latest wins)
        std::uint64_t decodeErrors = 0;  // frames that did not fit the rig
        std::uint64_t inputErrors = 0;   // error replies to this subject's inputs
        std::int64_t lastLatencyNs = 0;  // arrival - t_capture_ns of the newest frame
        std::string lastError;
    };

    // `spec` is set for sessions this client opens (and reopens); empty for observed ones.
    SubjectFeed(std::string name, std::optional<SessionSpec> spec);

    const std::string& name() const { return name_; }
    const std::optional<SessionSpec>& spec() const { return spec_; }

    // Any thread. Null until the first session is attached, and after detach.
    std::shared_ptr<const Attachment> attachment() const { return attachment_.load(); }
    bool closed() const { return closed_; }
    // Takes the network side's lock briefly: for status displays and tests, not for every tick.
    Stats stats() const;
    // decodeErrors + inputErrors, lock-free: poll this per tick and read stats().lastError when it moves.
    std::uint64_t errorCount() const { return errorCount_; }

    // Game thread: the pose to show at `nowNs` (wall clock), interpolated by the jitter buffer.
    std::optional<SubjectPose> sample(std::int64_t nowNs);
    std::int64_t playoutDelayNs() const { return jitter_ ? jitter_->delayNs() : 0; }
    // Game thread, instead of sample(): every pose received since the last call, oldest first, stamped
    // with its frame time, for engines that buffer and interpolate themselves. Never waits.
    void takeAll(std::vector<SubjectPose>& out);

    // Called by AvatarLink.
    void attach(const std::string& session, const std::string& pipeline, double fps, const Rig& rig);
    void detach();
    void markClosed() { closed_ = true; }
    using PoseListener = std::function<void(SubjectFeed&, const Attachment&, const SubjectPose&)>;
    // Maps the frame to a pose and posts it to the mailbox; `listener` (may be null) sees it first.
    void deliver(const DecodedFrame& frame, std::int64_t arrivalNs, const PoseListener* listener = nullptr);
    void recordInputError(const ErrorReply& error);
    std::uint64_t nextInputSeq() { return inputSeq_++; }

private:
    const std::string name_;
    const std::optional<SessionSpec> spec_;
    AtomicSharedPtr<const Attachment> attachment_;
    std::atomic<bool> closed_{false};
    std::atomic<std::uint64_t> inputSeq_{0};
    std::atomic<std::uint64_t> errorCount_{0};
    std::uint64_t versions_ = 0;

    // Network side, guarded by mutex_ (the game thread's sample() and takeAll() never take it).
    mutable std::mutex mutex_;
    std::unique_ptr<SubjectMapper> mapper_;
    std::optional<FrameClock> clock_;
    std::optional<std::uint64_t> lastSeq_;
    Stats stats_;

    PoseMailbox mailbox_;

    // Game thread only.
    std::optional<JitterBuffer> jitter_;
    std::uint64_t jitterVersion_ = 0;
    std::vector<PoseMailbox::Entry> scratch_;
};

}  // namespace avatar_bridge
