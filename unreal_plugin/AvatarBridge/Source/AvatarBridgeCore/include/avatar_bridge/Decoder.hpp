#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "avatar_bridge/Frame.hpp"
#include "avatar_bridge/Messages.hpp"
#include "avatar_bridge/MotionBatch.hpp"
#include "avatar_bridge/ProtocolError.hpp"

namespace avatar_bridge {

// Decodes and validates the bridge's messages (docs/protocol.md §2, §4-§7) with the core's own msgpack reader
// (src/MsgPackReader.hpp). Every function returns the ProtocolError of the first contract violation instead of
// a value when the payload breaks the contract (nothing throws); unknown keys are ignored.
class Decoder {
public:
    static constexpr int kProtocolVersion = 1;
    static constexpr std::size_t kFlameExpression = 50;
    static constexpr std::size_t kFlameEyelids = 2;
    static constexpr std::size_t kArkitBlendshapes = 52;
    static constexpr std::size_t kSmplJoints = 24;
    static constexpr std::size_t kHumanoidJoints = 50;  // the `body` rig of face sessions (docs/protocol.md §5.1.2)
    static constexpr std::size_t kSpeechVisemes = 15;  // Oculus visemes (docs/protocol.md §5.2)
    static constexpr std::size_t kSpeechVowels = 5;    // VRM A, I, U, E, O

    // A frame payload (second part of a `frame/<session>` message). The returned frame's arrays point into
    // [data, data + size); `storage` must own those bytes and is kept alive by the frame (no copy).
    static Result<DecodedFrame> frame(const std::uint8_t* data, std::size_t size, std::shared_ptr<const void> storage);
    // A `batch/motion` payload (protocol minor 1). Any column whose length is not rows x its row size, a row
    // count under 1, another pipeline or a broken map is an error: the caller drops the whole message. Columns point
    // into [data, data + size), kept alive by `storage`; unknown keys (later minors' columns) are ignored.
    static Result<MotionBatch> motionBatch(const std::uint8_t* data, std::size_t size, std::shared_ptr<const void> storage);
    // A reply on the request socket: one of the Reply alternatives, an `error` reply included.
    static Result<Reply> reply(const std::uint8_t* data, std::size_t size);
    // An `event/<session>` payload.
    static Result<Event> event(const std::uint8_t* data, std::size_t size);
};

}  // namespace avatar_bridge
