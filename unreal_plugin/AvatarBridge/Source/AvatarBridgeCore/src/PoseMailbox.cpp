#include "avatar_bridge/PoseMailbox.hpp"

namespace avatar_bridge {

void PoseMailbox::post(SubjectPose pose, std::int64_t arrivalNs) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() >= capacity_) {
        entries_.erase(entries_.begin());
        ++dropped_;
    }
    entries_.push_back({std::move(pose), arrivalNs});
}

bool PoseMailbox::tryTake(std::vector<Entry>& out) {
    const std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
        return false;
    }
    for (auto& e : entries_) {
        out.push_back(std::move(e));
    }
    entries_.clear();
    return true;
}

}  // namespace avatar_bridge
