#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace avatar_bridge {

// Zero-copy view of a msgpack `bin` holding packed little-endian float32 values (docs/protocol.md §2).
// The bytes sit at arbitrary offsets inside the message, so elements are read with memcpy, which is
// alignment-safe and compiles to a plain load. All supported targets (x86-64, arm64) are little-endian.
class F32View {
public:
    F32View() = default;
    F32View(const std::uint8_t* bytes, std::size_t count) : bytes_(bytes), count_(count) {}

    std::size_t size() const { return count_; }
    const std::uint8_t* bytes() const { return bytes_; }
    bool empty() const { return count_ == 0; }

    float operator[](std::size_t i) const {
        float v;
        std::memcpy(&v, bytes_ + i * sizeof(float), sizeof(float));
        return v;
    }

    void copyTo(float* out) const {
        if (count_ != 0) {  // an empty view has no bytes: memcpy from null is undefined even for 0 bytes
            std::memcpy(out, bytes_, count_ * sizeof(float));
        }
    }

    std::vector<float> toVector() const {
        std::vector<float> out(count_);
        copyTo(out.data());
        return out;
    }

private:
    const std::uint8_t* bytes_ = nullptr;
    std::size_t count_ = 0;
};

}  // namespace avatar_bridge
