#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "MsgPackReader.hpp"
#include "avatar_bridge/F32View.hpp"
#include "avatar_bridge/ProtocolError.hpp"

namespace avatar_bridge {

// The first contract violation found while decoding one message. The core is built without exceptions, so a
// failed read does not unwind: it is recorded here, later reads return empty defaults, and the decoder reports
// this first error, the same one a throw at that point would have carried.
class DecodeStatus {
public:
    void fail(ErrorCode code, std::string message) {
        if (!error_) {
            error_ = ProtocolError{code, std::move(message)};
        }
    }
    bool failed() const { return error_.has_value(); }
    const ProtocolError& error() const { return *error_; }

private:
    std::optional<ProtocolError> error_;
};

// Typed, validating access to one msgpack map with string keys. Every failure records MISSING_FIELD, BAD_TYPE
// or BAD_SIZE in the shared DecodeStatus and names the field, mirroring the bridge's own request checks; the
// read then returns an empty value (an empty string, 0, an empty view), which callers must not index before
// checking the status.
class MapReader {
public:
    // `node` must be a map whose keys are all strings; otherwise the status fails (MALFORMED) and the reader
    // reads as an empty map.
    MapReader(const MsgPackReader& tree, std::uint32_t node, std::string what, DecodeStatus& status);

    static constexpr std::uint32_t kNone = UINT32_MAX;  // as `node`: an empty map (there was no valid one)

    // Records a violation the caller found (a bad value, a wrong count); the first one recorded wins.
    void fail(ErrorCode code, std::string message) const { status_.fail(code, std::move(message)); }
    bool failed() const { return status_.failed(); }

    bool has(std::string_view key) const { return find(key) != nullptr; }

    std::string str(std::string_view key) const;
    std::uint64_t uint(std::string_view key) const;
    std::int64_t int64(std::string_view key) const;
    double number(std::string_view key) const;  // msgpack float or int
    bool boolean(std::string_view key) const;
    // A `bin` of exactly `count` float32 values; `allowEmpty` also accepts a zero-length bin.
    F32View floats(std::string_view key, std::size_t count, bool allowEmpty = false) const;
    std::vector<std::string> strings(std::string_view key) const;
    std::vector<std::int64_t> ints(std::string_view key) const;
    MapReader map(std::string_view key) const;
    // The elements of an array of maps, each read as a map named `<what>.<key>[i]`.
    std::vector<MapReader> maps(std::string_view key) const;

    // A `bin` of any length, viewed in place.
    struct Bytes {
        const std::uint8_t* data = nullptr;
        std::size_t size = 0;
    };
    Bytes bin(std::string_view key) const;

    // Optional keys (docs/protocol.md §2): absent or nil means the default.
    std::string optionalStr(std::string_view key, std::string fallback) const;
    std::vector<std::string> optionalStrings(std::string_view key) const;  // default: empty
    std::optional<bool> optionalBoolean(std::string_view key) const;        // default: unset
    std::vector<bool> optionalBooleans(std::string_view key) const;         // an array of bool; default: empty
    // Default: empty; a zero-length bin is empty too; otherwise exactly `count` float32 values.
    F32View optionalFloats(std::string_view key, std::size_t count) const;

private:
    const MsgNode* find(std::string_view key) const;
    bool present(std::string_view key) const;  // there and not nil
    // The value of `key` when it is there and of `type`; otherwise records the failure and returns null.
    const MsgNode* require(std::string_view key, MsgType type, std::string_view expected) const;
    const MsgNode* require(std::string_view key) const;
    // The index of `key`'s value node (or kNone), for readers of nested values.
    std::uint32_t findIndex(std::string_view key) const;
    void badType(std::string_view key, std::string_view expected) const;

    const MsgPackReader& tree_;
    std::uint32_t node_;
    std::string what_;
    DecodeStatus& status_;
};

}  // namespace avatar_bridge
