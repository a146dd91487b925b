#include "avatar_bridge/Decoder.hpp"

#include <string>
#include <utility>

#include "MapReader.hpp"
#include "MsgPackReader.hpp"

namespace avatar_bridge {
namespace {

// One message being decoded: its parsed tree and the status its readers share.
struct Message {
    MsgPackReader tree;
    DecodeStatus status;

    // Parses [data, data + size), which must be exactly one msgpack map, and reads it as `what`.
    MapReader root(const std::uint8_t* data, std::size_t size, const char* what) {
        std::string error;
        if (!tree.parse(data, size, error)) {
            status.fail(ErrorCode::Malformed, "not a msgpack message: " + error);
        } else if (tree.node(MsgPackReader::kRoot).type != MsgType::Map) {
            status.fail(ErrorCode::Malformed, "message must be a msgpack map");
        }
        // A failed parse leaves no tree to read: an empty reader then answers every read with a default.
        return MapReader(tree, status.failed() ? MapReader::kNone : MsgPackReader::kRoot, what, status);
    }

    template <class T>
    Result<T> result(T&& value) const {
        if (status.failed()) {
            return status.error();
        }
        return std::forward<T>(value);
    }
};

void checkVersion(const MapReader& m, const char* what) {
    if (m.uint("v") != static_cast<std::uint64_t>(Decoder::kProtocolVersion)) {
        m.fail(ErrorCode::UnsupportedVersion, std::string(what) + ": protocol version not supported");
    }
}

void requireCount(const MapReader& m, std::size_t actual, std::size_t expected, const char* what) {
    if (actual != expected) {
        m.fail(ErrorCode::BadSize, std::string("rig: '") + what + "' must have " + std::to_string(expected) +
                                       " entries, got " + std::to_string(actual));
    }
}

// The plugins convert from exactly one convention (docs/protocol.md §3); refuse anything else loudly.
void checkCoordinates(const MapReader& rig) {
    const MapReader c = rig.map("coordinates");
    if (c.str("handedness") != "right" || c.str("up") != "+y" || c.str("forward") != "+z" || c.str("units") != "m" ||
        rig.str("quaternion_order") != "xyzw") {
        rig.fail(ErrorCode::BadValue, "rig: coordinates are not right-handed +y up +z forward metres xyzw");
    }
}

// `joints`: 24 for a motion session's SMPL rig, 50 for the humanoid `body` rig of a face session.
BodyRig decodeBodyRig(const MapReader& m, std::size_t joints) {
    BodyRig rig;
    rig.joints = m.strings("joints");
    requireCount(m, rig.joints.size(), joints, "joints");
    const auto parents = m.ints("parents");
    requireCount(m, parents.size(), rig.joints.size(), "parents");
    if (m.failed()) {
        return rig;
    }
    for (std::size_t i = 0; i < parents.size(); ++i) {
        // Parents must precede children: Live Link and forward kinematics both rely on it.
        const bool root = parents[i] == -1 && i == 0;
        if (!root && (parents[i] < 0 || parents[i] >= static_cast<std::int64_t>(i))) {
            m.fail(ErrorCode::BadValue, "rig: joint " + std::to_string(i) + " has invalid parent " +
                                            std::to_string(parents[i]));
            return rig;
        }
        rig.parents.push_back(static_cast<int>(parents[i]));
    }
    const F32View rest = m.floats("rest_offsets", rig.joints.size() * 3);
    if (m.failed()) {  // `rest` is empty then: nothing to index
        return rig;
    }
    for (std::size_t j = 0; j < rig.joints.size(); ++j) {
        rig.restOffsets.push_back({rest[3 * j], rest[3 * j + 1], rest[3 * j + 2]});
    }
    rig.humanoid = m.strings("humanoid");
    requireCount(m, rig.humanoid.size(), rig.joints.size(), "humanoid");
    return rig;
}

FaceRig decodeFaceRig(const MapReader& m) {
    FaceRig rig;
    rig.expression = m.strings("expression");
    rig.eyelids = m.strings("eyelids");
    rig.rotations = m.strings("rotations");
    rig.blendshapes = m.strings("blendshapes");
    rig.unsupported = m.optionalStrings("unsupported");
    rig.extras = m.optionalStrings("extras");
    if (!rig.expression.empty()) {  // [] for the face tracker, which has no FLAME codes (docs/protocol.md §5.1)
        requireCount(m, rig.expression.size(), Decoder::kFlameExpression, "expression");
    }
    requireCount(m, rig.eyelids.size(), Decoder::kFlameEyelids, "eyelids");
    if (!rig.blendshapes.empty()) {
        requireCount(m, rig.blendshapes.size(), Decoder::kArkitBlendshapes, "blendshapes");
    }
    if (m.has("body")) {  // sessions opened with `body: true` (docs/protocol.md §5.1.2)
        const MapReader body = m.map("body");
        checkCoordinates(body);
        if (body.str("kind") != "body") {
            body.fail(ErrorCode::BadValue, "rig: a face rig's 'body' must be a body rig");
        }
        rig.body = decodeBodyRig(body, Decoder::kHumanoidJoints);
    }
    return rig;
}

Rig decodeRig(const MapReader& m) {
    checkCoordinates(m);
    const std::string kind = m.str("kind");
    if (kind == "face") {
        return decodeFaceRig(m);
    }
    if (kind == "body") {
        return decodeBodyRig(m, Decoder::kSmplJoints);
    }
    m.fail(ErrorCode::BadValue, "rig: unknown kind '" + kind + "'");
    return {};
}

FrameHeader decodeHeader(const MapReader& m) {
    FrameHeader h;
    h.session = m.str("session");
    h.seq = m.uint("seq");
    h.inputSeq = m.uint("input_seq");
    h.tCaptureNs = m.int64("t_capture_ns");
    h.tPublishNs = m.int64("t_publish_ns");
    h.engineUs = m.number("engine_us");
    h.batch = m.int64("batch");
    return h;
}

std::uint64_t requestId(const MapReader& m) { return m.has("id") ? m.uint("id") : 0; }

HelloReply decodeHello(const MapReader& m) {
    HelloReply r;
    r.id = requestId(m);
    r.server = m.str("server");
    const std::uint64_t port = m.uint("frames_port");
    r.maxMessageBytes = m.uint("max_message_bytes");
    r.pipelines = m.strings("pipelines");
    r.idleTimeoutS = m.number("idle_timeout_s");
    if (port == 0 || port > 65535) {
        m.fail(ErrorCode::BadValue, "hello: frames_port out of range");
    }
    r.framesPort = static_cast<int>(port);
    return r;
}

ListReply decodeList(const MapReader& m) {
    ListReply r;
    r.id = requestId(m);
    for (const MapReader& e : m.maps("models")) {
        ModelInfo info;
        info.name = e.str("name");
        info.pipeline = e.str("pipeline");
        info.fps = e.number("fps");
        info.trained = e.boolean("trained");
        info.backend = e.str("backend");
        info.isDefault = e.boolean("default");
        if (e.has("styles")) {
            info.styles = e.strings("styles");
        }
        r.models.push_back(std::move(info));
    }
    return r;
}

OpenReply decodeOpen(const MapReader& m) {
    OpenReply r;
    r.id = requestId(m);
    r.session = m.str("session");
    r.topic = m.str("topic");
    r.pipeline = m.str("pipeline");
    r.model = m.str("model");
    r.fps = m.number("fps");
    r.accepts = m.strings("accepts");
    if (m.has("feature_cols")) {
        r.featureCols = static_cast<int>(m.uint("feature_cols"));
    }
    r.rig = decodeRig(m.map("rig"));
    if (r.topic != "frame/" + r.session) {
        m.fail(ErrorCode::BadValue, "open: topic does not match the session");
    }
    return r;
}

ErrorReply decodeError(const MapReader& m) {
    ErrorReply r;
    r.id = requestId(m);
    r.code = static_cast<int>(m.int64("code"));
    r.name = m.str("name");
    r.message = m.str("message");
    r.session = m.optionalStr("session", "");
    return r;
}

Reply decodeReply(const MapReader& m) {
    checkVersion(m, "reply");
    const std::string op = m.str("op");
    if (op == "error") {
        return decodeError(m);
    }
    if (m.has("ok") && !m.boolean("ok")) {
        m.fail(ErrorCode::BadValue, "reply: '" + op + "' with ok=false is not an error reply");
    }
    if (op == "hello") {
        return decodeHello(m);
    }
    if (op == "list") {
        return decodeList(m);
    }
    if (op == "open") {
        return decodeOpen(m);
    }
    if (op == "close") {
        return CloseReply{requestId(m), m.str("session"), m.uint("frames_published")};
    }
    if (op == "pong") {
        return PongReply{requestId(m), m.int64("t_ns")};
    }
    if (op == "ack") {
        return AckReply{requestId(m), m.str("session"), m.uint("seq")};
    }
    m.fail(ErrorCode::UnknownOp, "reply: unknown op '" + op + "'");
    return ErrorReply{};
}

Event decodeEvent(const MapReader& m) {
    if (m.str("op") != "event") {
        m.fail(ErrorCode::BadValue, "event: op must be 'event'");
    }
    checkVersion(m, "event");
    const std::string kind = m.str("event");
    if (kind == "opened") {
        return OpenedEvent{m.str("session"), m.str("pipeline"), m.str("model"), m.number("fps"), decodeRig(m.map("rig"))};
    }
    if (kind == "closed") {
        return ClosedEvent{m.str("session"), m.str("reason"), m.uint("frames_published")};
    }
    m.fail(ErrorCode::BadValue, "event: unknown event '" + kind + "'");
    return ClosedEvent{};
}

}  // namespace

Result<DecodedFrame> Decoder::frame(const std::uint8_t* data, std::size_t size, std::shared_ptr<const void> storage) {
    Message message;
    const MapReader m = message.root(data, size, "frame");
    if (m.str("op") != "frame") {
        m.fail(ErrorCode::BadValue, "frame: op must be 'frame'");
    }
    checkVersion(m, "frame");
    FrameHeader header = decodeHeader(m);
    const std::string pipeline = m.str("pipeline");
    DecodedFrame out;
    out.storage = std::move(storage);
    if (pipeline == "face") {
        FaceFrame f;
        f.header = std::move(header);
        f.faceFound = m.boolean("face_found");
        f.expression = m.floats("expression", kFlameExpression, true);
        f.eyelids = m.floats("eyelids", kFlameEyelids);
        f.jaw = m.floats("jaw", 4);
        f.head = m.floats("head", 4);
        f.blendshapes = m.floats("blendshapes", kArkitBlendshapes, true);
        f.gaze = m.optionalFloats("gaze", 4);
        f.visemes = m.optionalFloats("visemes", kSpeechVisemes);
        f.vowels = m.optionalFloats("vowels", kSpeechVowels);
        f.voice = m.optionalBoolean("voice");
        f.body = m.optionalFloats("body", kHumanoidJoints * 4);
        f.bodyFound = m.optionalBoolean("body_found");
        const std::vector<bool> hands = m.optionalBooleans("hands_found");
        if (hands.size() == 2) {
            f.leftHandFound = hands[0];
            f.rightHandFound = hands[1];
        } else if (!hands.empty()) {
            m.fail(ErrorCode::BadSize, "frame: 'hands_found' must hold 2 bools (left, right)");
        }
        out.frame = std::move(f);
    } else if (pipeline == "motion") {
        MotionFrame f;
        f.header = std::move(header);
        f.joints = m.floats("joints", kSmplJoints * 4);
        f.root = m.floats("root", 3);
        out.frame = std::move(f);
    } else {
        m.fail(ErrorCode::BadValue, "frame: unknown pipeline '" + pipeline + "'");
    }
    return message.result(std::move(out));
}

Result<MotionBatch> Decoder::motionBatch(const std::uint8_t* data, std::size_t size, std::shared_ptr<const void> storage) {
    Message message;
    const MapReader m = message.root(data, size, "batch");
    if (m.str("op") != "frames") {
        m.fail(ErrorCode::BadValue, "batch: op must be 'frames'");
    }
    checkVersion(m, "batch");
    if (m.uint("minor") < 1) {
        m.fail(ErrorCode::UnsupportedVersion, "batch: batches need protocol minor 1 or later");
    }
    if (m.str("pipeline") != "motion") {
        m.fail(ErrorCode::BadValue, "batch: pipeline must be 'motion'");
    }
    MotionBatch b;
    const std::uint64_t rows = m.uint("rows");
    // Every row takes more than 400 bytes of columns, so a count beyond the message size is a lie; checking it
    // here keeps the products below from overflowing.
    if (rows < 1 || rows > size) {
        m.fail(ErrorCode::BadValue, "batch: rows must be at least 1 and fit the message");
    }
    if (m.failed()) {
        return message.status.error();
    }
    b.rows = static_cast<std::size_t>(rows);
    b.tPublishNs = m.int64("t_publish_ns");
    b.engineUs = m.number("engine_us");
    b.batch = m.int64("batch");
    const auto column = [&](const char* key, std::size_t rowBytes) -> const std::uint8_t* {
        const MapReader::Bytes bytes = m.bin(key);
        if (bytes.size != b.rows * rowBytes) {
            m.fail(ErrorCode::BadSize, std::string("batch: '") + key + "' must hold " + std::to_string(b.rows * rowBytes) +
                                           " bytes, got " + std::to_string(bytes.size));
            return nullptr;
        }
        return bytes.data;
    };
    b.sessionColumn = column("session", MotionBatch::kSessionIdBytes);
    b.seqColumn = column("seq", sizeof(std::uint64_t));
    b.inputSeqColumn = column("input_seq", sizeof(std::uint64_t));
    b.tCaptureColumn = column("t_capture_ns", sizeof(std::int64_t));
    b.jointColumn = F32View(column("joints", MotionBatch::kJointFloats * sizeof(float)), b.rows * MotionBatch::kJointFloats);
    b.rootColumn = F32View(column("root", MotionBatch::kRootFloats * sizeof(float)), b.rows * MotionBatch::kRootFloats);
    b.storage = std::move(storage);
    return message.result(std::move(b));
}

Result<Reply> Decoder::reply(const std::uint8_t* data, std::size_t size) {
    Message message;
    Reply reply = decodeReply(message.root(data, size, "reply"));
    return message.result(std::move(reply));
}

Result<Event> Decoder::event(const std::uint8_t* data, std::size_t size) {
    Message message;
    Event event = decodeEvent(message.root(data, size, "event"));
    return message.result(std::move(event));
}

}  // namespace avatar_bridge
