#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace avatar_bridge {

// The msgpack types the reader tells apart (https://github.com/msgpack/msgpack/blob/master/spec.md).
enum class MsgType : std::uint8_t { Nil, Boolean, PositiveInt, NegativeInt, Float, Str, Bin, Array, Map, Ext };

// One decoded value. Strings, bins and ext payloads point into the parsed buffer (nothing is copied).
struct MsgNode {
    MsgType type = MsgType::Nil;
    union {
        bool boolean;
        std::uint64_t u64;  // PositiveInt
        std::int64_t i64;   // NegativeInt
        double f64;         // Float (float32 widened)
    };
    const std::uint8_t* bytes = nullptr;  // Str, Bin, Ext
    std::uint32_t size = 0;               // Str, Bin, Ext: bytes; Array: elements; Map: key/value pairs
    std::uint32_t end = 0;                // index of the first node after this one's subtree

    MsgNode() : u64(0) {}
    std::string_view str() const { return {reinterpret_cast<const char*>(bytes), size}; }
};

// Parses one msgpack message into a flat tree, in pre-order: a container's first child is the node after it,
// each next sibling is at the previous sibling's `end`, and a map's children alternate key, value. Every
// length and count is checked against what is left of the buffer before it is used, nesting and the node
// count are capped, and the message must be exactly one value: nothing a peer sends can make it read out of
// bounds, recurse without end or allocate more than a bounded multiple of the message's size.
class MsgPackReader {
public:
    static constexpr int kMaxDepth = 32;                     // the bridge's messages nest 3 deep
    static constexpr std::size_t kMaxNodes = std::size_t{1} << 16;

    // False, with `error` saying why, when [data, data + size) is not exactly one well-formed value.
    bool parse(const std::uint8_t* data, std::size_t size, std::string& error);

    const MsgNode& node(std::uint32_t index) const { return nodes_[index]; }
    static constexpr std::uint32_t kRoot = 0;

private:
    bool value(int depth, std::string& error);

    std::vector<MsgNode> nodes_;
    const std::uint8_t* at_ = nullptr;
    const std::uint8_t* end_ = nullptr;
};

}  // namespace avatar_bridge
