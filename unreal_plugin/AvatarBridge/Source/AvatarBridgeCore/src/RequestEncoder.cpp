#include "avatar_bridge/RequestEncoder.hpp"

#include <msgpack.hpp>

namespace avatar_bridge {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void packStr(Packer& p, std::string_view s) {
    p.pack_str(static_cast<std::uint32_t>(s.size()));
    p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

void packBin(Packer& p, const void* data, std::size_t bytes) {
    p.pack_bin(static_cast<std::uint32_t>(bytes));
    p.pack_bin_body(static_cast<const char*>(data), static_cast<std::uint32_t>(bytes));
}

// Starts a request map with its common keys: op, id, v. `extra` is the number of keys the caller adds.
void beginRequest(Packer& p, std::string_view op, std::uint64_t id, std::uint32_t extra) {
    p.pack_map(3 + extra);
    packStr(p, "op");
    packStr(p, op);
    packStr(p, "id");
    p.pack_uint64(id);
    packStr(p, "v");
    p.pack_uint64(1);
}

void beginInput(Packer& p, const RequestEncoder::InputHeader& h, std::string_view kind, std::uint32_t extra) {
    beginRequest(p, "input", h.id, 5 + extra + (h.ack ? 1 : 0));
    packStr(p, "session");
    packStr(p, h.session);
    packStr(p, "kind");
    packStr(p, kind);
    packStr(p, "seq");
    p.pack_uint64(h.seq);
    packStr(p, "t_capture_ns");
    p.pack_uint64(static_cast<std::uint64_t>(h.tCaptureNs));
    if (h.ack) {
        packStr(p, "ack");
        p.pack_true();
    }
    // The caller adds `extra` keys, then the `data` blob (counted in the 5 above).
}

std::string toString(const msgpack::sbuffer& b) { return {b.data(), b.size()}; }

}  // namespace

std::string RequestEncoder::hello(std::uint64_t id, std::string_view client) {
    msgpack::sbuffer b;
    Packer p(&b);
    beginRequest(p, "hello", id, 1);
    packStr(p, "client");
    packStr(p, client);
    return toString(b);
}

std::string RequestEncoder::list(std::uint64_t id) {
    msgpack::sbuffer b;
    Packer p(&b);
    beginRequest(p, "list", id, 0);
    return toString(b);
}

std::string RequestEncoder::open(std::uint64_t id, const SessionSpec& spec) {
    msgpack::sbuffer b;
    Packer p(&b);
    beginRequest(p, "open", id, spec.model.empty() ? 2 : 3);
    packStr(p, "pipeline");
    packStr(p, spec.pipeline);
    if (!spec.model.empty()) {
        packStr(p, "model");
        packStr(p, spec.model);
    }
    packStr(p, "options");
    p.pack_map(static_cast<std::uint32_t>(spec.options.size()));
    for (const auto& [key, option] : spec.options) {
        packStr(p, key);
        const auto& v = option.value();
        if (const bool* flag = std::get_if<bool>(&v)) {
            *flag ? p.pack_true() : p.pack_false();
        } else if (const double* number = std::get_if<double>(&v)) {
            p.pack_double(*number);
        } else {
            packStr(p, std::get<std::string>(v));
        }
    }
    return toString(b);
}

std::string RequestEncoder::close(std::uint64_t id, std::string_view session) {
    msgpack::sbuffer b;
    Packer p(&b);
    beginRequest(p, "close", id, 1);
    packStr(p, "session");
    packStr(p, session);
    return toString(b);
}

std::string RequestEncoder::ping(std::uint64_t id, std::string_view session) {
    msgpack::sbuffer b;
    Packer p(&b);
    beginRequest(p, "ping", id, session.empty() ? 0 : 1);
    if (!session.empty()) {
        packStr(p, "session");
        packStr(p, session);
    }
    return toString(b);
}

std::string RequestEncoder::image(const InputHeader& h, int width, int height, const std::uint8_t* rgb,
                                  std::size_t bytes) {
    msgpack::sbuffer b;
    Packer p(&b);
    beginInput(p, h, "image", 3);
    packStr(p, "width");
    p.pack_int(width);
    packStr(p, "height");
    p.pack_int(height);
    packStr(p, "format");
    packStr(p, "rgb8");
    packStr(p, "data");
    packBin(p, rgb, bytes);
    return toString(b);
}

std::string RequestEncoder::audio(const InputHeader& h, int rate, std::string_view format, const void* data,
                                  std::size_t bytes) {
    msgpack::sbuffer b;
    Packer p(&b);
    beginInput(p, h, "audio", 2);
    packStr(p, "rate");
    p.pack_int(rate);
    packStr(p, "format");
    packStr(p, format);
    packStr(p, "data");
    packBin(p, data, bytes);
    return toString(b);
}

std::string RequestEncoder::features(const InputHeader& h, int rows, int cols, const float* data, std::size_t bytes) {
    msgpack::sbuffer b;
    Packer p(&b);
    beginInput(p, h, "features", 2);
    packStr(p, "rows");
    p.pack_int(rows);
    packStr(p, "cols");
    p.pack_int(cols);
    packStr(p, "data");
    packBin(p, data, bytes);
    return toString(b);
}

}  // namespace avatar_bridge
