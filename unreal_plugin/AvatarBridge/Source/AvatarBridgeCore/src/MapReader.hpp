#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

#include "avatar_bridge/F32View.hpp"

namespace avatar_bridge {

// Typed, validating access to one msgpack map with string keys. Every failure throws ProtocolError with
// MISSING_FIELD, BAD_TYPE or BAD_SIZE and names the field, mirroring the bridge's own request checks.
class MapReader {
public:
    MapReader(const msgpack::object& map, std::string_view what);

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
    const msgpack::object& array(std::string_view key) const;

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
    // Default: empty; a zero-length bin is empty too; otherwise exactly `count` float32 values.
    F32View optionalFloats(std::string_view key, std::size_t count) const;

private:
    const msgpack::object* find(std::string_view key) const;
    bool present(std::string_view key) const;  // there and not nil
    const msgpack::object& require(std::string_view key) const;
    [[noreturn]] void badType(std::string_view key, std::string_view expected) const;

    const msgpack::object& map_;
    std::string what_;
};

}  // namespace avatar_bridge
