#include "avatar_bridge/FlameToArkit.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "avatar_bridge/ArkitNames.hpp"

namespace avatar_bridge {
namespace {

// Inputs of the map: 50 expression values, then jaw axis-angle x, y, z, then eyelids left, right.
constexpr std::size_t kJawX = 50;
constexpr std::size_t kJawY = 51;
constexpr std::size_t kJawZ = 52;
constexpr std::size_t kEyelidLeft = 53;
constexpr std::size_t kEyelidRight = 54;
constexpr std::size_t kInputs = 55;

constexpr float kJawOpenFull = 0.35f;  // radians of jaw opening that read as JawOpen = 1
constexpr float kJawSideFull = 0.15f;  // radians of lateral jaw for JawLeft/JawRight = 1
constexpr float kPsiFull = 2.0f;       // expression components are ~unit variance; 2 sigma drives a shape fully

struct Term {
    std::size_t shape;  // index in kArkitNames, looked up at compile time
    std::size_t input;
    float gain;
};

// Same terms and gains as the bridge's default heuristic; see that file for the assumptions behind them.
constexpr Term kTerms[] = {
    {arkitIndex("JawOpen"), kJawX, 1.0f / kJawOpenFull},
    {arkitIndex("JawLeft"), kJawY, 1.0f / kJawSideFull},
    {arkitIndex("JawRight"), kJawY, -1.0f / kJawSideFull},
    {arkitIndex("EyeBlinkLeft"), kEyelidLeft, 1.0f},
    {arkitIndex("EyeBlinkRight"), kEyelidRight, 1.0f},
    {arkitIndex("MouthLowerDownLeft"), 0, 0.6f / kPsiFull},
    {arkitIndex("MouthLowerDownRight"), 0, 0.6f / kPsiFull},
    {arkitIndex("MouthUpperUpLeft"), 0, 0.6f / kPsiFull},
    {arkitIndex("MouthUpperUpRight"), 0, 0.6f / kPsiFull},
    {arkitIndex("MouthSmileLeft"), 1, 1.0f / kPsiFull},
    {arkitIndex("MouthSmileRight"), 1, 1.0f / kPsiFull},
    {arkitIndex("CheekSquintLeft"), 1, 0.5f / kPsiFull},
    {arkitIndex("CheekSquintRight"), 1, 0.5f / kPsiFull},
    {arkitIndex("MouthFrownLeft"), 1, -1.0f / kPsiFull},
    {arkitIndex("MouthFrownRight"), 1, -1.0f / kPsiFull},
    {arkitIndex("BrowInnerUp"), 2, 1.0f / kPsiFull},
    {arkitIndex("BrowOuterUpLeft"), 2, 0.8f / kPsiFull},
    {arkitIndex("BrowOuterUpRight"), 2, 0.8f / kPsiFull},
    {arkitIndex("BrowDownLeft"), 2, -1.0f / kPsiFull},
    {arkitIndex("BrowDownRight"), 2, -1.0f / kPsiFull},
    {arkitIndex("MouthPucker"), 3, 1.0f / kPsiFull},
    {arkitIndex("MouthFunnel"), 3, 0.5f / kPsiFull},
    {arkitIndex("MouthStretchLeft"), 3, -0.7f / kPsiFull},
    {arkitIndex("MouthStretchRight"), 3, -0.7f / kPsiFull},
};

constexpr bool allArkitNames() {
    for (const Term& t : kTerms) {
        if (t.shape >= kArkitNames.size()) {
            return false;
        }
    }
    return true;
}
static_assert(allArkitNames(), "every term must name an ARKit shape");

// Axis-angle (axis * angle, radians) of a unit quaternion, taking the short way (angle in [0, pi]).
Vec3 axisAngle(const Quat& q) {
    const Quat u = q.w < 0.0f ? Quat{-q.x, -q.y, -q.z, -q.w} : q;
    const float s = std::sqrt(u.x * u.x + u.y * u.y + u.z * u.z);
    if (s < 1e-6f) {
        return Vec3{u.x, u.y, u.z} * 2.0f;  // small-angle limit of angle / sin(angle / 2)
    }
    return Vec3{u.x, u.y, u.z} * (2.0f * std::atan2(s, u.w) / s);
}

}  // namespace

FlameToArkit::Weights FlameToArkit::map(const F32View& expression, const F32View& eyelids, const Quat& jaw) {
    std::array<float, kInputs> in{};
    for (std::size_t i = 0; i < std::min<std::size_t>(expression.size(), 50); ++i) {
        in[i] = expression[i];
    }
    const Vec3 jawAA = axisAngle(jaw.normalized());
    in[kJawX] = jawAA.x;
    in[kJawY] = jawAA.y;
    in[kJawZ] = jawAA.z;
    if (eyelids.size() == 2) {
        in[kEyelidLeft] = eyelids[0];
        in[kEyelidRight] = eyelids[1];
    }
    Weights out{};
    for (const Term& t : kTerms) {
        out[t.shape] += t.gain * in[t.input];
    }
    for (float& w : out) {
        w = std::isfinite(w) ? std::clamp(w, 0.0f, 1.0f) : 0.0f;
    }
    return out;
}

}  // namespace avatar_bridge
