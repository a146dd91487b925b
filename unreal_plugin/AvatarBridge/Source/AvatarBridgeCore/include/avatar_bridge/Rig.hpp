#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "avatar_bridge/Vec3.hpp"

namespace avatar_bridge {

// Rig descriptions of docs/protocol.md §4.3, sent once per session in the `open` reply and the `opened`
// event. Both are validated on decode to the wire convention (right-handed, +Y up, +Z forward, metres, xyzw).

struct BodyRig {
    // A motion session's 24 SMPL joints, or the 50 humanoid joints of a face session opened with `body: true`
    // (docs/protocol.md §5.1.2: Hips ... fingers, each named by its HumanBodyBones name), in frame order.
    std::vector<std::string> joints;
    std::vector<int> parents;           // parent index per joint, -1 for the root; parents precede children
    std::vector<Vec3> restOffsets;      // wire frame, metres; the root's is its rest position
    std::vector<std::string> humanoid;  // Unity HumanBodyBones names, "" where none fits
};

struct FaceRig {
    std::vector<std::string> expression;   // 50 FLAME expression component names
    std::vector<std::string> eyelids;      // 2 names, left then right
    std::vector<std::string> rotations;    // ["head", "jaw"]
    std::vector<std::string> blendshapes;  // 52 ARKit names in EARFaceBlendShape order, or empty
    // Optional (docs/protocol.md §5.1, §5.2; absent means empty): blendshapes the model never moves, and the
    // optional frame keys this session's frames carry ("head_position", "gaze", "visemes", "vowels", "voice").
    std::vector<std::string> unsupported;
    std::vector<std::string> extras;
    // Sessions opened with `body: true` (docs/protocol.md §5.1.2): the humanoid the frames' `body` rotations are for.
    std::optional<BodyRig> body;

    bool hasExtra(const std::string& key) const {
        for (const auto& e : extras) {
            if (e == key) {
                return true;
            }
        }
        return false;
    }
};

using Rig = std::variant<FaceRig, BodyRig>;

}  // namespace avatar_bridge
