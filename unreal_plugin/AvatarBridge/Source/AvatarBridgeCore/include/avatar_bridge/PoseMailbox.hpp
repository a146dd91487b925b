#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "avatar_bridge/SubjectPose.hpp"

namespace avatar_bridge {

// Hands poses from the network thread to the game thread. The writer holds the lock only to move one
// pose in; the reader never waits: if the writer is inside right now, the reader gets nothing this tick
// and picks the poses up on the next one. Bounded: past `capacity` the oldest unread pose is dropped
// (latest wins, as on the wire).
class PoseMailbox {
public:
    struct Entry {
        SubjectPose pose;
        std::int64_t arrivalNs = 0;
    };

    explicit PoseMailbox(std::size_t capacity = 64) : capacity_(capacity) {}

    void post(SubjectPose pose, std::int64_t arrivalNs);
    // Appends every unread entry to `out`, oldest first. False when the lock was busy (nothing taken).
    bool tryTake(std::vector<Entry>& out);
    // Poses dropped because the reader fell `capacity` behind.
    std::uint64_t dropped() const { return dropped_; }

private:
    mutable std::mutex mutex_;
    std::vector<Entry> entries_;
    std::size_t capacity_;
    std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace avatar_bridge
