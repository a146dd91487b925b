#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "avatar_bridge/SessionSpec.hpp"

namespace avatar_bridge {

// Encodes client requests (docs/protocol.md §4) as single msgpack maps, ready to send as one DEALER frame.
// Inputs are encoded as given, without size checks: the bridge is the judge (and the tests rely on that).
class RequestEncoder {
public:
    static constexpr int kFeatureColumns = 35;  // AIST++ music features per `features` row

    struct InputHeader {
        std::uint64_t id = 0;
        std::string session;
        std::uint64_t seq = 0;
        std::int64_t tCaptureNs = 0;
        bool ack = false;
    };

    static std::string hello(std::uint64_t id, std::string_view client);
    static std::string list(std::uint64_t id);
    static std::string open(std::uint64_t id, const SessionSpec& spec);
    static std::string close(std::uint64_t id, std::string_view session);
    // `session` may be empty; a ping naming a session keeps it from being reaped.
    static std::string ping(std::uint64_t id, std::string_view session);
    static std::string image(const InputHeader& h, int width, int height, const std::uint8_t* rgb, std::size_t bytes);
    // A JPEG image (protocol 1.3): the bytes of one JPEG file; the bridge reads the size from its header.
    static std::string jpegImage(const InputHeader& h, const std::uint8_t* jpeg, std::size_t bytes);
    // `format` is "s16le" or "f32le"; `data` holds mono samples.
    static std::string audio(const InputHeader& h, int rate, std::string_view format, const void* data,
                             std::size_t bytes);
    static std::string features(const InputHeader& h, int rows, int cols, const float* data, std::size_t bytes);
};

}  // namespace avatar_bridge
