// libFuzzer target: every byte string the bridge's PUB or ROUTER could send must decode or be refused with a
// ProtocolError, never crash, hang or read out of bounds (run under ASan/UBSan by scripts/test_cpp.sh).
// The first byte picks the decoder, so one corpus covers frames, replies, events, motion batches and the ZMTP
// framing.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/ProtocolError.hpp"
#include "avatar_bridge/Zmtp.hpp"

namespace {

// A stream that replays the input as a peer's bytes after a valid PUB greeting and READY.
class ReplayStream final : public avatar_bridge::Stream {
public:
    explicit ReplayStream(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {}
    avatar_bridge::IoStatus read(std::uint8_t* into, std::size_t capacity, int, std::size_t& received) noexcept override {
        received = 0;
        if (at_ == bytes_.size()) {
            return avatar_bridge::IoStatus::Closed;
        }
        received = std::min(capacity, std::min<std::size_t>(bytes_.size() - at_, 7));  // odd chunks: split headers
        std::memcpy(into, bytes_.data() + at_, received);
        at_ += received;
        return avatar_bridge::IoStatus::Ok;
    }
    avatar_bridge::IoStatus writeAll(const std::uint8_t*, std::size_t, int) noexcept override { return avatar_bridge::IoStatus::Ok; }
    void close() noexcept override { at_ = bytes_.size(); }

private:
    std::vector<std::uint8_t> bytes_;
    std::size_t at_ = 0;
};

void zmtp(const std::uint8_t* data, std::size_t size) {
    std::vector<std::uint8_t> bytes(64, 0);
    bytes[0] = 0xff;
    bytes[9] = 0x7f;
    bytes[10] = 3;
    std::memcpy(bytes.data() + 12, "NULL", 4);
    const char ready[] = "\x04\x19\x05READY\x0bSocket-Type\x00\x00\x00\x03PUB";
    bytes.insert(bytes.end(), ready, ready + sizeof ready - 1);
    bytes.insert(bytes.end(), data, data + size);
    std::string error;
    auto c = avatar_bridge::ZmtpConnection::handshake(std::make_unique<ReplayStream>(std::move(bytes)),
                                                      avatar_bridge::ZmtpSocketType::Sub, 100, error, 1 << 16);
    if (!c) {
        __builtin_trap();  // the prefix is a valid handshake: failing it is a bug
    }
    std::vector<avatar_bridge::ZmtpPart> message;
    while (c->receive(message, 0, error) == avatar_bridge::IoStatus::Ok) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::uint8_t which = data[0] % 5;
    ++data;
    --size;
    // A heap copy of exactly `size` bytes, so ASan sees any read past the message.
    auto storage = std::make_shared<std::vector<std::uint8_t>>(data, data + size);
    try {
        switch (which) {
            case 0: (void)avatar_bridge::Decoder::frame(storage->data(), storage->size(), storage); break;
            case 1: (void)avatar_bridge::Decoder::reply(storage->data(), storage->size()); break;
            case 2: (void)avatar_bridge::Decoder::event(storage->data(), storage->size()); break;
            case 3: zmtp(storage->data(), storage->size()); break;
            default: (void)avatar_bridge::Decoder::motionBatch(storage->data(), storage->size(), storage); break;
        }
    } catch (const avatar_bridge::ProtocolError&) {
    }
    return 0;
}
