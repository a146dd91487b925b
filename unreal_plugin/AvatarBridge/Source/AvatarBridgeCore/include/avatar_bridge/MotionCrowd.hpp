#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "avatar_bridge/MotionBatch.hpp"

namespace avatar_bridge {

// The newest motion frame of every session in the `batch/motion` stream: what a plugin driving a crowd reads
// each tick. The receive thread ingests whole batches (one lock per batch; a row is copied into its session's
// slot, and nothing is allocated per row except the first time a session appears); any thread reads. Latest
// wins, per session, by `seq` (a row older than what is held is counted and skipped). Values stay in the wire
// convention (docs/protocol.md §3); BodySubjectMapper's conversion applies to them unchanged.
class MotionCrowd {
public:
    using SessionId = std::array<char, MotionBatch::kSessionIdBytes>;

    struct Row {
        SessionId session{};
        std::uint64_t seq = 0;
        std::uint64_t inputSeq = 0;
        std::int64_t tCaptureNs = 0;
        std::int64_t tPublishNs = 0;
        std::int64_t arrivalNs = 0;  // wall clock when its batch was received
        std::array<float, MotionBatch::kJointFloats> joints{};
        std::array<float, MotionBatch::kRootFloats> root{};

        std::string_view sessionId() const { return {session.data(), session.size()}; }
    };

    struct Stats {
        std::uint64_t batches = 0;           // batches ingested
        std::uint64_t rows = 0;              // rows taken (newer than what was held)
        std::uint64_t staleRows = 0;         // rows not newer than the held frame of their session
        std::uint64_t malformedBatches = 0;  // batches the decoder refused (dropped whole)
        std::uint64_t refusedSessions = 0;   // rows of new sessions beyond maxSessions
        std::size_t sessions = 0;            // sessions held now
    };

    // Bounds the table: a bridge serves at most a few thousand sessions; more would be a broken stream.
    explicit MotionCrowd(std::size_t maxSessions = 4096) : maxSessions_(maxSessions) {}

    // Receive thread.
    void ingest(const MotionBatch& batch, std::int64_t arrivalNs);
    void countMalformed();
    // The session ended (a `closed` event) or the bridge went away: forget what was held.
    void forget(std::string_view session);
    void clear();

    // Any thread. The newest frame of `session` into `out`; false when none is held.
    bool latest(std::string_view session, Row& out) const;
    // Every session's newest frame, in no particular order, into `out` (its capacity is reused: no allocation
    // once it has grown to the crowd's size).
    void snapshot(std::vector<Row>& out) const;
    Stats stats() const;

private:
    struct Hash {
        std::size_t operator()(const SessionId& id) const noexcept;
    };
    static bool toId(std::string_view session, SessionId& id);

    const std::size_t maxSessions_;
    mutable std::mutex mutex_;
    std::vector<Row> rows_;
    std::unordered_map<SessionId, std::size_t, Hash> index_;  // session -> its slot in rows_
    Stats stats_;
};

}  // namespace avatar_bridge
