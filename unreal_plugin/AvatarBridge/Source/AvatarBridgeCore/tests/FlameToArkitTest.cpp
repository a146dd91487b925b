#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "avatar_bridge/ArkitNames.hpp"
#include "avatar_bridge/FlameToArkit.hpp"

using namespace avatar_bridge;

namespace {

// Views over little-endian float storage, as frames hold them.
struct Floats {
    explicit Floats(std::vector<float> v) : values(std::move(v)) {}
    F32View view() const { return {reinterpret_cast<const std::uint8_t*>(values.data()), values.size()}; }
    std::vector<float> values;
};

float weight(const FlameToArkit::Weights& w, const char* name) { return w[arkitIndex(name)]; }

}  // namespace

TEST(ArkitNames, FiftyTwoUniqueNamesInUnrealOrder) {
    EXPECT_EQ(kArkitNames.size(), 52u);
    EXPECT_EQ(arkitIndex("EyeBlinkLeft"), 0u);
    EXPECT_EQ(arkitIndex("JawOpen"), 17u);
    EXPECT_EQ(arkitIndex("TongueOut"), 51u);
    EXPECT_EQ(arkitIndex("eyeBlinkLeft"), 52u);  // Apple's spelling is not Unreal's curve name
}

TEST(FlameToArkit, NeutralFaceIsAllZero) {
    const Floats expression(std::vector<float>(50, 0.0f));
    const Floats eyelids({0.0f, 0.0f});
    const auto w = FlameToArkit::map(expression.view(), eyelids.view(), Quat::identity());
    for (float v : w) {
        EXPECT_EQ(v, 0.0f);
    }
}

TEST(FlameToArkit, JawBlinkSmileAndClamp) {
    std::vector<float> psi(50, 0.0f);
    psi[1] = 1.0f;    // lip corners up: half a smile
    psi[2] = -10.0f;  // brows far down: clamps at 1
    const Floats expression(psi);
    const Floats eyelids({1.0f, 0.5f});
    const Quat jaw = Quat::fromAxisAngle({0, 1, 0}, -0.075f) * Quat::fromAxisAngle({1, 0, 0}, 0.175f);
    const auto w = FlameToArkit::map(expression.view(), eyelids.view(), jaw);
    EXPECT_NEAR(weight(w, "JawOpen"), 0.5f, 0.02f);
    EXPECT_NEAR(weight(w, "JawRight"), 0.5f, 0.03f);  // chin to the subject's right: -y
    EXPECT_EQ(weight(w, "JawLeft"), 0.0f);
    EXPECT_EQ(weight(w, "EyeBlinkLeft"), 1.0f);
    EXPECT_EQ(weight(w, "EyeBlinkRight"), 0.5f);
    EXPECT_NEAR(weight(w, "MouthSmileLeft"), 0.5f, 1e-6f);
    EXPECT_EQ(weight(w, "MouthFrownLeft"), 0.0f);
    EXPECT_EQ(weight(w, "BrowDownLeft"), 1.0f);
    EXPECT_EQ(weight(w, "BrowInnerUp"), 0.0f);
}
