#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace avatar_bridge {

// The 52 ARKit blendshape curve names in Unreal's EARFaceBlendShape order: the names Live Link Face
// publishes and MetaHuman's mh_arkit_mapping_pose expects. Map by name, not by index, across tools.
inline constexpr std::array<std::string_view, 52> kArkitNames = {
    "EyeBlinkLeft",     "EyeLookDownLeft",  "EyeLookInLeft",      "EyeLookOutLeft",      "EyeLookUpLeft",
    "EyeSquintLeft",    "EyeWideLeft",      "EyeBlinkRight",      "EyeLookDownRight",    "EyeLookInRight",
    "EyeLookOutRight",  "EyeLookUpRight",   "EyeSquintRight",     "EyeWideRight",        "JawForward",
    "JawLeft",          "JawRight",         "JawOpen",            "MouthClose",          "MouthFunnel",
    "MouthPucker",      "MouthLeft",        "MouthRight",         "MouthSmileLeft",      "MouthSmileRight",
    "MouthFrownLeft",   "MouthFrownRight",  "MouthDimpleLeft",    "MouthDimpleRight",    "MouthStretchLeft",
    "MouthStretchRight", "MouthRollLower",  "MouthRollUpper",     "MouthShrugLower",     "MouthShrugUpper",
    "MouthPressLeft",   "MouthPressRight",  "MouthLowerDownLeft", "MouthLowerDownRight", "MouthUpperUpLeft",
    "MouthUpperUpRight", "BrowDownLeft",    "BrowDownRight",      "BrowInnerUp",         "BrowOuterUpLeft",
    "BrowOuterUpRight", "CheekPuff",        "CheekSquintLeft",    "CheekSquintRight",    "NoseSneerLeft",
    "NoseSneerRight",   "TongueOut",
};

// Index of `name` in kArkitNames, or kArkitNames.size() when it is not an ARKit name.
constexpr std::size_t arkitIndex(std::string_view name) {
    for (std::size_t i = 0; i < kArkitNames.size(); ++i) {
        if (kArkitNames[i] == name) {
            return i;
        }
    }
    return kArkitNames.size();
}

}  // namespace avatar_bridge
