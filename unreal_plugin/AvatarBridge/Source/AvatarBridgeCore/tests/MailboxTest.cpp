#include <gtest/gtest.h>

#include <thread>

#include "avatar_bridge/PoseMailbox.hpp"

using namespace avatar_bridge;

namespace {

SubjectPose numbered(std::uint64_t seq) {
    SubjectPose p;
    p.seq = seq;
    return p;
}

}  // namespace

TEST(PoseMailbox, TakesEverythingInOrder) {
    PoseMailbox box;
    box.post(numbered(1), 10);
    box.post(numbered(2), 20);
    std::vector<PoseMailbox::Entry> out;
    ASSERT_TRUE(box.tryTake(out));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].pose.seq, 1u);
    EXPECT_EQ(out[1].arrivalNs, 20);
    out.clear();
    ASSERT_TRUE(box.tryTake(out));
    EXPECT_TRUE(out.empty());
}

TEST(PoseMailbox, DropsTheOldestWhenFull) {
    PoseMailbox box(3);
    for (std::uint64_t i = 0; i < 5; ++i) {
        box.post(numbered(i), 0);
    }
    std::vector<PoseMailbox::Entry> out;
    ASSERT_TRUE(box.tryTake(out));
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out.front().pose.seq, 2u);  // latest wins
    EXPECT_EQ(box.dropped(), 2u);
}

TEST(PoseMailbox, ConcurrentProducerAndNonBlockingConsumer) {
    PoseMailbox box(1 << 20);
    constexpr std::uint64_t kCount = 20000;
    std::thread producer([&] {
        for (std::uint64_t i = 0; i < kCount; ++i) {
            box.post(numbered(i), 0);
        }
    });
    std::vector<PoseMailbox::Entry> got;
    std::uint64_t busy = 0;
    while (got.size() < kCount) {
        if (!box.tryTake(got)) {
            ++busy;  // the producer held the lock: the consumer moved on instead of waiting
        }
    }
    producer.join();
    for (std::uint64_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(got[i].pose.seq, i);
    }
    EXPECT_EQ(box.dropped(), 0u);
    RecordProperty("busy_polls", static_cast<int>(busy));
}
