#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "avatar_bridge/BridgeClient.hpp"
#include "avatar_bridge/Decoder.hpp"

namespace avatar_bridge {

// One [topic, payload] message from the bridge's PUB socket, decoded by its topic and handed to its handler;
// both BridgeClient builds call this. `storage` owns the payload (frames and batches keep views into it).
// Returns what went wrong (the message was dropped), or an empty string.
struct PublishedCounters {
    std::atomic<std::uint64_t>& frames;
    std::atomic<std::uint64_t>& batches;
};

inline std::string dispatchPublished(std::string_view topic, const std::uint8_t* data, std::size_t size,
                                     std::shared_ptr<const void> storage, std::int64_t arrivalNs,
                                     const BridgeClient::Handlers& handlers, PublishedCounters counters) {
    const auto failed = [topic](const ProtocolError& error) { return std::string(topic) + ": " + error.message; };
    if (topic.rfind("frame/", 0) == 0) {
        ++counters.frames;
        Result<DecodedFrame> frame = Decoder::frame(data, size, std::move(storage));
        if (!frame) {
            return failed(frame.error());
        }
        if (handlers.onFrame) {
            handlers.onFrame(std::move(frame).value(), arrivalNs);
        }
    } else if (topic.rfind("event/", 0) == 0) {
        const Result<Event> event = Decoder::event(data, size);
        if (!event) {
            return failed(event.error());
        }
        if (handlers.onEvent) {
            handlers.onEvent(event.value());
        }
    } else if (topic == "batch/motion" || topic.rfind("batch/motion/", 0) == 0) {
        // `batch/motion/<group>/`: the rows of a batch group's sessions (protocol 1.1 §5.3), every one of
        // which a `batch/motion` subscriber (a crowd) reads too. Other pipelines' batches: not ours (yet).
        ++counters.batches;
        Result<MotionBatch> decoded = Decoder::motionBatch(data, size, std::move(storage));
        if (!decoded) {
            std::string what = failed(decoded.error());
            if (handlers.onMalformedBatch) {
                handlers.onMalformedBatch(what);
            }
            return what;
        }
        if (handlers.onMotionBatch) {
            handlers.onMotionBatch(std::move(decoded).value(), arrivalNs);
        }
    }
    return {};
}

}  // namespace avatar_bridge
