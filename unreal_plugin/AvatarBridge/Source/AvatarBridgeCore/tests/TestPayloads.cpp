#include "TestPayloads.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <msgpack.hpp>

#include "avatar_bridge/ArkitNames.hpp"

namespace {

template <typename F>
std::string pack(F&& body) {
    msgpack::sbuffer b;
    msgpack::packer<msgpack::sbuffer> p(&b);
    body(p);
    return {b.data(), b.size()};
}

}  // namespace

Payload& Payload::put(const std::string& key, std::string packed) {
    erase(key);
    entries_.emplace_back(key, std::move(packed));
    return *this;
}

Payload& Payload::erase(const std::string& key) {
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == key; }),
                   entries_.end());
    return *this;
}

Payload& Payload::str(const std::string& key, const std::string& value) {
    return put(key, pack([&](auto& p) { p.pack(value); }));
}
Payload& Payload::uint(const std::string& key, std::uint64_t value) {
    return put(key, pack([&](auto& p) { p.pack_uint64(value); }));
}
Payload& Payload::sint(const std::string& key, std::int64_t value) {
    return put(key, pack([&](auto& p) { p.pack_int64(value); }));
}
Payload& Payload::f64(const std::string& key, double value) {
    return put(key, pack([&](auto& p) { p.pack_double(value); }));
}
Payload& Payload::boolean(const std::string& key, bool value) {
    return put(key, pack([&](auto& p) { p.pack(value); }));
}
Payload& Payload::nil(const std::string& key) {
    return put(key, pack([&](auto& p) { p.pack_nil(); }));
}
Payload& Payload::bin(const std::string& key, const std::string& bytes) {
    return put(key, pack([&](auto& p) {
                   p.pack_bin(static_cast<std::uint32_t>(bytes.size()));
                   p.pack_bin_body(bytes.data(), static_cast<std::uint32_t>(bytes.size()));
               }));
}
Payload& Payload::floats(const std::string& key, const std::vector<float>& values) {
    std::string bytes(values.size() * sizeof(float), '\0');
    if (!values.empty()) {  // memcpy from an empty vector's data() (maybe null) is undefined even for 0 bytes
        std::memcpy(bytes.data(), values.data(), bytes.size());  // the test host is little-endian, like the wire
    }
    return bin(key, bytes);
}
Payload& Payload::strs(const std::string& key, const std::vector<std::string>& values) {
    return put(key, pack([&](auto& p) { p.pack(values); }));
}
Payload& Payload::ints(const std::string& key, const std::vector<int>& values) {
    return put(key, pack([&](auto& p) { p.pack(values); }));
}
Payload& Payload::bools(const std::string& key, const std::vector<bool>& values) {
    return put(key, pack([&](auto& p) {
                   p.pack_array(static_cast<std::uint32_t>(values.size()));
                   for (const bool v : values) {
                       p.pack(v);
                   }
               }));
}
Payload& Payload::map(const std::string& key, const Payload& value) { return put(key, value.bytes()); }
Payload& Payload::maps(const std::string& key, const std::vector<Payload>& values) {
    std::string packed = pack([&](auto& p) { p.pack_array(static_cast<std::uint32_t>(values.size())); });
    for (const auto& v : values) {
        packed += v.bytes();
    }
    return put(key, packed);
}

std::string Payload::bytes() const {
    std::string out = pack([&](auto& p) { p.pack_map(static_cast<std::uint32_t>(entries_.size())); });
    for (const auto& entry : entries_) {  // not a structured binding: clang < 16 cannot capture one in a lambda
        out += pack([&](auto& p) { p.pack(entry.first); });
        out += entry.second;
    }
    return out;
}

namespace payloads {
namespace {

std::vector<float> ramp(std::size_t n, float pattern) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<float>(i) * 0.01f + pattern;
    }
    return v;
}

Payload coordinates() {
    return Payload().str("handedness", "right").str("up", "+y").str("forward", "+z").str("units", "m");
}

Payload frameHeader(const std::string& pipeline, std::uint64_t seq) {
    return Payload()
        .str("op", "frame")
        .uint("v", 1)
        .str("session", "0123456789abcdef")
        .str("pipeline", pipeline)
        .uint("seq", seq)
        .uint("input_seq", seq)
        .uint("t_capture_ns", 1'700'000'000'000'000'000ULL + seq * 16'666'667ULL)
        .uint("t_publish_ns", 1'700'000'000'010'000'000ULL + seq * 16'666'667ULL)
        .f64("engine_us", 812.5)
        .uint("batch", 1);
}

}  // namespace

std::vector<std::string> expressionNames() {
    std::vector<std::string> names;
    for (int i = 0; i < 50; ++i) {
        names.push_back((i < 10 ? "Exp0" : "Exp") + std::to_string(i));
    }
    return names;
}

std::vector<std::string> smplJoints() {
    return {"pelvis",     "left_hip",      "right_hip",      "spine1",     "left_knee",   "right_knee",
            "spine2",     "left_ankle",    "right_ankle",    "spine3",     "left_foot",   "right_foot",
            "neck",       "left_collar",   "right_collar",   "head",       "left_shoulder", "right_shoulder",
            "left_elbow", "right_elbow",   "left_wrist",     "right_wrist", "left_hand",  "right_hand"};
}

std::vector<int> smplParents() { return {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21}; }

std::vector<std::string> arkitNames() {
    return {avatar_bridge::kArkitNames.begin(), avatar_bridge::kArkitNames.end()};
}

Payload faceRig(bool blendshapes) {
    return Payload()
        .str("kind", "face")
        .map("coordinates", coordinates())
        .str("quaternion_order", "xyzw")
        .strs("expression", expressionNames())
        .strs("eyelids", {"EyelidLeft", "EyelidRight"})
        .strs("rotations", {"head", "jaw"})
        .strs("blendshapes", blendshapes ? arkitNames() : std::vector<std::string>{});
}

Payload bodyRig() {
    std::vector<float> rest(24 * 3, 0.0f);
    rest[1] = -0.223f;  // pelvis rest position y (SMPL's value)
    for (std::size_t j = 1; j < 24; ++j) {
        rest[3 * j + 1] = 0.1f;  // every other joint 10 cm above its parent
    }
    std::vector<std::string> humanoid(24, "");
    humanoid[0] = "Hips";
    return Payload()
        .str("kind", "body")
        .map("coordinates", coordinates())
        .str("quaternion_order", "xyzw")
        .strs("joints", smplJoints())
        .ints("parents", smplParents())
        .floats("rest_offsets", rest)
        .strs("humanoid", humanoid);
}

Payload faceFrame(std::uint64_t seq, bool blendshapes, float pattern) {
    return frameHeader("face", seq)
        .boolean("face_found", true)
        .floats("expression", ramp(50, pattern))
        .floats("eyelids", {0.25f, 0.75f})
        .floats("jaw", {0.0f, 0.0f, 0.0f, 1.0f})
        .floats("head", {0.0f, 0.0f, 0.0f, 1.0f})
        .floats("blendshapes", blendshapes ? ramp(52, pattern) : std::vector<float>{});
}

Payload motionFrame(std::uint64_t seq, float pattern) {
    std::vector<float> joints(24 * 4, 0.0f);
    for (std::size_t j = 0; j < 24; ++j) {
        joints[4 * j + 3] = 1.0f;
    }
    return frameHeader("motion", seq).floats("joints", joints).floats("root", {pattern, 0.9f, 0.0f});
}

Payload speechRig() {
    return faceRig(true)
        .strs("expression", {})
        .strs("unsupported", {"EyeBlinkLeft", "BrowInnerUp"})
        .strs("extras", {"visemes", "vowels", "voice"});
}

Payload speechFrame(std::uint64_t seq, bool voice, float pattern) {
    std::vector<float> vowels(5);
    for (std::size_t i = 0; i < vowels.size(); ++i) {
        vowels[i] = 0.1f * static_cast<float>(i + 1) + pattern;
    }
    return faceFrame(seq, true, pattern)
        .floats("expression", {})
        .floats("visemes", ramp(15, pattern))
        .floats("vowels", vowels)
        .boolean("voice", voice);
}

std::vector<std::string> humanoidJoints() {
    std::vector<std::string> j = {"Hips", "Spine", "Chest", "UpperChest", "Neck", "Head"};
    for (const std::string side : {"Left", "Right"}) {
        for (const char* bone : {"Shoulder", "UpperArm", "LowerArm", "Hand"}) {
            j.push_back(side + bone);
        }
    }
    for (const std::string side : {"Left", "Right"}) {
        for (const char* bone : {"UpperLeg", "LowerLeg", "Foot"}) {
            j.push_back(side + bone);
        }
    }
    for (const std::string side : {"Left", "Right"}) {
        for (const std::string finger : {"Thumb", "Index", "Middle", "Ring", "Little"}) {
            for (const char* phalanx : {"Proximal", "Intermediate", "Distal"}) {
                j.push_back(side + finger + phalanx);
            }
        }
    }
    return j;
}

std::vector<int> humanoidParents() {
    std::vector<int> p = {-1, 0, 1, 2, 3, 4, 3, 6, 7, 8, 3, 10, 11, 12, 0, 14, 15, 0, 17, 18};
    for (const int hand : {9, 13}) {
        for (int finger = 0; finger < 5; ++finger) {
            const int first = static_cast<int>(p.size());
            p.insert(p.end(), {hand, first, first + 1});
        }
    }
    return p;
}

Payload humanoidRig() {
    const std::vector<std::string> joints = humanoidJoints();
    std::vector<float> rest(joints.size() * 3, 0.0f);
    rest[1] = 0.95f;
    for (std::size_t j = 1; j < joints.size(); ++j) {
        const std::string& name = joints[j];
        const bool leg = name.find("Leg") != std::string::npos || name.find("Foot") != std::string::npos;
        if (name.rfind("Left", 0) == 0 && !leg) {
            rest[3 * j] = 0.1f;
        } else if (name.rfind("Right", 0) == 0 && !leg) {
            rest[3 * j] = -0.1f;
        } else {
            rest[3 * j + 1] = leg ? -0.1f : 0.1f;
        }
    }
    return Payload()
        .str("kind", "body")
        .map("coordinates", coordinates())
        .str("quaternion_order", "xyzw")
        .strs("joints", joints)
        .ints("parents", humanoidParents())
        .floats("rest_offsets", rest)
        .strs("humanoid", joints);
}

Payload openFaceBody(std::uint64_t id, const std::string& session) {
    return openFace(id, session)
        .str("model", "mediapipe_face")
        .map("rig", faceRig(true)
                        .strs("expression", {})
                        .strs("unsupported", {"TongueOut"})
                        .strs("extras", {"head_position", "gaze", "body"})
                        .map("body", humanoidRig()));
}

Payload faceBodyFrame(std::uint64_t seq, int turned, float angle) {
    std::vector<float> body(50 * 4, 0.0f);
    for (std::size_t j = 0; j < 50; ++j) {
        body[4 * j + 3] = 1.0f;
    }
    if (turned >= 0) {
        body[4 * turned + 2] = std::sin(angle / 2.0f);
        body[4 * turned + 3] = std::cos(angle / 2.0f);
    }
    return faceFrame(seq, true)
        .floats("expression", {})
        .floats("gaze", {0.0f, 0.0f, 0.0f, 0.0f})
        .floats("head_position", {0.0f, 0.0f, -0.5f})
        .floats("body", body)
        .boolean("body_found", true)
        .bools("hands_found", {true, false});
}

Payload motionBatch(const std::vector<std::string>& sessions, const std::vector<std::uint64_t>& seqs, float pattern) {
    const std::size_t n = sessions.size();
    std::string ids, seq, inputSeq, capture;
    std::vector<float> joints(n * 24 * 4, 0.0f), root(n * 3);
    const auto le64 = [](std::string& out, std::uint64_t v) {
        for (int b = 0; b < 8; ++b) {
            out.push_back(static_cast<char>((v >> (8 * b)) & 0xff));  // little-endian on any host
        }
    };
    for (std::size_t r = 0; r < n; ++r) {
        ids += sessions[r];
        le64(seq, seqs[r]);
        le64(inputSeq, seqs[r] + 100);
        le64(capture, 1'700'000'000'000'000'000ULL + seqs[r] * 16'666'667ULL);
        for (std::size_t j = 0; j < 24; ++j) {
            joints[(r * 24 + j) * 4 + 3] = 1.0f;
        }
        joints[(r * 24 + 1) * 4] = 0.01f * static_cast<float>(r) + pattern;
        root[3 * r] = static_cast<float>(r);
        root[3 * r + 1] = pattern;
        root[3 * r + 2] = -static_cast<float>(r);
    }
    return Payload()
        .str("op", "frames")
        .uint("v", 1)
        .uint("minor", 1)
        .str("pipeline", "motion")
        .uint("rows", n)
        .uint("t_publish_ns", 1'700'000'000'020'000'000ULL)
        .f64("engine_us", 45.5)
        .uint("batch", n < 4 ? 4 : n)
        .bin("session", ids)
        .bin("seq", seq)
        .bin("input_seq", inputSeq)
        .bin("t_capture_ns", capture)
        .floats("joints", joints)
        .floats("root", root);
}

Payload reply(const std::string& op, std::uint64_t id) {
    return Payload().str("op", op).uint("v", 1).uint("id", id).boolean("ok", true);
}

Payload hello(std::uint64_t id) {
    return reply("hello", id)
        .str("server", "avatar-bridge 0.1.0")
        .uint("frames_port", 5571)
        .uint("max_message_bytes", 8 * 1024 * 1024)
        .strs("pipelines", {"face", "motion"})
        .f64("idle_timeout_s", 10.0);
}

Payload list(std::uint64_t id) {
    const Payload face = Payload()
                             .str("name", "emoca-ref")
                             .str("pipeline", "face")
                             .f64("fps", 30.0)
                             .boolean("trained", false)
                             .str("backend", "onnxruntime")
                             .boolean("default", true);
    const Payload motion = Payload()
                               .str("name", "dance-ref")
                               .str("pipeline", "motion")
                               .f64("fps", 60.0)
                               .boolean("trained", false)
                               .str("backend", "onnxruntime")
                               .boolean("default", true)
                               .strs("styles", {"house", "hiphop"});
    return reply("list", id).maps("models", {face, motion});
}

Payload openFace(std::uint64_t id, const std::string& session) {
    return reply("open", id)
        .str("session", session)
        .str("topic", "frame/" + session)
        .str("pipeline", "face")
        .str("model", "emoca-ref")
        .f64("fps", 30.0)
        .strs("accepts", {"image"})
        .map("rig", faceRig());
}

Payload openSpeech(std::uint64_t id, const std::string& session) {
    return openFace(id, session).str("pipeline", "speech").str("model", "speech_visemes").strs("accepts", {"audio"}).map("rig", speechRig());
}

Payload openMotion(std::uint64_t id, const std::string& session) {
    return reply("open", id)
        .str("session", session)
        .str("topic", "frame/" + session)
        .str("pipeline", "motion")
        .str("model", "dance-ref")
        .f64("fps", 60.0)
        .strs("accepts", {"audio", "features"})
        .uint("feature_cols", 35)
        .map("rig", bodyRig());
}

Payload error(std::uint64_t id, int code, const std::string& name, const std::string& session) {
    Payload p = Payload()
                    .str("op", "error")
                    .uint("v", 1)
                    .uint("id", id)
                    .boolean("ok", false)
                    .uint("code", static_cast<std::uint64_t>(code))
                    .str("name", name)
                    .str("message", "something was wrong");
    if (!session.empty()) {
        p.str("session", session);
    }
    return p;
}

Payload openedEvent(const std::string& session) {
    return Payload()
        .str("op", "event")
        .uint("v", 1)
        .str("session", session)
        .str("event", "opened")
        .str("pipeline", "motion")
        .str("model", "dance-ref")
        .f64("fps", 60.0)
        .map("rig", bodyRig());
}

Payload closedEvent(const std::string& session, const std::string& reason) {
    return Payload()
        .str("op", "event")
        .uint("v", 1)
        .str("session", session)
        .str("event", "closed")
        .str("reason", reason)
        .uint("frames_published", 42);
}

}  // namespace payloads
