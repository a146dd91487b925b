#include "MsgPackReader.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace avatar_bridge {
namespace {

std::uint64_t bigEndian(const std::uint8_t* p, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
        v = (v << 8) | p[i];
    }
    return v;
}

}  // namespace

bool MsgPackReader::parse(const std::uint8_t* data, std::size_t size, std::string& error) {
    nodes_.clear();
    nodes_.reserve(std::min<std::size_t>(size, 64));  // the bridge's frames: ~40 values, one allocation
    at_ = data;
    end_ = data + size;
    if (size == 0) {
        error = "empty message";
        return false;
    }
    if (!value(0, error)) {
        return false;
    }
    if (at_ != end_) {
        error = "trailing bytes after the msgpack value";
        return false;
    }
    return true;
}

bool MsgPackReader::value(int depth, std::string& error) {
    if (depth > kMaxDepth) {
        error = "msgpack nested too deep";
        return false;
    }
    if (nodes_.size() >= kMaxNodes) {
        error = "msgpack message has too many values";
        return false;
    }
    const auto left = [this] { return static_cast<std::size_t>(end_ - at_); };
    // Reads a big-endian unsigned field of `bytes` bytes, or fails when the buffer ends first.
    const auto field = [&](int bytes, std::uint64_t& out) {
        if (left() < static_cast<std::size_t>(bytes)) {
            error = "msgpack message ends inside a value";
            return false;
        }
        out = bigEndian(at_, bytes);
        at_ += bytes;
        return true;
    };
    const std::uint32_t index = static_cast<std::uint32_t>(nodes_.size());
    nodes_.emplace_back();
    MsgNode n;

    std::uint64_t lead = 0;
    if (!field(1, lead)) {
        return false;
    }
    const std::uint8_t b = static_cast<std::uint8_t>(lead);
    int lengthBytes = 0;       // Str, Bin, Ext, Array, Map: the size of the length field (0: in the lead byte)
    std::uint64_t length = 0;  // or the length itself when in the lead byte
    if (b <= 0x7f) {
        n.type = MsgType::PositiveInt;
        n.u64 = b;
    } else if (b <= 0x8f) {
        n.type = MsgType::Map;
        length = b & 0x0fu;
    } else if (b <= 0x9f) {
        n.type = MsgType::Array;
        length = b & 0x0fu;
    } else if (b <= 0xbf) {
        n.type = MsgType::Str;
        length = b & 0x1fu;
    } else if (b >= 0xe0) {
        n.type = MsgType::NegativeInt;
        n.i64 = static_cast<std::int8_t>(b);
    } else {
        std::uint64_t v = 0;
        switch (b) {
            case 0xc0: n.type = MsgType::Nil; break;
            case 0xc2:
            case 0xc3:
                n.type = MsgType::Boolean;
                n.boolean = b == 0xc3;
                break;
            case 0xc4: case 0xc5: case 0xc6:
                n.type = MsgType::Bin;
                lengthBytes = 1 << (b - 0xc4);
                break;
            case 0xc7: case 0xc8: case 0xc9:
                n.type = MsgType::Ext;
                lengthBytes = 1 << (b - 0xc7);
                break;
            case 0xca: {
                if (!field(4, v)) {
                    return false;
                }
                const std::uint32_t bits = static_cast<std::uint32_t>(v);
                float f;
                std::memcpy(&f, &bits, sizeof f);
                n.type = MsgType::Float;
                n.f64 = f;
                break;
            }
            case 0xcb: {
                if (!field(8, v)) {
                    return false;
                }
                double d;
                std::memcpy(&d, &v, sizeof d);
                n.type = MsgType::Float;
                n.f64 = d;
                break;
            }
            case 0xcc: case 0xcd: case 0xce: case 0xcf:
                if (!field(1 << (b - 0xcc), v)) {
                    return false;
                }
                n.type = MsgType::PositiveInt;
                n.u64 = v;
                break;
            case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
                const int bytes = 1 << (b - 0xd0);
                if (!field(bytes, v)) {
                    return false;
                }
                // Sign-extend from `bytes` bytes; msgpack-c and the bridge also send non-negative values this way.
                const int shift = 64 - 8 * bytes;
                const std::int64_t s = static_cast<std::int64_t>(v << shift) >> shift;
                if (s >= 0) {
                    n.type = MsgType::PositiveInt;
                    n.u64 = static_cast<std::uint64_t>(s);
                } else {
                    n.type = MsgType::NegativeInt;
                    n.i64 = s;
                }
                break;
            }
            case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
                n.type = MsgType::Ext;
                length = std::uint64_t{1} << (b - 0xd4);
                length += 1;  // the type byte before the data
                break;
            case 0xd9: case 0xda: case 0xdb:
                n.type = MsgType::Str;
                lengthBytes = 1 << (b - 0xd9);
                break;
            case 0xdc: case 0xdd:
                n.type = MsgType::Array;
                lengthBytes = 2 << (b - 0xdc);
                break;
            case 0xde: case 0xdf:
                n.type = MsgType::Map;
                lengthBytes = 2 << (b - 0xde);
                break;
            default:  // 0xc1: never used
                error = "0xc1 is not a msgpack type";
                return false;
        }
    }
    if (lengthBytes != 0 && !field(lengthBytes, length)) {
        return false;
    }
    if (n.type == MsgType::Ext && lengthBytes != 0) {
        length += 1;  // ext 8/16/32: the type byte follows the length
    }

    switch (n.type) {
        case MsgType::Str:
        case MsgType::Bin:
        case MsgType::Ext:
            if (length > left() || length > UINT32_MAX) {
                error = "msgpack length runs past the end of the message";
                return false;
            }
            n.bytes = at_;
            n.size = static_cast<std::uint32_t>(length);
            if (n.type == MsgType::Ext) {  // the payload, after its type byte
                ++n.bytes;
                --n.size;
            }
            at_ += length;
            break;
        case MsgType::Array:
        case MsgType::Map: {
            // Every element takes a byte at least: a count the rest of the buffer cannot hold is a lie, refused
            // before anything is read for it.
            const std::uint64_t elements = n.type == MsgType::Map ? 2 * length : length;
            if (elements > left()) {
                error = "msgpack count runs past the end of the message";
                return false;
            }
            n.size = static_cast<std::uint32_t>(length);
            for (std::uint64_t i = 0; i < elements; ++i) {
                if (!value(depth + 1, error)) {
                    return false;
                }
            }
            break;
        }
        default: break;
    }
    n.end = static_cast<std::uint32_t>(nodes_.size());
    nodes_[index] = n;
    return true;
}

}  // namespace avatar_bridge
