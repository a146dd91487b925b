#pragma once

#include <array>
#include <string_view>

namespace avatar_bridge {

// Curve names of a speech session's extra channels (docs/protocol.md §5.2), in wire order.
// Visemes: the morph target names of Oculus/Meta's 15 OVRLipSync visemes as Ready Player Me avatars carry them
// (so a Live Link Pose node drives such a face by name). The wire's `ih`, `oh`, `ou` are their `I`, `O`, `U`.
inline constexpr std::array<std::string_view, 15> kVisemeCurveNames = {
    "viseme_sil", "viseme_PP", "viseme_FF", "viseme_TH", "viseme_DD", "viseme_kk", "viseme_CH", "viseme_SS",
    "viseme_nn",  "viseme_RR", "viseme_aa", "viseme_E",  "viseme_I",  "viseme_O",  "viseme_U",
};
// VRM's five vowel presets (VRM 0.x names A, I, U, E, O; VRM 1.0 calls them aa, ih, ou, ee, oh), prefixed so
// one-letter names never collide with a rig's own curves.
inline constexpr std::array<std::string_view, 5> kVrmVowelCurveNames = {"VRM_A", "VRM_I", "VRM_U", "VRM_E", "VRM_O"};
// Voice activity: 1 while the bridge hears a voice, 0 while the mouth closes.
inline constexpr std::string_view kVoiceCurveName = "Voice";

}  // namespace avatar_bridge
