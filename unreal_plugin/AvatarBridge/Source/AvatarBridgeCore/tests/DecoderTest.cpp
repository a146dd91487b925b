#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "Decoded.hpp"
#include "TestPayloads.hpp"
#include "avatar_bridge/Decoder.hpp"
#include "avatar_bridge/ProtocolError.hpp"

using namespace avatar_bridge;

namespace {

// Decodes a frame whose storage is a heap copy of the payload, as BridgeClient does with zmq messages.
Result<DecodedFrame> frameResult(const Payload& p) {
    auto storage = std::make_shared<std::string>(p.bytes());
    const auto* data = reinterpret_cast<const std::uint8_t*>(storage->data());
    return Decoder::frame(data, storage->size(), storage);
}

Result<Reply> replyResult(const std::string& b) {
    return Decoder::reply(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
}

Result<Event> eventResult(const Payload& p) {
    const std::string b = p.bytes();
    return Decoder::event(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());
}

DecodedFrame decodeFrame(const Payload& p) { return decoded(frameResult(p)); }
Reply decodeReply(const Payload& p) { return decoded(replyResult(p.bytes())); }
Event decodeEvent(const Payload& p) { return decoded(eventResult(p)); }
ErrorCode frameError(const Payload& p) { return errorOf(frameResult(p)); }
ErrorCode replyError(const Payload& p) { return errorOf(replyResult(p.bytes())); }
ErrorCode rawError(const std::string& bytes) { return errorOf(replyResult(bytes)); }

}  // namespace

TEST(FrameDecoding, FaceFrameFieldsAndZeroCopyViews) {
    auto storage = std::make_shared<std::string>(payloads::faceFrame(7, true, 0.5f).bytes());
    const auto* begin = reinterpret_cast<const std::uint8_t*>(storage->data());
    const DecodedFrame frame = decoded(Decoder::frame(begin, storage->size(), storage));
    const auto& f = std::get<FaceFrame>(frame.frame);
    EXPECT_EQ(f.header.session, "0123456789abcdef");
    EXPECT_EQ(f.header.seq, 7u);
    EXPECT_EQ(f.header.inputSeq, 7u);
    EXPECT_EQ(f.header.tPublishNs - f.header.tCaptureNs, 10'000'000);
    EXPECT_DOUBLE_EQ(f.header.engineUs, 812.5);
    EXPECT_EQ(f.header.batch, 1);
    EXPECT_TRUE(f.faceFound);
    ASSERT_EQ(f.expression.size(), 50u);
    EXPECT_FLOAT_EQ(f.expression[3], 0.53f);
    ASSERT_EQ(f.eyelids.size(), 2u);
    EXPECT_FLOAT_EQ(f.eyelids[1], 0.75f);
    EXPECT_EQ(f.jaw.size(), 4u);
    EXPECT_EQ(f.head.size(), 4u);
    ASSERT_EQ(f.blendshapes.size(), 52u);
    EXPECT_FLOAT_EQ(f.blendshapes[51], 1.01f);
    // Zero copy: the views point into the received buffer, which the frame keeps alive.
    EXPECT_GE(f.expression.bytes(), begin);
    EXPECT_LT(f.expression.bytes(), begin + storage->size());
    EXPECT_EQ(frame.storage.get(), storage.get());
    EXPECT_EQ(&frame.header(), &f.header);
}

TEST(FrameDecoding, FaceFrameWithoutBlendshapes) {
    const DecodedFrame decoded = decodeFrame(payloads::faceFrame(0, false));
    EXPECT_TRUE(std::get<FaceFrame>(decoded.frame).blendshapes.empty());
}

TEST(FrameDecoding, MotionFrame) {
    const DecodedFrame decoded = decodeFrame(payloads::motionFrame(3, 0.25f));
    const auto& f = std::get<MotionFrame>(decoded.frame);
    EXPECT_EQ(f.header.seq, 3u);
    ASSERT_EQ(f.joints.size(), 96u);
    EXPECT_FLOAT_EQ(f.joints[3], 1.0f);
    ASSERT_EQ(f.root.size(), 3u);
    EXPECT_FLOAT_EQ(f.root[0], 0.25f);
    EXPECT_FLOAT_EQ(f.root[1], 0.9f);
}

TEST(FrameDecoding, SpeechFrameCarriesVisemesVowelsAndVoice) {
    const DecodedFrame decoded = decodeFrame(payloads::speechFrame(4, true, 0.5f));
    const auto& f = std::get<FaceFrame>(decoded.frame);
    EXPECT_TRUE(f.expression.empty());
    ASSERT_EQ(f.visemes.size(), 15u);
    EXPECT_FLOAT_EQ(f.visemes[0], 0.5f);
    EXPECT_FLOAT_EQ(f.visemes[14], 0.64f);
    ASSERT_EQ(f.vowels.size(), 5u);
    EXPECT_FLOAT_EQ(f.vowels[0], 0.6f);  // A
    EXPECT_FLOAT_EQ(f.vowels[4], 1.0f);  // O
    ASSERT_TRUE(f.voice.has_value());
    EXPECT_TRUE(*f.voice);
    EXPECT_FALSE(*std::get<FaceFrame>(decodeFrame(payloads::speechFrame(5, false)).frame).voice);

    // Other face frames have none of them; absent, nil and an empty bin all mean "none" (docs/protocol.md §2).
    const auto plain = decodeFrame(payloads::faceFrame(0));
    EXPECT_TRUE(std::get<FaceFrame>(plain.frame).visemes.empty());
    EXPECT_TRUE(std::get<FaceFrame>(plain.frame).vowels.empty());
    EXPECT_FALSE(std::get<FaceFrame>(plain.frame).voice.has_value());
    const auto nil = decodeFrame(payloads::speechFrame(0).nil("visemes").nil("vowels").nil("voice"));
    EXPECT_TRUE(std::get<FaceFrame>(nil.frame).visemes.empty());
    EXPECT_FALSE(std::get<FaceFrame>(nil.frame).voice.has_value());
    EXPECT_TRUE(std::get<FaceFrame>(decodeFrame(payloads::speechFrame(0).floats("vowels", {})).frame).vowels.empty());

    EXPECT_EQ(frameError(payloads::speechFrame(0).floats("visemes", std::vector<float>(14))), ErrorCode::BadSize);
    EXPECT_EQ(frameError(payloads::speechFrame(0).floats("vowels", std::vector<float>(6))), ErrorCode::BadSize);
    EXPECT_EQ(frameError(payloads::speechFrame(0).uint("voice", 1)), ErrorCode::BadType);
    EXPECT_EQ(frameError(payloads::speechFrame(0).strs("visemes", {"aa"})), ErrorCode::BadType);
}

TEST(FrameDecoding, UnknownKeysAreIgnored) {
    EXPECT_TRUE(frameResult(payloads::motionFrame(0).str("future_field", "x").uint("another", 3)).ok());
}

TEST(FrameDecoding, ArraySizesAreValidated) {
    EXPECT_EQ(frameError(payloads::faceFrame(0).floats("expression", std::vector<float>(49))), ErrorCode::BadSize);
    EXPECT_EQ(frameError(payloads::faceFrame(0).floats("jaw", std::vector<float>(3))), ErrorCode::BadSize);
    EXPECT_EQ(frameError(payloads::faceFrame(0).floats("blendshapes", std::vector<float>(51))), ErrorCode::BadSize);
    EXPECT_EQ(frameError(payloads::motionFrame(0).floats("joints", std::vector<float>(95))), ErrorCode::BadSize);
    EXPECT_EQ(frameError(payloads::motionFrame(0).bin("root", "12345678901")), ErrorCode::BadSize);
}

TEST(FrameDecoding, MissingFieldsAndWrongTypes) {
    EXPECT_EQ(frameError(payloads::faceFrame(0).erase("head")), ErrorCode::MissingField);
    EXPECT_EQ(frameError(payloads::motionFrame(0).erase("t_publish_ns")), ErrorCode::MissingField);
    EXPECT_EQ(frameError(payloads::motionFrame(0).str("seq", "1")), ErrorCode::BadType);
    EXPECT_EQ(frameError(payloads::motionFrame(0).sint("seq", -1)), ErrorCode::BadType);
    EXPECT_EQ(frameError(payloads::faceFrame(0).uint("face_found", 1)), ErrorCode::BadType);
    EXPECT_EQ(frameError(payloads::motionFrame(0).strs("joints", {"a"})), ErrorCode::BadType);
    // engine_us may be an int or a float on the wire.
    EXPECT_TRUE(frameResult(payloads::motionFrame(0).uint("engine_us", 900)).ok());
}

TEST(FrameDecoding, VersionOpAndPipeline) {
    EXPECT_EQ(frameError(payloads::motionFrame(0).uint("v", 2)), ErrorCode::UnsupportedVersion);
    EXPECT_EQ(frameError(payloads::motionFrame(0).str("op", "framez")), ErrorCode::BadValue);
    EXPECT_EQ(frameError(payloads::motionFrame(0).str("pipeline", "voice")), ErrorCode::BadValue);
}

TEST(MessageDecoding, GarbageIsMalformed) {
    EXPECT_EQ(rawError(""), ErrorCode::Malformed);
    EXPECT_EQ(rawError("\xc1"), ErrorCode::Malformed);                // never-used msgpack byte
    EXPECT_EQ(rawError("\x93\x01\x02\x03"), ErrorCode::Malformed);    // an array, not a map
    EXPECT_EQ(rawError("\x81\x01\x02"), ErrorCode::Malformed);        // integer key
    EXPECT_EQ(rawError(payloads::hello(1).bytes() + "x"), ErrorCode::Malformed);  // trailing bytes
    EXPECT_EQ(rawError(payloads::hello(1).bytes().substr(0, 20)), ErrorCode::Malformed);  // truncated
}

TEST(ReplyDecoding, Hello) {
    const auto r = std::get<HelloReply>(decodeReply(payloads::hello(11)));
    EXPECT_EQ(r.id, 11u);
    EXPECT_EQ(r.server, "avatar-bridge 0.1.0");
    EXPECT_EQ(r.framesPort, 5571);
    EXPECT_EQ(r.maxMessageBytes, 8u * 1024 * 1024);
    EXPECT_EQ(r.pipelines, (std::vector<std::string>{"face", "motion"}));
    EXPECT_DOUBLE_EQ(r.idleTimeoutS, 10.0);
    EXPECT_EQ(replyError(payloads::hello(1).uint("frames_port", 70000)), ErrorCode::BadValue);
}

TEST(ReplyDecoding, List) {
    const auto r = std::get<ListReply>(decodeReply(payloads::list(2)));
    ASSERT_EQ(r.models.size(), 2u);
    EXPECT_EQ(r.models[0].pipeline, "face");
    EXPECT_FALSE(r.models[0].trained);
    EXPECT_TRUE(r.models[0].isDefault);
    EXPECT_TRUE(r.models[0].styles.empty());
    EXPECT_EQ(r.models[1].styles, (std::vector<std::string>{"house", "hiphop"}));
    EXPECT_DOUBLE_EQ(r.models[1].fps, 60.0);
}

TEST(ReplyDecoding, OpenFaceCarriesTheRig) {
    const auto r = std::get<OpenReply>(decodeReply(payloads::openFace(3, "00112233445566ff")));
    EXPECT_EQ(r.id, 3u);
    EXPECT_EQ(r.session, "00112233445566ff");
    EXPECT_EQ(r.accepts, (std::vector<std::string>{"image"}));
    const auto& rig = std::get<FaceRig>(r.rig);
    EXPECT_EQ(rig.expression.size(), 50u);
    EXPECT_EQ(rig.expression[0], "Exp00");
    EXPECT_EQ(rig.eyelids[1], "EyelidRight");
    EXPECT_EQ(rig.rotations, (std::vector<std::string>{"head", "jaw"}));
    EXPECT_EQ(rig.blendshapes.size(), 52u);
}

TEST(ReplyDecoding, OpenMotionCarriesTheSkeleton) {
    const auto r = std::get<OpenReply>(decodeReply(payloads::openMotion(4, "ffeeddccbbaa0099")));
    EXPECT_EQ(r.featureCols, 35);
    const auto& rig = std::get<BodyRig>(r.rig);
    EXPECT_EQ(rig.joints.size(), 24u);
    EXPECT_EQ(rig.joints[15], "head");
    EXPECT_EQ(rig.parents[0], -1);
    EXPECT_EQ(rig.parents[23], 21);
    ASSERT_EQ(rig.restOffsets.size(), 24u);
    EXPECT_FLOAT_EQ(rig.restOffsets[0].y, -0.223f);
    EXPECT_EQ(rig.humanoid[0], "Hips");
}

TEST(ReplyDecoding, OpenSpeechCarriesItsExtras) {
    const auto open = std::get<OpenReply>(decodeReply(payloads::openSpeech(4, "0011223344556677")));
    EXPECT_EQ(open.pipeline, "speech");
    const auto& rig = std::get<FaceRig>(open.rig);
    EXPECT_TRUE(rig.expression.empty());
    EXPECT_EQ(rig.extras, (std::vector<std::string>{"visemes", "vowels", "voice"}));
    EXPECT_TRUE(rig.hasExtra("voice"));
    EXPECT_EQ(rig.unsupported.size(), 2u);
    // Absent means none (other models' rigs).
    const auto face = std::get<OpenReply>(decodeReply(payloads::openFace(5, "0011223344556677")));
    EXPECT_TRUE(std::get<FaceRig>(face.rig).extras.empty());
    EXPECT_FALSE(std::get<FaceRig>(face.rig).hasExtra("visemes"));
}

TEST(ReplyDecoding, RigIsValidated) {
    auto badParents = payloads::smplParents();
    badParents[5] = 7;  // a parent after its child
    EXPECT_EQ(replyError(payloads::openMotion(1, "ffeeddccbbaa0099").map("rig", payloads::bodyRig().ints("parents", badParents))),
              ErrorCode::BadValue);
    EXPECT_EQ(replyError(payloads::openMotion(1, "ffeeddccbbaa0099")
                             .map("rig", payloads::bodyRig().floats("rest_offsets", std::vector<float>(71)))),
              ErrorCode::BadSize);
    EXPECT_EQ(replyError(payloads::openFace(1, "00112233445566ff")
                             .map("rig", payloads::faceRig().strs("blendshapes", {"EyeBlinkLeft"}))),
              ErrorCode::BadSize);
    EXPECT_EQ(replyError(payloads::openFace(1, "00112233445566ff")
                             .map("rig", payloads::faceRig().str("quaternion_order", "wxyz"))),
              ErrorCode::BadValue);
    EXPECT_EQ(replyError(payloads::openFace(1, "00112233445566ff").map("rig", payloads::faceRig().str("kind", "hand"))),
              ErrorCode::BadValue);
    EXPECT_EQ(replyError(payloads::openFace(1, "00112233445566ff").str("topic", "frame/other")), ErrorCode::BadValue);
}

TEST(ReplyDecoding, CloseAckPong) {
    const auto c = std::get<CloseReply>(decodeReply(payloads::reply("close", 5).str("session", "s").uint("frames_published", 600)));
    EXPECT_EQ(c.framesPublished, 600u);
    const auto a = std::get<AckReply>(decodeReply(payloads::reply("ack", 6).str("session", "s").uint("seq", 9)));
    EXPECT_EQ(a.seq, 9u);
    const auto p = std::get<PongReply>(decodeReply(payloads::reply("pong", 7).uint("t_ns", 1'700'000'000'000'000'000ULL)));
    EXPECT_EQ(p.id, 7u);
    EXPECT_EQ(p.tNs, 1'700'000'000'000'000'000LL);
}

TEST(ReplyDecoding, EveryErrorCode) {
    for (const int code : {100, 101, 102, 103, 104, 105, 106, 107, 200, 201, 202, 203, 204, 205, 500}) {
        const auto name = std::string(errorCodeName(code));
        const auto e = std::get<ErrorReply>(decodeReply(payloads::error(8, code, name, "0123456789abcdef")));
        EXPECT_EQ(e.code, code);
        EXPECT_EQ(e.name, name);
        EXPECT_NE(name, "UNKNOWN");
        EXPECT_EQ(e.session, "0123456789abcdef");
        EXPECT_EQ(e.message, "something was wrong");
    }
    const auto noSession = std::get<ErrorReply>(decodeReply(payloads::error(0, 100, "MALFORMED")));
    EXPECT_TRUE(noSession.session.empty());
    EXPECT_EQ(errorCodeName(999), "UNKNOWN");
}

TEST(ReplyDecoding, UnknownOpAndVersion) {
    EXPECT_EQ(replyError(payloads::reply("frobnicate", 1)), ErrorCode::UnknownOp);
    EXPECT_EQ(replyError(payloads::hello(1).uint("v", 3)), ErrorCode::UnsupportedVersion);
    EXPECT_EQ(replyError(payloads::hello(1).erase("v")), ErrorCode::MissingField);
    EXPECT_EQ(replyError(payloads::hello(1).boolean("ok", false)), ErrorCode::BadValue);
    EXPECT_EQ(replyError(payloads::error(1, 100, "MALFORMED").str("code", "100")), ErrorCode::BadType);
}

TEST(EventDecoding, OpenedAndClosed) {
    const auto opened = std::get<OpenedEvent>(decodeEvent(payloads::openedEvent("0123456789abcdef")));
    EXPECT_EQ(opened.pipeline, "motion");
    EXPECT_EQ(std::get<BodyRig>(opened.rig).joints.size(), 24u);
    const auto closed = std::get<ClosedEvent>(decodeEvent(payloads::closedEvent("0123456789abcdef", "idle_timeout")));
    EXPECT_EQ(closed.reason, "idle_timeout");
    EXPECT_EQ(closed.framesPublished, 42u);
    EXPECT_EQ(errorOf(eventResult(payloads::closedEvent("s", "client").str("event", "paused"))), ErrorCode::BadValue);
}

TEST(MessageDecoding, HugeDeclaredCountsAreMalformedNotAllocated) {
    // A map whose one value claims 2^31 array elements (array32 header, no elements): found by the fuzzer.
    const std::string bytes("\x81\xa1x\xdd\x80\x00\x00\x00", 8);
    EXPECT_EQ(rawError(bytes), ErrorCode::Malformed);
}

TEST(ReplyDecoding, OpenFaceWithBodyCarriesTheHumanoidRig) {
    const auto open = std::get<OpenReply>(decodeReply(payloads::openFaceBody(6, "0011223344556677")));
    const auto& rig = std::get<FaceRig>(open.rig);
    EXPECT_TRUE(rig.hasExtra("body"));
    ASSERT_TRUE(rig.body.has_value());
    EXPECT_EQ(rig.body->joints.size(), Decoder::kHumanoidJoints);
    EXPECT_EQ(rig.body->joints[0], "Hips");
    EXPECT_EQ(rig.body->joints[49], "RightLittleDistal");
    EXPECT_EQ(rig.body->parents[20], 9);  // LeftThumbProximal under LeftHand
    EXPECT_FLOAT_EQ(rig.body->restOffsets[0].y, 0.95f);
    EXPECT_EQ(rig.body->humanoid[7], "LeftUpperArm");
    // Other face rigs have none.
    EXPECT_FALSE(std::get<FaceRig>(std::get<OpenReply>(decodeReply(payloads::openFace(5, "0011223344556677"))).rig).body);

    // The nested rig is validated like a motion session's: its count, parents, kind and coordinates.
    const auto withBody = [](const Payload& body) {
        return payloads::openFaceBody(6, "0011223344556677").map("rig", payloads::faceRig().map("body", body));
    };
    EXPECT_EQ(replyError(withBody(payloads::bodyRig())), ErrorCode::BadSize);  // 24 SMPL joints, not the humanoid
    auto badParents = payloads::humanoidParents();
    badParents[21] = 30;
    EXPECT_EQ(replyError(withBody(payloads::humanoidRig().ints("parents", badParents))), ErrorCode::BadValue);
    EXPECT_EQ(replyError(withBody(payloads::humanoidRig().str("kind", "face"))), ErrorCode::BadValue);
    EXPECT_EQ(replyError(withBody(payloads::humanoidRig().str("quaternion_order", "wxyz"))), ErrorCode::BadValue);
    EXPECT_EQ(replyError(withBody(payloads::humanoidRig().erase("humanoid"))), ErrorCode::MissingField);
    EXPECT_EQ(replyError(payloads::openFaceBody(6, "0011223344556677").map("rig", payloads::faceRig().strs("body", {"Hips"}))),
              ErrorCode::BadType);
}

TEST(FrameDecoding, FaceFrameWithBodyRotationsAndFlags) {
    const DecodedFrame decoded = decodeFrame(payloads::faceBodyFrame(3, 8, 0.5f));
    const auto& f = std::get<FaceFrame>(decoded.frame);
    ASSERT_EQ(f.body.size(), Decoder::kHumanoidJoints * 4);
    EXPECT_FLOAT_EQ(f.body[4 * 8 + 2], std::sin(0.25f));
    EXPECT_EQ(f.bodyFound, std::optional<bool>(true));
    EXPECT_EQ(f.leftHandFound, std::optional<bool>(true));
    EXPECT_EQ(f.rightHandFound, std::optional<bool>(false));
    // Frames of sessions without the body have none of them.
    const auto plain = decodeFrame(payloads::faceFrame(0));
    EXPECT_TRUE(std::get<FaceFrame>(plain.frame).body.empty());
    EXPECT_FALSE(std::get<FaceFrame>(plain.frame).bodyFound.has_value());
    EXPECT_FALSE(std::get<FaceFrame>(plain.frame).leftHandFound.has_value());

    EXPECT_EQ(frameError(payloads::faceBodyFrame(0).floats("body", std::vector<float>(24 * 4))), ErrorCode::BadSize);
    EXPECT_EQ(frameError(payloads::faceBodyFrame(0).bools("hands_found", {true, false, true})), ErrorCode::BadSize);
    EXPECT_EQ(frameError(payloads::faceBodyFrame(0).ints("hands_found", {1, 0})), ErrorCode::BadType);
    EXPECT_EQ(frameError(payloads::faceBodyFrame(0).uint("body_found", 1)), ErrorCode::BadType);
}
