#include <gtest/gtest.h>

#include <map>
#include <string>

#include <msgpack.hpp>

#include "avatar_bridge/RequestEncoder.hpp"

using namespace avatar_bridge;

namespace {

// Unpacks a request and indexes its top-level keys; the handle keeps the objects alive.
struct Unpacked {
    explicit Unpacked(const std::string& bytes) : handle(msgpack::unpack(bytes.data(), bytes.size())) {
        const auto& m = handle.get();
        EXPECT_EQ(m.type, msgpack::type::MAP);
        for (std::uint32_t i = 0; i < m.via.map.size; ++i) {
            fields[m.via.map.ptr[i].key.as<std::string>()] = m.via.map.ptr[i].val;
        }
    }
    std::string str(const std::string& k) const { return fields.at(k).as<std::string>(); }
    std::uint64_t uint(const std::string& k) const { return fields.at(k).as<std::uint64_t>(); }

    msgpack::object_handle handle;
    std::map<std::string, msgpack::object> fields;
};

}  // namespace

TEST(RequestEncoder, HelloListCloseCarryOpIdAndVersion) {
    const Unpacked hello(RequestEncoder::hello(1, "unit-test"));
    EXPECT_EQ(hello.str("op"), "hello");
    EXPECT_EQ(hello.uint("id"), 1u);
    EXPECT_EQ(hello.uint("v"), 1u);
    EXPECT_EQ(hello.str("client"), "unit-test");
    const Unpacked list(RequestEncoder::list(2));
    EXPECT_EQ(list.str("op"), "list");
    EXPECT_EQ(list.fields.size(), 3u);
    const Unpacked close(RequestEncoder::close(3, "0123456789abcdef"));
    EXPECT_EQ(close.str("session"), "0123456789abcdef");
}

TEST(RequestEncoder, PingWithAndWithoutSession) {
    EXPECT_EQ(Unpacked(RequestEncoder::ping(4, "")).fields.count("session"), 0u);
    EXPECT_EQ(Unpacked(RequestEncoder::ping(4, "abc")).str("session"), "abc");
}

TEST(RequestEncoder, OpenOptionsKeepTheirTypes) {
    SessionSpec spec;
    spec.pipeline = "motion";
    spec.options = {{"style", "house"}, {"smoothing", 0.25}, {"blendshapes", true}};
    const Unpacked open(RequestEncoder::open(5, spec));
    EXPECT_EQ(open.str("pipeline"), "motion");
    EXPECT_EQ(open.fields.count("model"), 0u);  // empty model: the pipeline's default
    const auto& options = open.fields.at("options");
    ASSERT_EQ(options.type, msgpack::type::MAP);
    std::map<std::string, msgpack::object> o;
    for (std::uint32_t i = 0; i < options.via.map.size; ++i) {
        o[options.via.map.ptr[i].key.as<std::string>()] = options.via.map.ptr[i].val;
    }
    EXPECT_EQ(o.at("style").type, msgpack::type::STR);  // a literal never turns into a bool
    EXPECT_EQ(o.at("style").as<std::string>(), "house");
    EXPECT_DOUBLE_EQ(o.at("smoothing").as<double>(), 0.25);
    EXPECT_EQ(o.at("blendshapes").type, msgpack::type::BOOLEAN);
    spec.model = "dance-ref";
    EXPECT_EQ(Unpacked(RequestEncoder::open(6, spec)).str("model"), "dance-ref");
}

TEST(RequestEncoder, InputsCarryHeaderAndBinaryData) {
    RequestEncoder::InputHeader h;
    h.id = 9;
    h.session = "0123456789abcdef";
    h.seq = 12;
    h.tCaptureNs = 1'700'000'000'000'000'000LL;
    h.ack = true;
    const std::uint8_t rgb[6] = {1, 2, 3, 4, 5, 6};
    const Unpacked image(RequestEncoder::image(h, 2, 1, rgb, sizeof rgb));
    EXPECT_EQ(image.str("op"), "input");
    EXPECT_EQ(image.str("kind"), "image");
    EXPECT_EQ(image.uint("seq"), 12u);
    EXPECT_EQ(image.uint("t_capture_ns"), 1'700'000'000'000'000'000ULL);
    EXPECT_TRUE(image.fields.at("ack").as<bool>());
    EXPECT_EQ(image.uint("width"), 2u);
    EXPECT_EQ(image.str("format"), "rgb8");
    ASSERT_EQ(image.fields.at("data").type, msgpack::type::BIN);
    EXPECT_EQ(image.fields.at("data").via.bin.size, 6u);

    const std::uint8_t jpeg[4] = {0xFF, 0xD8, 0xFF, 0xD9};
    const Unpacked compressed(RequestEncoder::jpegImage(h, jpeg, sizeof jpeg));
    EXPECT_EQ(compressed.str("kind"), "image");
    EXPECT_EQ(compressed.str("format"), "jpeg");
    EXPECT_EQ(compressed.fields.count("width"), 0u);  // the bridge reads the size from the JPEG header
    EXPECT_EQ(compressed.fields.at("data").via.bin.size, 4u);
    EXPECT_EQ(compressed.uint("seq"), 12u);

    h.ack = false;
    const float rows[35 * 2] = {};
    const Unpacked features(RequestEncoder::features(h, 2, 35, rows, sizeof rows));
    EXPECT_EQ(features.fields.count("ack"), 0u);
    EXPECT_EQ(features.uint("rows"), 2u);
    EXPECT_EQ(features.uint("cols"), 35u);
    EXPECT_EQ(features.fields.at("data").via.bin.size, sizeof rows);

    const std::int16_t samples[800] = {};
    const Unpacked audio(RequestEncoder::audio(h, 48000, "s16le", samples, sizeof samples));
    EXPECT_EQ(audio.uint("rate"), 48000u);
    EXPECT_EQ(audio.str("format"), "s16le");
    EXPECT_EQ(audio.fields.at("data").via.bin.size, 1600u);
}
