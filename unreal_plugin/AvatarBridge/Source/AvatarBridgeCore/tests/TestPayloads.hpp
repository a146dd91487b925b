#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// Builds bridge-side messages with msgpack-cxx, the way the Python bridge packs them, so the decoder is
// tested against independently encoded bytes. Each value is packed when added; a map is the
// concatenation of its packed entries (msgpack is concatenative).
class Payload {
public:
    Payload& str(const std::string& key, const std::string& value);
    Payload& uint(const std::string& key, std::uint64_t value);
    Payload& sint(const std::string& key, std::int64_t value);
    Payload& f64(const std::string& key, double value);
    Payload& boolean(const std::string& key, bool value);
    Payload& nil(const std::string& key);
    Payload& bin(const std::string& key, const std::string& bytes);
    Payload& floats(const std::string& key, const std::vector<float>& values);
    Payload& strs(const std::string& key, const std::vector<std::string>& values);
    Payload& ints(const std::string& key, const std::vector<int>& values);
    Payload& bools(const std::string& key, const std::vector<bool>& values);
    Payload& map(const std::string& key, const Payload& value);
    Payload& maps(const std::string& key, const std::vector<Payload>& values);
    Payload& erase(const std::string& key);
    // A value packed by the caller (e.g. a bin32 header the packer would not choose for a short bin).
    Payload& packed(const std::string& key, std::string value) { return put(key, std::move(value)); }

    std::string bytes() const;

private:
    Payload& put(const std::string& key, std::string packed);
    std::vector<std::pair<std::string, std::string>> entries_;
};

// Well-formed messages as docs/protocol.md describes them; tests break them one field at a time.
namespace payloads {

std::vector<std::string> expressionNames();
std::vector<std::string> smplJoints();
std::vector<int> smplParents();
std::vector<std::string> arkitNames();

Payload faceRig(bool blendshapes = true);
Payload bodyRig();
// `pattern` fills arrays with recognisable values (i * 0.01 + pattern).
Payload faceFrame(std::uint64_t seq, bool blendshapes = true, float pattern = 0.0f);
Payload motionFrame(std::uint64_t seq, float pattern = 0.0f);
// A speech session's rig and frames (docs/protocol.md §5.2): no FLAME codes, extras visemes/vowels/voice.
Payload speechRig();
Payload openSpeech(std::uint64_t id, const std::string& session);
// Viseme i = 0.01 i + pattern, vowel i = 0.1 (i + 1) + pattern.
Payload speechFrame(std::uint64_t seq, bool voice = true, float pattern = 0.0f);
// A `batch/motion` message (protocol minor 1, /work/notes/BATCH.md) in the encoder's key order: row r is
// session `sessions[r]` with seq `seqs[r]`, input_seq seq + 100, joints all identity except joint 1's
// x = 0.01 r + pattern, root (r, pattern, -r).
Payload motionBatch(const std::vector<std::string>& sessions, const std::vector<std::uint64_t>& seqs, float pattern = 0.0f);
// A face session opened with `body: true` (docs/protocol.md §5.1.2): the tracker's face rig with extras ending in
// "body" and the 50-joint humanoid `body` rig (the bridge's order: Hips, Spine, Chest, UpperChest, Neck, Head,
// Left/Right Shoulder..Hand, Left/Right UpperLeg..Foot, then each side's fingers, three joints each). Rest offsets:
// the root 0.95 m up, every joint 0.1 m along +X (the avatar's left) from its parent on the left side, -X on the
// right, +Y up the spine, -Y down the legs.
std::vector<std::string> humanoidJoints();
std::vector<int> humanoidParents();
Payload humanoidRig();
Payload openFaceBody(std::uint64_t id, const std::string& session);
// Identity rotations except `turned` (joint index) by `angle` about wire +Z; body found, left hand found only.
Payload faceBodyFrame(std::uint64_t seq, int turned = -1, float angle = 0.0f);
Payload reply(const std::string& op, std::uint64_t id);
Payload hello(std::uint64_t id);
Payload list(std::uint64_t id);
Payload openFace(std::uint64_t id, const std::string& session);
Payload openMotion(std::uint64_t id, const std::string& session);
Payload error(std::uint64_t id, int code, const std::string& name, const std::string& session = "");
Payload openedEvent(const std::string& session);
Payload closedEvent(const std::string& session, const std::string& reason);

}  // namespace payloads
