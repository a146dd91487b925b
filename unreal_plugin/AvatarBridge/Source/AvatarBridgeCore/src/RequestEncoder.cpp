#include "avatar_bridge/RequestEncoder.hpp"

#include "MsgPackWriter.hpp"

namespace avatar_bridge {
namespace {

// Starts a request map with its common keys: op, id, v. `extra` is the number of keys the caller adds.
MsgPackWriter beginRequest(std::string_view op, std::uint64_t id, std::uint32_t extra) {
    MsgPackWriter w;
    w.map(3 + extra);
    w.str("op");
    w.str(op);
    w.str("id");
    w.uint(id);
    w.str("v");
    w.uint(1);
    return w;
}

MsgPackWriter beginInput(const RequestEncoder::InputHeader& h, std::string_view kind, std::uint32_t extra) {
    MsgPackWriter w = beginRequest("input", h.id, 5 + extra + (h.ack ? 1 : 0));
    w.str("session");
    w.str(h.session);
    w.str("kind");
    w.str(kind);
    w.str("seq");
    w.uint(h.seq);
    w.str("t_capture_ns");
    w.uint(static_cast<std::uint64_t>(h.tCaptureNs));
    if (h.ack) {
        w.str("ack");
        w.boolean(true);
    }
    // The caller adds `extra` keys, then the `data` blob (counted in the 5 above).
    return w;
}

}  // namespace

std::string RequestEncoder::hello(std::uint64_t id, std::string_view client) {
    MsgPackWriter w = beginRequest("hello", id, 1);
    w.str("client");
    w.str(client);
    return w.take();
}

std::string RequestEncoder::list(std::uint64_t id) { return beginRequest("list", id, 0).take(); }

std::string RequestEncoder::open(std::uint64_t id, const SessionSpec& spec) {
    MsgPackWriter w = beginRequest("open", id, spec.model.empty() ? 2 : 3);
    w.str("pipeline");
    w.str(spec.pipeline);
    if (!spec.model.empty()) {
        w.str("model");
        w.str(spec.model);
    }
    w.str("options");
    w.map(static_cast<std::uint32_t>(spec.options.size()));
    for (const auto& [key, option] : spec.options) {
        w.str(key);
        const auto& v = option.value();
        if (const bool* flag = std::get_if<bool>(&v)) {
            w.boolean(*flag);
        } else if (const double* number = std::get_if<double>(&v)) {
            w.float64(*number);
        } else {
            w.str(std::get<std::string>(v));
        }
    }
    return w.take();
}

std::string RequestEncoder::close(std::uint64_t id, std::string_view session) {
    MsgPackWriter w = beginRequest("close", id, 1);
    w.str("session");
    w.str(session);
    return w.take();
}

std::string RequestEncoder::ping(std::uint64_t id, std::string_view session) {
    MsgPackWriter w = beginRequest("ping", id, session.empty() ? 0 : 1);
    if (!session.empty()) {
        w.str("session");
        w.str(session);
    }
    return w.take();
}

std::string RequestEncoder::image(const InputHeader& h, int width, int height, const std::uint8_t* rgb,
                                  std::size_t bytes) {
    MsgPackWriter w = beginInput(h, "image", 3);
    w.str("width");
    w.integer(width);
    w.str("height");
    w.integer(height);
    w.str("format");
    w.str("rgb8");
    w.str("data");
    w.bin(rgb, bytes);
    return w.take();
}

std::string RequestEncoder::jpegImage(const InputHeader& h, const std::uint8_t* jpeg, std::size_t bytes) {
    MsgPackWriter w = beginInput(h, "image", 1);
    w.str("format");
    w.str("jpeg");
    w.str("data");
    w.bin(jpeg, bytes);
    return w.take();
}

std::string RequestEncoder::audio(const InputHeader& h, int rate, std::string_view format, const void* data,
                                  std::size_t bytes) {
    MsgPackWriter w = beginInput(h, "audio", 2);
    w.str("rate");
    w.integer(rate);
    w.str("format");
    w.str(format);
    w.str("data");
    w.bin(data, bytes);
    return w.take();
}

std::string RequestEncoder::features(const InputHeader& h, int rows, int cols, const float* data, std::size_t bytes) {
    MsgPackWriter w = beginInput(h, "features", 2);
    w.str("rows");
    w.integer(rows);
    w.str("cols");
    w.integer(cols);
    w.str("data");
    w.bin(data, bytes);
    return w.take();
}

}  // namespace avatar_bridge
