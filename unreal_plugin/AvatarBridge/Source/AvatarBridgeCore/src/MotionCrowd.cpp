#include "avatar_bridge/MotionCrowd.hpp"

#include <cstring>

namespace avatar_bridge {

std::size_t MotionCrowd::Hash::operator()(const SessionId& id) const noexcept {
    std::size_t h = 1469598103934665603ull;  // FNV-1a over the 16 id bytes
    for (const char c : id) {
        h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
    return h;
}

bool MotionCrowd::toId(std::string_view session, SessionId& id) {
    if (session.size() != id.size()) {
        return false;
    }
    std::memcpy(id.data(), session.data(), id.size());
    return true;
}

void MotionCrowd::ingest(const MotionBatch& batch, std::int64_t arrivalNs) {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.batches;
    for (std::size_t r = 0; r < batch.rows; ++r) {
        SessionId id;
        toId(batch.session(r), id);  // always 16 bytes: the decoder checked the column
        const std::uint64_t seq = batch.seq(r);
        auto it = index_.find(id);
        if (it == index_.end()) {
            if (rows_.size() >= maxSessions_) {
                ++stats_.refusedSessions;
                continue;
            }
            it = index_.emplace(id, rows_.size()).first;
            rows_.emplace_back();
            rows_.back().session = id;
        } else if (seq <= rows_[it->second].seq) {
            ++stats_.staleRows;  // a duplicate or reordered row: latest wins
            continue;
        }
        Row& row = rows_[it->second];
        row.seq = seq;
        row.inputSeq = batch.inputSeq(r);
        row.tCaptureNs = batch.tCaptureNs(r);
        row.tPublishNs = batch.tPublishNs;
        row.arrivalNs = arrivalNs;
        batch.joints(r).copyTo(row.joints.data());
        batch.root(r).copyTo(row.root.data());
        ++stats_.rows;
    }
    stats_.sessions = rows_.size();
}

void MotionCrowd::countMalformed() {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.malformedBatches;
}

void MotionCrowd::forget(std::string_view session) {
    SessionId id;
    if (!toId(session, id)) {
        return;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = index_.find(id);
    if (it == index_.end()) {
        return;
    }
    // Move the last slot into the freed one, so slots stay dense.
    const std::size_t slot = it->second;
    index_.erase(it);
    if (slot + 1 != rows_.size()) {
        rows_[slot] = rows_.back();
        index_[rows_[slot].session] = slot;
    }
    rows_.pop_back();
    stats_.sessions = rows_.size();
}

void MotionCrowd::clear() {
    const std::lock_guard<std::mutex> lock(mutex_);
    rows_.clear();
    index_.clear();
    stats_.sessions = 0;
}

bool MotionCrowd::latest(std::string_view session, Row& out) const {
    SessionId id;
    if (!toId(session, id)) {
        return false;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = index_.find(id);
    if (it == index_.end()) {
        return false;
    }
    out = rows_[it->second];
    return true;
}

void MotionCrowd::snapshot(std::vector<Row>& out) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    out.assign(rows_.begin(), rows_.end());
}

MotionCrowd::Stats MotionCrowd::stats() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

}  // namespace avatar_bridge
