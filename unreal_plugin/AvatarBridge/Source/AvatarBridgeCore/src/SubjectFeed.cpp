#include "avatar_bridge/SubjectFeed.hpp"

#include "avatar_bridge/ProtocolError.hpp"

namespace avatar_bridge {

SubjectFeed::SubjectFeed(std::string name, std::optional<SessionSpec> spec)
    : name_(std::move(name)), spec_(std::move(spec)) {}

SubjectFeed::Stats SubjectFeed::stats() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

void SubjectFeed::attach(const std::string& session, const std::string& pipeline, double fps, const Rig& rig) {
    auto mapper = SubjectMapper::create(rig, spec_ && spec_->mirror);
    auto next = std::make_shared<Attachment>();
    next->session = session;
    next->pipeline = pipeline;
    next->layout = std::make_shared<const SubjectLayout>(mapper->layout());
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        clock_.emplace(fps);
        next->periodNs = clock_->periodNs();
        next->version = ++versions_;
        mapper_ = std::move(mapper);
        lastSeq_.reset();
    }
    attachment_.store(std::move(next));
}

void SubjectFeed::detach() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        mapper_.reset();
    }
    attachment_.store(nullptr);
}

void SubjectFeed::deliver(const DecodedFrame& frame, std::int64_t arrivalNs, const PoseListener* listener) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!mapper_) {
        return;  // a straggler of a session we already left
    }
    const FrameHeader& h = frame.header();
    ++stats_.frames;
    if (lastSeq_ && h.seq > *lastSeq_ + 1) {
        stats_.lostFrames += h.seq - *lastSeq_ - 1;
    }
    lastSeq_ = h.seq;
    stats_.lastLatencyNs = arrivalNs - h.tCaptureNs;
    Result<SubjectPose> mapped = mapper_->pose(frame);
    if (!mapped) {
        ++stats_.decodeErrors;
        stats_.lastError = mapped.error().message;
        ++errorCount_;
        return;
    }
    SubjectPose pose = std::move(mapped).value();
    pose.timeNs = clock_->stamp(h.tCaptureNs);
    if (listener != nullptr) {
        if (const auto current = attachment_.load()) {
            (*listener)(*this, *current, pose);
        }
    }
    mailbox_.post(std::move(pose), arrivalNs);
}

void SubjectFeed::recordInputError(const ErrorReply& error) {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.inputErrors;
    stats_.lastError = error.name + ": " + error.message;
    ++errorCount_;
}

std::optional<SubjectPose> SubjectFeed::sample(std::int64_t nowNs) {
    const auto current = attachment();
    if (!current) {
        return std::nullopt;
    }
    if (!jitter_ || jitterVersion_ != current->version) {
        jitter_.emplace(current->periodNs);
        jitterVersion_ = current->version;
    }
    scratch_.clear();
    if (mailbox_.tryTake(scratch_)) {
        for (auto& entry : scratch_) {
            jitter_->push(std::move(entry.pose), entry.arrivalNs);
        }
    }
    return jitter_->sample(nowNs);
}

void SubjectFeed::takeAll(std::vector<SubjectPose>& out) {
    scratch_.clear();
    if (mailbox_.tryTake(scratch_)) {
        for (auto& entry : scratch_) {
            out.push_back(std::move(entry.pose));
        }
    }
}

}  // namespace avatar_bridge
