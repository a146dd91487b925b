#include <gtest/gtest.h>

#include <cmath>

#include "avatar_bridge/SceneTime.hpp"

using namespace avatar_bridge;

namespace {
constexpr std::int64_t kSecond = 1'000'000'000;
constexpr std::int64_t kDay = 86400 * kSecond;
}  // namespace

TEST(SceneTime, TimeOfDayInFramesOfTheSessionRate) {
    // 2026-12-01 is day 20423 since the epoch; 01:00:00.5 UTC at 60 fps is frame 3600 * 60 + 30.
    const std::int64_t t = 20423 * kDay + 3600 * kSecond + kSecond / 2;
    const SceneTime s = sceneTimeOf(t, 60.0);
    EXPECT_EQ(s.rateNumerator, 60);
    EXPECT_EQ(s.rateDenominator, 1);
    EXPECT_EQ(s.frame, 3600 * 60 + 30);
    EXPECT_NEAR(s.subFrame, 0.0f, 1e-4f);

    const SceneTime quarter = sceneTimeOf(t + kSecond / 240, 60.0);  // a quarter frame later
    EXPECT_EQ(quarter.frame, s.frame);
    EXPECT_NEAR(quarter.subFrame, 0.25f, 1e-3f);
}

TEST(SceneTime, NtscOddAndBadRates) {
    EXPECT_EQ(sceneTimeOf(0, 29.97).rateNumerator, 30000);
    EXPECT_EQ(sceneTimeOf(0, 29.97).rateDenominator, 1001);
    EXPECT_EQ(sceneTimeOf(0, 59.94).rateNumerator, 60000);
    EXPECT_EQ(sceneTimeOf(0, 12.5).rateNumerator, 12500);
    EXPECT_EQ(sceneTimeOf(0, 12.5).rateDenominator, 1000);
    for (double bad : {0.0, -5.0, 1e9, std::nan("")}) {
        EXPECT_EQ(sceneTimeOf(kSecond, bad).rateNumerator, 60) << bad;
        EXPECT_EQ(sceneTimeOf(kSecond, bad).frame, 60) << bad;
    }
    EXPECT_GE(sceneTimeOf(-kSecond, 60.0).frame, 0);  // before the epoch: still a time of day
    EXPECT_EQ(sceneTimeOf(kDay - 1, 60.0).frame, 86400 * 60 - 1);
}
