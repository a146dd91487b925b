#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "avatar_bridge/F32View.hpp"

namespace avatar_bridge {

// One `batch/motion` message (protocol v1 minor 1, /work/notes/BATCH.md, docs/protocol.md §5.3): the motion
// frames of many sessions from one scheduler tick, as typed column views into the received message. Nothing is
// copied or allocated per row; `storage` keeps the bytes alive. Row r means exactly what a `frame/<session>`
// motion frame with the same session and seq means.
struct MotionBatch {
    static constexpr std::size_t kSessionIdBytes = 16;
    static constexpr std::size_t kJointFloats = 24 * 4;  // quaternions xyzw, rig order
    static constexpr std::size_t kRootFloats = 3;         // metres

    std::size_t rows = 0;
    std::int64_t tPublishNs = 0;  // one publish time for all rows
    double engineUs = 0.0;        // the batched engine call
    std::int64_t batch = 0;       // engine batch size (may exceed rows when padded to a tier)

    // Columns (validated lengths: rows x the row size). Integers are little-endian, read with memcpy.
    const std::uint8_t* sessionColumn = nullptr;   // rows x 16 ASCII bytes
    const std::uint8_t* seqColumn = nullptr;       // rows x uint64
    const std::uint8_t* inputSeqColumn = nullptr;  // rows x uint64
    const std::uint8_t* tCaptureColumn = nullptr;  // rows x int64
    F32View jointColumn;                           // rows x 96
    F32View rootColumn;                            // rows x 3
    std::shared_ptr<const void> storage;

    std::string_view session(std::size_t row) const {
        return {reinterpret_cast<const char*>(sessionColumn + row * kSessionIdBytes), kSessionIdBytes};
    }
    std::uint64_t seq(std::size_t row) const { return read<std::uint64_t>(seqColumn, row); }
    std::uint64_t inputSeq(std::size_t row) const { return read<std::uint64_t>(inputSeqColumn, row); }
    std::int64_t tCaptureNs(std::size_t row) const { return read<std::int64_t>(tCaptureColumn, row); }
    F32View joints(std::size_t row) const { return {jointColumn.bytes() + row * kJointFloats * sizeof(float), kJointFloats}; }
    F32View root(std::size_t row) const { return {rootColumn.bytes() + row * kRootFloats * sizeof(float), kRootFloats}; }

private:
    template <typename T>
    static T read(const std::uint8_t* column, std::size_t row) {
        T v;  // supported targets are little-endian, like the wire (as for F32View)
        std::memcpy(&v, column + row * sizeof(T), sizeof(T));
        return v;
    }
};

}  // namespace avatar_bridge
