#pragma once

#include <array>

#include "avatar_bridge/F32View.hpp"
#include "avatar_bridge/Quat.hpp"

namespace avatar_bridge {

// Fallback FLAME -> ARKit-52 weights for sessions opened with `blendshapes: false` (or older bridges).
// The bridge's own mapping is preferred whenever frames carry `blendshapes`. This is the same approximate
// heuristic the bridge uses by default (bridge/rig/flame_to_arkit.py): jaw and blinks about right, the
// rest only qualitative; weights = clamp(M [expression, jaw axis-angle, eyelids], 0, 1).
class FlameToArkit {
public:
    using Weights = std::array<float, 52>;

    // `expression`: 50 FLAME coefficients; `eyelids`: left, right closure; `jaw`: wire-frame quaternion.
    static Weights map(const F32View& expression, const F32View& eyelids, const Quat& jaw);
};

}  // namespace avatar_bridge
