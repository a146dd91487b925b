#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "avatar_bridge/F32View.hpp"

namespace avatar_bridge {

// Animation frames of docs/protocol.md §5. Arrays are zero-copy views into the received message, which
// `DecodedFrame::storage` keeps alive; copy what you need before dropping the DecodedFrame.

struct FrameHeader {
    std::string session;
    std::uint64_t seq = 0;
    std::uint64_t inputSeq = 0;
    std::int64_t tCaptureNs = 0;
    std::int64_t tPublishNs = 0;
    double engineUs = 0.0;
    std::int64_t batch = 0;
};

struct FaceFrame {
    FrameHeader header;
    bool faceFound = false;
    F32View expression;   // 50, or empty for models without FLAME codes (the face tracker)
    F32View eyelids;      // 2: left, right closure in [0, 1]
    F32View jaw;          // 4: quaternion xyzw, relative to the head
    F32View head;         // 4: quaternion xyzw
    F32View blendshapes;  // 52 ARKit weights, or empty when the session did not ask for them
    F32View gaze;         // 4 or empty: left yaw, pitch, right yaw, pitch, radians (+yaw: the subject's left; +pitch: up)
    // Speech (docs/protocol.md §5.2): empty / unset in frames of sessions without a voice.
    F32View visemes;           // 15 or empty: Oculus visemes sil, PP, FF, TH, DD, kk, CH, SS, nn, RR, aa, E, ih, oh, ou
    F32View vowels;            // 5 or empty: VRM presets A, I, U, E, O in [0, 1]
    std::optional<bool> voice;  // voice activity; unset when the frame has no `voice` key
    // Body (docs/protocol.md §5.1.2): empty / unset in frames of sessions opened without `body: true`.
    F32View body;                    // 50 x 4: humanoid local rotations, quaternion xyzw, the rig's `body` order
    std::optional<bool> bodyFound;   // a body was tracked in this image
    std::optional<bool> leftHandFound;   // the subject's own hands (after the bridge's `mirror`)
    std::optional<bool> rightHandFound;
};

struct MotionFrame {
    FrameHeader header;
    F32View joints;  // 24 x 4: local joint rotations, quaternion xyzw, rig order
    F32View root;    // 3: root translation, metres
};

struct DecodedFrame {
    std::variant<FaceFrame, MotionFrame> frame;
    std::shared_ptr<const void> storage;  // owner of the bytes the views point into

    const FrameHeader& header() const {
        return std::visit([](const auto& f) -> const FrameHeader& { return f.header; }, frame);
    }
};

}  // namespace avatar_bridge
