#pragma once

#include <cstdint>

namespace avatar_bridge {

// A frame's capture time as Live Link's MetaData.SceneTime wants it (an FQualifiedFrameTime: frame number
// and sub-frame at a frame rate), the way Live Link Face stamps frames with a timecode: the time of day
// (UTC) counted in frames of the session's rate. Take Recorder, timecode sync and Live Link's detected
// frame rate read it.
struct SceneTime {
    std::int32_t frame = 0;
    float subFrame = 0.0f;  // [0, 1)
    std::int32_t rateNumerator = 60;
    std::int32_t rateDenominator = 1;
};

// `fps` is the session's rate from the open reply; NTSC rates (29.97, 59.94...) become N*1000/1001.
// A non-positive or absurd rate falls back to 60/1. Never throws.
SceneTime sceneTimeOf(std::int64_t wallNs, double fps) noexcept;

}  // namespace avatar_bridge
