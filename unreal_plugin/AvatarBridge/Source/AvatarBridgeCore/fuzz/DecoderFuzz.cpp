// libFuzzer target: every byte string the bridge's PUB or ROUTER could send must decode or be refused with a
// ProtocolError, never crash, hang or read out of bounds (run under ASan/UBSan by scripts/test_cpp.sh). What
// decodes is read back whole, so a view that claims more bytes than the message holds is caught too.
// The first byte picks the decoder, so one corpus covers frames, replies, events, motion batches and the ZMTP
// framing.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/Zmtp.hpp"

namespace {

// Reads every float of a view; the volatile sink keeps the reads from being optimised away.
volatile float gSink = 0.0f;

void touch(const avatar_bridge::F32View& v) {
    for (std::size_t i = 0; i < v.size(); ++i) {
        gSink = gSink + v[i];
    }
}

void frame(const std::shared_ptr<std::vector<std::uint8_t>>& storage) {
    const auto decoded = avatar_bridge::Decoder::frame(storage->data(), storage->size(), storage);
    if (!decoded) {
        return;
    }
    if (const auto* f = std::get_if<avatar_bridge::FaceFrame>(&decoded->frame)) {
        for (const auto* v : {&f->expression, &f->eyelids, &f->jaw, &f->head, &f->blendshapes, &f->gaze, &f->visemes,
                              &f->vowels, &f->body}) {
            touch(*v);
        }
    } else if (const auto* m = std::get_if<avatar_bridge::MotionFrame>(&decoded->frame)) {
        touch(m->joints);
        touch(m->root);
    }
}

void batch(const std::shared_ptr<std::vector<std::uint8_t>>& storage) {
    const auto decoded = avatar_bridge::Decoder::motionBatch(storage->data(), storage->size(), storage);
    if (!decoded) {
        return;
    }
    for (std::size_t r = 0; r < decoded->rows; ++r) {
        gSink = gSink + static_cast<float>(decoded->seq(r) + decoded->inputSeq(r) + decoded->session(r).size()) +
                static_cast<float>(decoded->tCaptureNs(r));
    }
    touch(decoded->jointColumn);
    touch(decoded->rootColumn);
}

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
    switch (which) {
        case 0: frame(storage); break;
        case 1: (void)avatar_bridge::Decoder::reply(storage->data(), storage->size()); break;
        case 2: (void)avatar_bridge::Decoder::event(storage->data(), storage->size()); break;
        case 3: zmtp(storage->data(), storage->size()); break;
        default: batch(storage); break;
    }
    return 0;
}
