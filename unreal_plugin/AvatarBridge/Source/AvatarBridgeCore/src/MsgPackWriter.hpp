#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

namespace avatar_bridge {

// Appends msgpack values to a string, each in its shortest encoding (as msgpack-c and the bridge's Python
// encoder write them). Only what requests need: maps, strings, bins, ints, doubles, bools.
class MsgPackWriter {
public:
    void map(std::uint32_t pairs) {
        if (pairs < 16) {
            byte(0x80 | pairs);
        } else if (pairs <= 0xffff) {
            tagged(0xde, pairs, 2);
        } else {
            tagged(0xdf, pairs, 4);
        }
    }

    void str(std::string_view s) {
        const auto n = static_cast<std::uint32_t>(s.size());
        if (n < 32) {
            byte(0xa0 | n);
        } else if (n <= 0xff) {
            tagged(0xd9, n, 1);
        } else if (n <= 0xffff) {
            tagged(0xda, n, 2);
        } else {
            tagged(0xdb, n, 4);
        }
        out_.append(s.data(), s.size());
    }

    void bin(const void* data, std::size_t bytes) {
        const auto n = static_cast<std::uint32_t>(bytes);
        if (n <= 0xff) {
            tagged(0xc4, n, 1);
        } else if (n <= 0xffff) {
            tagged(0xc5, n, 2);
        } else {
            tagged(0xc6, n, 4);
        }
        if (bytes != 0) {
            out_.append(static_cast<const char*>(data), bytes);
        }
    }

    void uint(std::uint64_t v) {
        if (v < 0x80) {
            byte(static_cast<std::uint32_t>(v));
        } else if (v <= 0xff) {
            tagged(0xcc, v, 1);
        } else if (v <= 0xffff) {
            tagged(0xcd, v, 2);
        } else if (v <= 0xffffffffu) {
            tagged(0xce, v, 4);
        } else {
            tagged(0xcf, v, 8);
        }
    }

    void integer(std::int64_t v) {
        if (v >= 0) {
            uint(static_cast<std::uint64_t>(v));
        } else if (v >= -32) {
            byte(static_cast<std::uint32_t>(v) & 0xffu);
        } else if (v >= INT8_MIN) {
            tagged(0xd0, static_cast<std::uint64_t>(v), 1);
        } else if (v >= INT16_MIN) {
            tagged(0xd1, static_cast<std::uint64_t>(v), 2);
        } else if (v >= INT32_MIN) {
            tagged(0xd2, static_cast<std::uint64_t>(v), 4);
        } else {
            tagged(0xd3, static_cast<std::uint64_t>(v), 8);
        }
    }

    void float64(double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        tagged(0xcb, bits, 8);
    }

    void boolean(bool v) { byte(v ? 0xc3 : 0xc2); }

    std::string take() { return std::move(out_); }

private:
    void byte(std::uint32_t b) { out_.push_back(static_cast<char>(b)); }

    // A type byte, then the low `bytes` bytes of `v`, big-endian.
    void tagged(std::uint32_t type, std::uint64_t v, int bytes) {
        byte(type);
        for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) {
            byte(static_cast<std::uint32_t>(v >> shift) & 0xffu);
        }
    }

    std::string out_;
};

}  // namespace avatar_bridge
