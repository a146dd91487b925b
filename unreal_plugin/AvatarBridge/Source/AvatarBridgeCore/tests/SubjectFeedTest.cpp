#include <gtest/gtest.h>

#include <memory>

#include "Decoded.hpp"
#include "TestPayloads.hpp"
#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/SubjectFeed.hpp"

using namespace avatar_bridge;

namespace {

constexpr std::int64_t kMs = 1'000'000;

Rig bodyRig() {
    const std::string b = payloads::openMotion(1, "ffeeddccbbaa0099").bytes();
    return std::get<OpenReply>(decoded(Decoder::reply(reinterpret_cast<const std::uint8_t*>(b.data()), b.size()))).rig;
}

DecodedFrame motionFrame(std::uint64_t seq, std::int64_t captureNs, float rootX) {
    auto storage = std::make_shared<std::string>(
        payloads::motionFrame(seq, rootX).uint("t_capture_ns", static_cast<std::uint64_t>(captureNs)).bytes());
    return decoded(Decoder::frame(reinterpret_cast<const std::uint8_t*>(storage->data()), storage->size(), storage));
}

}  // namespace

TEST(SubjectFeed, NothingBeforeAttach) {
    SubjectFeed feed("TestBody", std::nullopt);
    EXPECT_EQ(feed.attachment(), nullptr);
    feed.deliver(motionFrame(0, 1000 * kMs, 0.0f), 1000 * kMs);  // a straggler: ignored
    EXPECT_FALSE(feed.sample(2000 * kMs).has_value());
    EXPECT_EQ(feed.stats().frames, 0u);
}

TEST(SubjectFeed, AttachDeliverSampleAndCountLoss) {
    SubjectFeed feed("TestBody", std::nullopt);
    feed.attach("ffeeddccbbaa0099", "motion", 100.0, bodyRig());  // 10 ms period
    const auto att = feed.attachment();
    ASSERT_NE(att, nullptr);
    EXPECT_EQ(att->version, 1u);
    EXPECT_EQ(att->periodNs, 10 * kMs);
    EXPECT_EQ(att->layout->boneNames.size(), 24u);

    // seq 0, 1, then 3: one frame lost. Root x = 0, 1, 3 m -> Unreal y = 0, -100, -300 cm.
    feed.deliver(motionFrame(0, 1000 * kMs, 0.0f), 1002 * kMs);
    feed.deliver(motionFrame(1, 1010 * kMs, 1.0f), 1012 * kMs);
    feed.deliver(motionFrame(3, 1030 * kMs, 3.0f), 1032 * kMs);
    const auto stats = feed.stats();
    EXPECT_EQ(stats.frames, 3u);
    EXPECT_EQ(stats.lostFrames, 1u);
    EXPECT_EQ(stats.lastLatencyNs, 2 * kMs);

    // Transit 2 ms, margin one period: playout 12 ms behind. At 1032 ms that is 1020 ms, between the
    // frames at 1010 and 1030 ms: halfway, root y = -200 cm.
    const auto pose = feed.sample(1032 * kMs);
    ASSERT_TRUE(pose.has_value());
    EXPECT_EQ(pose->timeNs, 1020 * kMs);
    EXPECT_NEAR(pose->translations[0].y, -200.0f, 1e-3f);
}

TEST(SubjectFeed, TakeAllHandsOverRawFramesWithTheirTimes) {
    SubjectFeed feed("TestBody", std::nullopt);
    feed.attach("ffeeddccbbaa0099", "motion", 100.0, bodyRig());
    // Three frames from one `features` input share a capture time; the frame clock spaces them.
    for (std::uint64_t s = 0; s < 3; ++s) {
        feed.deliver(motionFrame(s, 1000 * kMs, 0.0f), 1001 * kMs);
    }
    std::vector<SubjectPose> poses;
    feed.takeAll(poses);
    ASSERT_EQ(poses.size(), 3u);
    EXPECT_EQ(poses[0].timeNs, 1000 * kMs);
    EXPECT_EQ(poses[2].timeNs, 1020 * kMs);
    EXPECT_EQ(poses[2].seq, 2u);
    poses.clear();
    feed.takeAll(poses);
    EXPECT_TRUE(poses.empty());
}

TEST(SubjectFeed, ReattachBumpsTheVersionAndDetachHides) {
    SubjectFeed feed("TestBody", std::nullopt);
    feed.attach("ffeeddccbbaa0099", "motion", 60.0, bodyRig());
    feed.attach("0011223344556677", "motion", 60.0, bodyRig());
    EXPECT_EQ(feed.attachment()->version, 2u);
    EXPECT_EQ(feed.attachment()->session, "0011223344556677");
    feed.detach();
    EXPECT_EQ(feed.attachment(), nullptr);
    feed.recordInputError(ErrorReply{7, 107, "BAD_SIZE", "wrong size", ""});
    EXPECT_EQ(feed.stats().inputErrors, 1u);
    EXPECT_EQ(feed.errorCount(), 1u);
    EXPECT_EQ(feed.stats().lastError, "BAD_SIZE: wrong size");
}

TEST(SubjectFeed, ListenerSeesEveryPoseWithItsFrameTimeBeforeTheMailbox) {
    SubjectFeed feed("TestBody", std::nullopt);
    feed.attach("ffeeddccbbaa0099", "motion", 100.0, bodyRig());
    std::vector<std::pair<std::int64_t, std::uint64_t>> seen;
    const SubjectFeed::PoseListener listener = [&](SubjectFeed& f, const SubjectFeed::Attachment& att, const SubjectPose& p) {
        EXPECT_EQ(&f, &feed);
        EXPECT_EQ(att.session, "ffeeddccbbaa0099");
        seen.emplace_back(p.timeNs, p.seq);
    };
    feed.deliver(motionFrame(0, 1000 * kMs, 0.0f), 1002 * kMs, &listener);
    feed.deliver(motionFrame(1, 1010 * kMs, 1.0f), 1012 * kMs, &listener);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1], std::make_pair(std::int64_t{1010 * kMs}, std::uint64_t{1}));
    std::vector<SubjectPose> taken;
    feed.takeAll(taken);
    EXPECT_EQ(taken.size(), 2u);  // the mailbox still gets them
}
