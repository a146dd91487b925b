// Batched motion frames (`batch/motion`, protocol minor 1, /work/notes/BATCH.md): decoding of handmade
// payloads, and the crowd table that keeps each session's newest row.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "Decoded.hpp"
#include "TestPayloads.hpp"
#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/MotionCrowd.hpp"
#include "avatar_bridge/ProtocolError.hpp"

// Counts heap allocations made while `gCounting` is set, to check that the receive path allocates nothing
// per row. Replaces the global operator new/delete of this test program (plain malloc/free otherwise), so the
// sanitizer build (sanitizer_tests) leaves it out: there the sanitizers' own operator new must stay.
namespace {
std::atomic<bool> gCounting{false};
std::atomic<std::size_t> gAllocations{0};
}  // namespace

#if !defined(AVATAR_BRIDGE_SANITIZER_TESTS)

void* operator new(std::size_t size) {
    if (gCounting) {
        ++gAllocations;
    }
    if (void* p = std::malloc(size == 0 ? 1 : size)) {
        return p;
    }
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

using namespace avatar_bridge;

namespace {

const std::vector<std::string> kSessions = {"00000000000000a0", "00000000000000a1", "00000000000000a2"};

std::shared_ptr<std::string> bytesOf(const Payload& p) { return std::make_shared<std::string>(p.bytes()); }

Result<MotionBatch> decodeResult(const std::shared_ptr<std::string>& storage) {
    return Decoder::motionBatch(reinterpret_cast<const std::uint8_t*>(storage->data()), storage->size(), storage);
}

MotionBatch decode(const std::shared_ptr<std::string>& storage) { return decoded(decodeResult(storage)); }

MotionBatch decode(const Payload& p) { return decode(bytesOf(p)); }

ErrorCode batchError(const Payload& p) { return errorOf(decodeResult(bytesOf(p))); }

std::vector<std::string> sessionIds(std::size_t n) {
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < n; ++i) {
        std::string id = "0000000000000000" + std::to_string(i);
        ids.push_back(id.substr(id.size() - 16));
    }
    return ids;
}

std::string bin32(const std::string& body) {  // msgpack bin32 header, big-endian length, then the bytes
    std::string out = "\xc6";
    for (int shift = 24; shift >= 0; shift -= 8) {
        out.push_back(static_cast<char>((body.size() >> shift) & 0xff));
    }
    return out + body;
}

}  // namespace

TEST(BatchDecoding, RowsAreTypedViewsIntoTheMessage) {
    const auto storage = bytesOf(payloads::motionBatch(kSessions, {7, 3, 9}, 0.5f));
    const MotionBatch b = decode(storage);
    ASSERT_EQ(b.rows, 3u);
    EXPECT_EQ(b.tPublishNs, 1'700'000'000'020'000'000LL);
    EXPECT_DOUBLE_EQ(b.engineUs, 45.5);
    EXPECT_EQ(b.batch, 4);  // padded to a tier
    EXPECT_EQ(b.session(0), "00000000000000a0");
    EXPECT_EQ(b.session(2), "00000000000000a2");
    EXPECT_EQ(b.seq(1), 3u);
    EXPECT_EQ(b.inputSeq(2), 109u);
    EXPECT_EQ(b.tCaptureNs(0), 1'700'000'000'000'000'000LL + 7 * 16'666'667LL);
    ASSERT_EQ(b.joints(1).size(), 96u);
    EXPECT_FLOAT_EQ(b.joints(1)[4], 0.51f);  // row 1, joint 1, x
    EXPECT_FLOAT_EQ(b.joints(2)[7], 1.0f);   // row 2, joint 1, w
    EXPECT_FLOAT_EQ(b.root(2)[0], 2.0f);
    EXPECT_FLOAT_EQ(b.root(2)[1], 0.5f);
    EXPECT_FLOAT_EQ(b.root(2)[2], -2.0f);
    // Zero-copy: the columns point into the received bytes, which the batch keeps alive.
    const auto* begin = reinterpret_cast<const std::uint8_t*>(storage->data());
    EXPECT_GE(b.jointColumn.bytes(), begin);
    EXPECT_LE(b.rootColumn.bytes() + 3 * 3 * sizeof(float), begin + storage->size());
    EXPECT_EQ(b.storage.get(), storage.get());
}

TEST(BatchDecoding, AnyBinFormatAnyKeyOrderAndUnknownKeys) {
    // bin32 for a 48-byte column (the packer would pick bin8), keys moved to the end, a future minor's column.
    std::string ids;
    for (const auto& s : kSessions) {
        ids += s;
    }
    const Payload p = payloads::motionBatch(kSessions, {1, 2, 3})
                          .erase("op")
                          .packed("session", bin32(ids))
                          .bin("future_column", std::string(3 * 4, '\1'))
                          .uint("minor", 2)
                          .str("op", "frames");
    const MotionBatch b = decode(p);
    EXPECT_EQ(b.rows, 3u);
    EXPECT_EQ(b.session(1), "00000000000000a1");
    EXPECT_EQ(b.seq(2), 3u);
}

TEST(BatchDecoding, MalformedBatchesAreRefusedWhole) {
    const auto good = [] { return payloads::motionBatch(kSessions, {1, 2, 3}); };
    // A column one row short or one byte long: the whole message is refused.
    EXPECT_EQ(batchError(good().floats("root", std::vector<float>(6))), ErrorCode::BadSize);
    EXPECT_EQ(batchError(good().bin("seq", std::string(25, '\0'))), ErrorCode::BadSize);
    EXPECT_EQ(batchError(good().bin("session", std::string(47, 'a'))), ErrorCode::BadSize);
    EXPECT_EQ(batchError(good().floats("joints", std::vector<float>(3 * 96 - 1))), ErrorCode::BadSize);
    EXPECT_EQ(batchError(good().uint("rows", 4)), ErrorCode::BadSize);  // columns hold 3 rows
    EXPECT_EQ(batchError(good().uint("rows", 0)), ErrorCode::BadValue);
    EXPECT_EQ(batchError(good().uint("rows", ~0ull)), ErrorCode::BadValue);  // no overflow in rows x row size
    EXPECT_EQ(batchError(good().erase("input_seq")), ErrorCode::MissingField);
    EXPECT_EQ(batchError(good().str("seq", "1")), ErrorCode::BadType);
    EXPECT_EQ(batchError(good().sint("rows", -3)), ErrorCode::BadType);
    EXPECT_EQ(batchError(good().str("pipeline", "face")), ErrorCode::BadValue);
    EXPECT_EQ(batchError(good().str("op", "frame")), ErrorCode::BadValue);
    EXPECT_EQ(batchError(good().uint("v", 2)), ErrorCode::UnsupportedVersion);
    EXPECT_EQ(batchError(good().uint("minor", 0)), ErrorCode::UnsupportedVersion);
    const std::string garbage = "\x93\x01\x02\x03";
    EXPECT_EQ(Decoder::motionBatch(reinterpret_cast<const std::uint8_t*>(garbage.data()), garbage.size(), nullptr).error().code,
              ErrorCode::Malformed);
}

TEST(MotionCrowd, KeepsTheNewestRowOfEverySession) {
    MotionCrowd crowd;
    crowd.ingest(decode(payloads::motionBatch(kSessions, {5, 5, 5}, 0.0f)), 111);
    // The next tick: session a1 is older (a reordered or duplicate row), a2 newer, a3 new.
    const std::vector<std::string> next = {"00000000000000a1", "00000000000000a2", "00000000000000a3"};
    crowd.ingest(decode(payloads::motionBatch(next, {4, 6, 0}, 0.25f)), 222);

    MotionCrowd::Row row;
    ASSERT_TRUE(crowd.latest("00000000000000a1", row));
    EXPECT_EQ(row.seq, 5u);  // latest wins: the older row was skipped
    EXPECT_EQ(row.arrivalNs, 111);
    EXPECT_FLOAT_EQ(row.joints[4], 0.01f);
    ASSERT_TRUE(crowd.latest("00000000000000a2", row));
    EXPECT_EQ(row.seq, 6u);
    EXPECT_EQ(row.inputSeq, 106u);
    EXPECT_EQ(row.arrivalNs, 222);
    EXPECT_FLOAT_EQ(row.joints[4], 0.26f);  // it was row 1 of the second batch
    EXPECT_FLOAT_EQ(row.root[1], 0.25f);
    EXPECT_EQ(row.sessionId(), "00000000000000a2");
    ASSERT_TRUE(crowd.latest("00000000000000a3", row));
    EXPECT_EQ(row.seq, 0u);
    EXPECT_FALSE(crowd.latest("00000000000000ff", row));
    EXPECT_FALSE(crowd.latest("short", row));

    const auto stats = crowd.stats();
    EXPECT_EQ(stats.batches, 2u);
    EXPECT_EQ(stats.rows, 5u);
    EXPECT_EQ(stats.staleRows, 1u);
    EXPECT_EQ(stats.sessions, 4u);

    std::vector<MotionCrowd::Row> all;
    crowd.snapshot(all);
    ASSERT_EQ(all.size(), 4u);
    crowd.forget("00000000000000a0");  // closed
    crowd.snapshot(all);
    EXPECT_EQ(all.size(), 3u);
    EXPECT_FALSE(crowd.latest("00000000000000a0", row));
    ASSERT_TRUE(crowd.latest("00000000000000a3", row));  // the slot that moved is still found
    EXPECT_EQ(row.sessionId(), "00000000000000a3");
    crowd.clear();
    EXPECT_EQ(crowd.stats().sessions, 0u);
}

TEST(MotionCrowd, BoundedTable) {
    MotionCrowd crowd(2);
    crowd.ingest(decode(payloads::motionBatch(kSessions, {1, 1, 1})), 1);
    EXPECT_EQ(crowd.stats().sessions, 2u);
    EXPECT_EQ(crowd.stats().refusedSessions, 1u);
}

TEST(MotionCrowd, TheReceivePathAllocatesNothingPerRow) {
#if defined(AVATAR_BRIDGE_SANITIZER_TESTS)
    GTEST_SKIP() << "counted in core_tests (the sanitizers keep their own operator new)";
#endif
    MotionCrowd crowd;
    const auto small = bytesOf(payloads::motionBatch(sessionIds(2), std::vector<std::uint64_t>(2, 1)));
    const auto large = bytesOf(payloads::motionBatch(sessionIds(256), std::vector<std::uint64_t>(256, 1)));
    const auto later = bytesOf(payloads::motionBatch(sessionIds(256), std::vector<std::uint64_t>(256, 2)));
    crowd.ingest(decode(large), 1);  // the sessions' slots are made once, when they first appear

    const auto allocationsOf = [](auto&& body) {
        gAllocations = 0;
        gCounting = true;
        body();
        gCounting = false;
        return gAllocations.load();
    };
    // Decoding: a fixed number per message (msgpack's zone, the reader's name), the same for 2 rows or 256.
    const std::size_t decodeSmall = allocationsOf([&] { (void)decode(small); });
    const std::size_t decodeLarge = allocationsOf([&] { (void)decode(later); });
    EXPECT_EQ(decodeSmall, decodeLarge);
    // Ingesting 256 known sessions' rows: none.
    const MotionBatch batch = decode(later);
    EXPECT_EQ(allocationsOf([&] { crowd.ingest(batch, 2); }), 0u);
    EXPECT_EQ(crowd.stats().rows, 512u);
    // Reading into a vector that already has the room: none.
    std::vector<MotionCrowd::Row> rows;
    crowd.snapshot(rows);
    EXPECT_EQ(allocationsOf([&] { crowd.snapshot(rows); }), 0u);
}
