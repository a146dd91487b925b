#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "avatar_bridge/Frame.hpp"
#include "avatar_bridge/Messages.hpp"

namespace avatar_bridge {

// Decodes and validates the bridge's messages (docs/protocol.md §2, §4-§7). Every function throws
// ProtocolError when the payload breaks the contract; unknown keys are ignored.
class Decoder {
public:
    static constexpr int kProtocolVersion = 1;
    static constexpr std::size_t kFlameExpression = 50;
    static constexpr std::size_t kFlameEyelids = 2;
    static constexpr std::size_t kArkitBlendshapes = 52;
    static constexpr std::size_t kSmplJoints = 24;

    // A frame payload (second part of a `frame/<session>` message). The returned frame's arrays point into
    // [data, data + size); `storage` must own those bytes and is kept alive by the frame (no copy).
    static DecodedFrame frame(const std::uint8_t* data, std::size_t size, std::shared_ptr<const void> storage);
    // A reply on the request socket: one of the Reply alternatives, an `error` reply included.
    static Reply reply(const std::uint8_t* data, std::size_t size);
    // An `event/<session>` payload.
    static Event event(const std::uint8_t* data, std::size_t size);
};

}  // namespace avatar_bridge
