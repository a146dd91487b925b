// The core's own msgpack reader and writer (src/MsgPackReader.hpp, src/MsgPackWriter.hpp), checked against
// msgpack-cxx: the writer must produce the bytes msgpack-cxx's packer produces, the reader must read every form
// msgpack-cxx writes, and no malformed input may make it read out of bounds or nest without limit.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "MsgPackReader.hpp"
#include "MsgPackWriter.hpp"

using namespace avatar_bridge;

namespace {

template <class Pack>
std::string packed(Pack pack) {
    msgpack::sbuffer b;
    msgpack::packer<msgpack::sbuffer> p(&b);
    pack(p);
    return {b.data(), b.size()};
}

const std::uint8_t* bytesOf(const std::string& s) { return reinterpret_cast<const std::uint8_t*>(s.data()); }

bool parses(const std::string& s, std::string* why = nullptr) {
    MsgPackReader r;
    std::string error;
    const bool ok = r.parse(bytesOf(s), s.size(), error);
    if (why != nullptr) {
        *why = error;
    }
    return ok;
}

}  // namespace

TEST(MsgPackWriter, WritesTheBytesMsgpackCxxWrites) {
    for (const std::uint64_t v : std::vector<std::uint64_t>{0, 127, 128, 255, 256, 65535, 65536, 4294967295u, 4294967296u,
                                                             std::numeric_limits<std::uint64_t>::max()}) {
        MsgPackWriter w;
        w.uint(v);
        EXPECT_EQ(w.take(), packed([&](auto& p) { p.pack_uint64(v); })) << v;
    }
    for (const std::int64_t v : std::vector<std::int64_t>{-1, -32, -33, -128, -129, -32768, -32769, -2147483648LL,
                                                            -2147483649LL, std::numeric_limits<std::int64_t>::min(), 0, 48000}) {
        MsgPackWriter w;
        w.integer(v);
        EXPECT_EQ(w.take(), packed([&](auto& p) { p.pack_int64(v); })) << v;
    }
    for (const std::size_t n : {0u, 31u, 32u, 255u, 256u, 65535u, 65536u}) {
        const std::string s(n, 'x');
        MsgPackWriter w;
        w.str(s);
        w.bin(s.data(), s.size());
        EXPECT_EQ(w.take(), packed([&](auto& p) {
                      p.pack_str(static_cast<std::uint32_t>(n));
                      p.pack_str_body(s.data(), static_cast<std::uint32_t>(n));
                      p.pack_bin(static_cast<std::uint32_t>(n));
                      p.pack_bin_body(s.data(), static_cast<std::uint32_t>(n));
                  }))
            << n;
    }
    for (const std::uint32_t n : {0u, 15u, 16u, 65535u, 65536u}) {
        MsgPackWriter w;
        w.map(n);
        EXPECT_EQ(w.take(), packed([&](auto& p) { p.pack_map(n); })) << n;
    }
    MsgPackWriter w;
    w.float64(-0.125);
    w.boolean(true);
    w.boolean(false);
    EXPECT_EQ(w.take(), packed([](auto& p) {
                  p.pack_double(-0.125);
                  p.pack_true();
                  p.pack_false();
              }));
}

TEST(MsgPackReader, ReadsEveryFormMsgpackCxxWrites) {
    const std::string big(70000, 'b');
    const std::string bytes = packed([&](auto& p) {
        p.pack_array(15);
        p.pack_nil();
        p.pack_true();
        p.pack_uint64(std::numeric_limits<std::uint64_t>::max());
        p.pack_int64(std::numeric_limits<std::int64_t>::min());
        p.pack_fix_int8(5);  // 0xd0 with a non-negative value: an int like any other
        p.pack_float(1.5f);
        p.pack_double(-2.25);
        p.pack_str(300);
        p.pack_str_body(big.data(), 300);
        p.pack_bin(static_cast<std::uint32_t>(big.size()));
        p.pack_bin_body(big.data(), static_cast<std::uint32_t>(big.size()));
        p.pack_ext(3, 7);
        p.pack_ext_body("abc", 3);
        p.pack_ext(4, 9);  // fixext 4
        p.pack_ext_body("wxyz", 4);
        p.pack_map(2);
        p.pack_str(1);
        p.pack_str_body("k", 1);
        p.pack_array(1);
        p.pack_int(-7);
        p.pack_str(2);
        p.pack_str_body("k2", 2);
        p.pack_uint32(70000);
        p.pack_array(0);
        p.pack_int16(-300);
        p.pack_uint16(300);
    });
    MsgPackReader r;
    std::string error;
    ASSERT_TRUE(r.parse(bytesOf(bytes), bytes.size(), error)) << error;
    const MsgNode& root = r.node(MsgPackReader::kRoot);
    ASSERT_EQ(root.type, MsgType::Array);
    ASSERT_EQ(root.size, 15u);
    std::vector<std::uint32_t> at;
    for (std::uint32_t i = 0, e = 1; i < root.size; ++i, e = r.node(e).end) {
        at.push_back(e);
    }
    EXPECT_EQ(root.end, at.back() + 1);
    EXPECT_EQ(r.node(at[0]).type, MsgType::Nil);
    EXPECT_TRUE(r.node(at[1]).boolean);
    EXPECT_EQ(r.node(at[2]).u64, std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(r.node(at[3]).i64, std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(r.node(at[4]).type, MsgType::PositiveInt);
    EXPECT_EQ(r.node(at[4]).u64, 5u);
    EXPECT_EQ(r.node(at[5]).f64, 1.5);
    EXPECT_EQ(r.node(at[6]).f64, -2.25);
    EXPECT_EQ(r.node(at[7]).str(), big.substr(0, 300));
    EXPECT_EQ(r.node(at[8]).type, MsgType::Bin);
    EXPECT_EQ(r.node(at[8]).size, big.size());
    EXPECT_GE(r.node(at[8]).bytes, bytesOf(bytes));  // in place, not copied
    EXPECT_LE(r.node(at[8]).bytes + r.node(at[8]).size, bytesOf(bytes) + bytes.size());
    EXPECT_EQ(r.node(at[9]).type, MsgType::Ext);
    EXPECT_EQ(r.node(at[9]).str(), "abc");
    EXPECT_EQ(r.node(at[10]).str(), "wxyz");
    const MsgNode& map = r.node(at[11]);
    ASSERT_EQ(map.type, MsgType::Map);
    EXPECT_EQ(map.size, 2u);
    EXPECT_EQ(r.node(at[11] + 1).str(), "k");
    EXPECT_EQ(r.node(at[11] + 3).i64, -7);  // key, array, its element
    EXPECT_EQ(r.node(at[12]).type, MsgType::Array);
    EXPECT_EQ(r.node(at[13]).i64, -300);
    EXPECT_EQ(r.node(at[14]).u64, 300u);
}

TEST(MsgPackReader, EveryTruncationIsRefused) {
    const std::string whole = packed([](auto& p) {
        p.pack_map(3);
        p.pack_str(1);
        p.pack_str_body("a", 1);
        p.pack_bin(8);
        p.pack_bin_body("01234567", 8);
        p.pack_str(1);
        p.pack_str_body("b", 1);
        p.pack_array(2);
        p.pack_double(1.0);
        p.pack_uint64(1ull << 40);
        p.pack_str(1);
        p.pack_str_body("c", 1);
        p.pack_float(2.0f);
    });
    ASSERT_TRUE(parses(whole));
    for (std::size_t n = 0; n < whole.size(); ++n) {
        // A heap copy of exactly n bytes: ASan (sanitizer_tests) sees any read past it.
        const std::vector<std::uint8_t> cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
        MsgPackReader r;
        std::string error;
        EXPECT_FALSE(r.parse(cut.data(), cut.size(), error)) << n;
    }
    std::string why;
    EXPECT_FALSE(parses(whole + '\x01', &why));
    EXPECT_NE(why.find("trailing"), std::string::npos);
}

TEST(MsgPackReader, LyingLengthsAndCountsAreRefusedBeforeUse) {
    std::string why;
    EXPECT_FALSE(parses(std::string("\xdb\xff\xff\xff\xff", 5), &why));         // str32 of 4 GiB
    EXPECT_FALSE(parses(std::string("\xc6\x00\x00\x00\x09" "12345678", 13), &why));  // bin32 one byte short
    EXPECT_FALSE(parses(std::string("\xdd\x80\x00\x00\x00", 5), &why));         // array32 of 2^31
    EXPECT_NE(why.find("count"), std::string::npos);
    EXPECT_FALSE(parses(std::string("\xdf\x00\x00\x00\x02\x01\x02\x03", 8), &why));  // map of 2 pairs, 3 values
    EXPECT_FALSE(parses(std::string("\xc9\xff\xff\xff\xff\x01", 6), &why));     // ext32
    EXPECT_FALSE(parses(std::string("\xc1", 1), &why));                          // never used
    EXPECT_FALSE(parses(std::string(), &why));
}

TEST(MsgPackReader, NestingAndSizeAreCapped) {
    const auto nested = [](int depth) { return std::string(static_cast<std::size_t>(depth), '\x91') + '\x01'; };
    EXPECT_TRUE(parses(nested(MsgPackReader::kMaxDepth)));
    std::string why;
    EXPECT_FALSE(parses(nested(MsgPackReader::kMaxDepth + 1), &why));
    EXPECT_NE(why.find("deep"), std::string::npos);
    // An array of more values than the node cap: refused, however well-formed.
    const std::size_t n = MsgPackReader::kMaxNodes;
    std::string many("\xdd", 1);
    for (int shift = 24; shift >= 0; shift -= 8) {
        many.push_back(static_cast<char>((n >> shift) & 0xff));
    }
    many.append(n, '\x00');
    EXPECT_FALSE(parses(many, &why));
    EXPECT_NE(why.find("too many"), std::string::npos);
}
