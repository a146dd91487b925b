#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "avatar_bridge/Rig.hpp"

namespace avatar_bridge {

// Replies on the request socket (docs/protocol.md §4, §6) and events on `event/<session>` (§7), as plain
// records. Unknown keys are ignored on decode, as the protocol requires.

struct ErrorReply {
    std::uint64_t id = 0;
    int code = 0;
    std::string name;
    std::string message;
    std::string session;  // empty when the bridge did not know it
};

struct HelloReply {
    std::uint64_t id = 0;
    std::string server;
    int framesPort = 0;
    std::uint64_t maxMessageBytes = 0;
    std::vector<std::string> pipelines;
    double idleTimeoutS = 0.0;
};

struct ModelInfo {
    std::string name;
    std::string pipeline;
    double fps = 0.0;
    bool trained = false;
    std::string backend;
    bool isDefault = false;
    std::vector<std::string> styles;
};

struct ListReply {
    std::uint64_t id = 0;
    std::vector<ModelInfo> models;
};

struct OpenReply {
    std::uint64_t id = 0;
    std::string session;
    std::string topic;
    std::string pipeline;
    std::string model;
    double fps = 0.0;
    std::vector<std::string> accepts;
    int featureCols = 0;  // motion only
    Rig rig;
};

struct CloseReply {
    std::uint64_t id = 0;
    std::string session;
    std::uint64_t framesPublished = 0;
};

struct PongReply {
    std::uint64_t id = 0;
    std::int64_t tNs = 0;
};

struct AckReply {
    std::uint64_t id = 0;
    std::string session;
    std::uint64_t seq = 0;
};

using Reply = std::variant<ErrorReply, HelloReply, ListReply, OpenReply, CloseReply, PongReply, AckReply>;

struct OpenedEvent {
    std::string session;
    std::string pipeline;
    std::string model;
    double fps = 0.0;
    Rig rig;
};

struct ClosedEvent {
    std::string session;
    std::string reason;  // "client", "idle_timeout" or "shutdown"
    std::uint64_t framesPublished = 0;
};

using Event = std::variant<OpenedEvent, ClosedEvent>;

// The `id` every reply echoes, whatever its type.
inline std::uint64_t replyId(const Reply& reply) {
    return std::visit([](const auto& r) { return r.id; }, reply);
}

}  // namespace avatar_bridge
