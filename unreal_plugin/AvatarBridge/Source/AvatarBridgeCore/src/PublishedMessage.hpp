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
    const bool batch = topic.rfind("batch/", 0) == 0;
    try {
        if (topic.rfind("frame/", 0) == 0) {
            ++counters.frames;
            DecodedFrame frame = Decoder::frame(data, size, std::move(storage));
            if (handlers.onFrame) {
                handlers.onFrame(std::move(frame), arrivalNs);
            }
        } else if (topic.rfind("event/", 0) == 0) {
            const Event event = Decoder::event(data, size);
            if (handlers.onEvent) {
                handlers.onEvent(event);
            }
        } else if (topic == "batch/motion" || topic.rfind("batch/motion/", 0) == 0) {
            // `batch/motion/<group>/`: the rows of a batch group's sessions (protocol 1.1 §5.3), every one of
            // which a `batch/motion` subscriber (a crowd) reads too. Other pipelines' batches: not ours (yet).
            ++counters.batches;
            MotionBatch decoded = Decoder::motionBatch(data, size, std::move(storage));
            if (handlers.onMotionBatch) {
                handlers.onMotionBatch(std::move(decoded), arrivalNs);
            }
        }
    } catch (const std::exception& e) {  // ProtocolError, or out of memory
        std::string what = std::string(topic) + ": " + e.what();
        if (batch && handlers.onMalformedBatch) {
            handlers.onMalformedBatch(what);
        }
        return what;
    }
    return {};
}

}  // namespace avatar_bridge
