#include <gtest/gtest.h>

#include <cmath>

#include "avatar_bridge/FrameClock.hpp"
#include "avatar_bridge/JitterBuffer.hpp"

using namespace avatar_bridge;

namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kPeriod = 10 * kMs;

// A one-bone pose: yaw `angle` about Z, translation (x, 0, 0), one curve `c`.
SubjectPose pose(std::int64_t timeNs, float angle, float x, float c, std::uint64_t seq = 0) {
    SubjectPose p;
    p.timeNs = timeNs;
    p.seq = seq;
    p.rotations = {Quat::fromAxisAngle({0, 0, 1}, angle)};
    p.translations = {Vec3{x, 0, 0}};
    p.curves = {c};
    return p;
}

float yawOf(const SubjectPose& p) {
    const Quat& q = p.rotations.at(0);
    return 2.0f * std::atan2(q.z, q.w);
}

}  // namespace

TEST(JitterBuffer, EmptyGivesNothing) {
    JitterBuffer b(kPeriod);
    EXPECT_FALSE(b.sample(123).has_value());
}

TEST(JitterBuffer, InterpolatesBetweenNeighboursAtThePlayoutTime) {
    JitterBuffer b(kPeriod);
    // Constant 5 ms transit: delay = 5 ms mean + max(4 * 0 deviation, 1 period) = 15 ms.
    b.push(pose(0, 0.0f, 0.0f, 0.0f, 0), 5 * kMs);
    b.push(pose(10 * kMs, 0.2f, 10.0f, 1.0f, 1), 15 * kMs);
    b.push(pose(20 * kMs, 0.4f, 20.0f, 0.0f, 2), 25 * kMs);
    EXPECT_EQ(b.delayNs(), 15 * kMs);

    // now = 27.5 ms -> playout at 12.5 ms: a quarter of the way from frame 1 to frame 2.
    const auto s = b.sample(27'500'000);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->timeNs, 12'500'000);
    EXPECT_EQ(s->seq, 1u);
    EXPECT_NEAR(yawOf(*s), 0.25f, 1e-5f);  // slerp: angle moves linearly, 0.2 -> 0.4
    EXPECT_NEAR(s->translations[0].x, 12.5f, 1e-4f);
    EXPECT_NEAR(s->curves[0], 0.75f, 1e-6f);
    EXPECT_NEAR(s->rotations[0].w * s->rotations[0].w + s->rotations[0].z * s->rotations[0].z, 1.0f, 1e-6f);
}

TEST(JitterBuffer, HoldsFirstBeforeAndNewestAfter) {
    JitterBuffer b(kPeriod);
    b.push(pose(100 * kMs, 0.1f, 1.0f, 0.1f), 100 * kMs);  // zero transit: delay = one period
    b.push(pose(110 * kMs, 0.2f, 2.0f, 0.2f), 110 * kMs);
    EXPECT_NEAR(b.sample(105 * kMs)->curves[0], 0.1f, 1e-6f);   // playout 95 ms: before the first frame
    EXPECT_NEAR(b.sample(500 * kMs)->curves[0], 0.2f, 1e-6f);   // far past the newest: hold, no extrapolation
    EXPECT_EQ(b.size(), 1u);                                     // frames behind the playout point are gone
}

TEST(JitterBuffer, DelayGrowsWithJitter) {
    JitterBuffer steady(kPeriod);
    JitterBuffer jittery(kPeriod);
    for (int i = 0; i < 200; ++i) {
        const std::int64_t t = i * kPeriod;
        steady.push(pose(t, 0, 0, 0), t + 8 * kMs);
        jittery.push(pose(t, 0, 0, 0), t + ((i % 2) ? 2 : 14) * kMs);  // same 8 ms mean, +-6 ms jitter
    }
    EXPECT_NEAR(static_cast<double>(steady.delayNs()), 18.0 * kMs, 0.01 * kMs);
    // Margin = 4 x ~6 ms mean deviation = ~24 ms > one period.
    EXPECT_GT(jittery.delayNs(), 28 * kMs);
    EXPECT_LT(jittery.delayNs(), 36 * kMs);
}

TEST(JitterBuffer, PlayoutNeverRunsBackwardsWhenTheDelayGrows) {
    JitterBuffer b(kPeriod);
    std::int64_t now = 0;
    std::int64_t lastNow = 0;
    std::int64_t last = 0;
    std::int64_t t = 0;
    // 1 s of steady 2 ms transit, then frames suddenly take 42 ms: the target jumps 40 ms back.
    for (int i = 0; i < 200; ++i, t += kPeriod) {
        const std::int64_t transit = (i < 100 ? 2 : 42) * kMs;
        b.push(pose(t, 0, 0, 0), t + transit);
        now = t + transit;
        const auto s = b.sample(now);
        ASSERT_TRUE(s.has_value());
        if (i > 0) {
            EXPECT_GE(s->timeNs, last);                                                   // monotonic
            EXPECT_LE(s->timeNs - last, static_cast<std::int64_t>(1.1 * (now - lastNow)) + 1);  // <= 1.1x speed
        }
        last = s->timeNs;
        lastNow = now;
    }
    // Slowed to 0.9x, it has caught up with the new target (within one period) by the end.
    EXPECT_NEAR(static_cast<double>(last), static_cast<double>(now - b.delayNs()), 1.0 * kPeriod);
}

TEST(JitterBuffer, JumpsForwardWhenFarBehind) {
    JitterBuffer b(kPeriod);
    b.push(pose(0, 0, 0, 0.0f), 0);
    EXPECT_EQ(b.sample(10 * kMs)->timeNs, 0);  // delay = one period
    b.push(pose(1000 * kMs, 0, 0, 1.0f), 1000 * kMs);
    // A 1 s stall: rather than crawling through old frames at 1.1x, playout resyncs to the target.
    EXPECT_GE(b.sample(1010 * kMs)->timeNs, 990 * kMs);
}

TEST(JitterBuffer, LateFramesAreOrderedAndCapacityIsBounded) {
    JitterBuffer::Config config;
    config.capacity = 4;
    JitterBuffer b(kPeriod, config);
    b.push(pose(20 * kMs, 0, 0, 2.0f), 20 * kMs);
    b.push(pose(10 * kMs, 0, 0, 1.0f), 20 * kMs);  // arrived late, still placed before 20 ms
    b.push(pose(30 * kMs, 0, 0, 3.0f), 30 * kMs);
    EXPECT_NEAR(b.sample(b.delayNs() + 15 * kMs)->curves[0], 1.5f, 1e-5f);
    JitterBuffer small(kPeriod, config);
    for (int i = 0; i < 10; ++i) {
        small.push(pose(i * kPeriod, 0, 0, 0), i * kPeriod);
    }
    EXPECT_EQ(small.size(), 4u);
}

TEST(JitterBuffer, InterpolateFallsBackToTheNewerPoseWhenLayoutsDiffer) {
    SubjectPose a = pose(0, 0, 0, 0.0f);
    SubjectPose b = pose(10, 0, 0, 1.0f);
    b.curves.push_back(5.0f);
    const SubjectPose out = JitterBuffer::interpolate(a, b, 0.5f);
    EXPECT_EQ(out.curves.size(), 2u);
    EXPECT_EQ(out.curves[1], 5.0f);
}

TEST(FrameClock, KeepsAdvancingCaptureTimes) {
    FrameClock clock(50.0);  // 20 ms period
    EXPECT_EQ(clock.periodNs(), 20 * kMs);
    EXPECT_EQ(clock.stamp(1000 * kMs), 1000 * kMs);
    EXPECT_EQ(clock.stamp(1033 * kMs), 1033 * kMs);  // camera jitter is kept as captured
}

TEST(FrameClock, SpacesFramesOfOneInputByThePeriod) {
    FrameClock clock(50.0);
    // One `features` input of 3 rows: three frames with the same capture time.
    EXPECT_EQ(clock.stamp(1000 * kMs), 1000 * kMs);
    EXPECT_EQ(clock.stamp(1000 * kMs), 1020 * kMs);
    EXPECT_EQ(clock.stamp(1000 * kMs), 1040 * kMs);
    EXPECT_EQ(clock.stamp(1100 * kMs), 1100 * kMs);  // a later input starts from its own time again
}
