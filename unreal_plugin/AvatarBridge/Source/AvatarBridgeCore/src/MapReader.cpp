#include "MapReader.hpp"

#include <limits>

#include "avatar_bridge/ProtocolError.hpp"

namespace avatar_bridge {

MapReader::MapReader(const msgpack::object& map, std::string_view what) : map_(map), what_(what) {
    if (map.type != msgpack::type::MAP) {
        throw ProtocolError(ErrorCode::Malformed, what_ + ": expected a msgpack map");
    }
    for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
        if (map.via.map.ptr[i].key.type != msgpack::type::STR) {
            throw ProtocolError(ErrorCode::Malformed, what_ + ": map keys must be strings");
        }
    }
}

const msgpack::object* MapReader::find(std::string_view key) const {
    for (std::uint32_t i = 0; i < map_.via.map.size; ++i) {
        const auto& kv = map_.via.map.ptr[i];
        if (std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key) {
            return &kv.val;
        }
    }
    return nullptr;
}

const msgpack::object& MapReader::require(std::string_view key) const {
    const msgpack::object* o = find(key);
    if (o == nullptr) {
        throw ProtocolError(ErrorCode::MissingField, what_ + ": missing field '" + std::string(key) + "'");
    }
    return *o;
}

void MapReader::badType(std::string_view key, std::string_view expected) const {
    throw ProtocolError(ErrorCode::BadType,
                        what_ + ": field '" + std::string(key) + "' must be " + std::string(expected));
}

std::string MapReader::str(std::string_view key) const {
    const auto& o = require(key);
    if (o.type != msgpack::type::STR) {
        badType(key, "str");
    }
    return {o.via.str.ptr, o.via.str.size};
}

std::uint64_t MapReader::uint(std::string_view key) const {
    const auto& o = require(key);
    if (o.type != msgpack::type::POSITIVE_INTEGER) {
        badType(key, "a non-negative int");
    }
    return o.via.u64;
}

std::int64_t MapReader::int64(std::string_view key) const {
    const auto& o = require(key);
    if (o.type == msgpack::type::NEGATIVE_INTEGER) {
        return o.via.i64;
    }
    if (o.type != msgpack::type::POSITIVE_INTEGER ||
        o.via.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        badType(key, "a 64-bit int");
    }
    return static_cast<std::int64_t>(o.via.u64);
}

double MapReader::number(std::string_view key) const {
    const auto& o = require(key);
    switch (o.type) {
        case msgpack::type::FLOAT32:
        case msgpack::type::FLOAT64: return o.via.f64;
        case msgpack::type::POSITIVE_INTEGER: return static_cast<double>(o.via.u64);
        case msgpack::type::NEGATIVE_INTEGER: return static_cast<double>(o.via.i64);
        default: badType(key, "a number");
    }
}

bool MapReader::boolean(std::string_view key) const {
    const auto& o = require(key);
    if (o.type != msgpack::type::BOOLEAN) {
        badType(key, "bool");
    }
    return o.via.boolean;
}

MapReader::Bytes MapReader::bin(std::string_view key) const {
    const auto& o = require(key);
    if (o.type != msgpack::type::BIN) {
        badType(key, "bin");
    }
    return {reinterpret_cast<const std::uint8_t*>(o.via.bin.ptr), o.via.bin.size};
}

F32View MapReader::floats(std::string_view key, std::size_t count, bool allowEmpty) const {
    const auto& o = require(key);
    if (o.type != msgpack::type::BIN) {
        badType(key, "bin");
    }
    const std::size_t bytes = o.via.bin.size;
    if (allowEmpty && bytes == 0) {
        return {};
    }
    if (bytes != count * sizeof(float)) {
        throw ProtocolError(ErrorCode::BadSize, what_ + ": field '" + std::string(key) + "' must hold " +
                                                    std::to_string(count * sizeof(float)) + " bytes, got " +
                                                    std::to_string(bytes));
    }
    return {reinterpret_cast<const std::uint8_t*>(o.via.bin.ptr), count};
}

const msgpack::object& MapReader::array(std::string_view key) const {
    const auto& o = require(key);
    if (o.type != msgpack::type::ARRAY) {
        badType(key, "array");
    }
    return o;
}

std::vector<std::string> MapReader::strings(std::string_view key) const {
    const auto& o = array(key);
    std::vector<std::string> out;
    out.reserve(o.via.array.size);
    for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
        const auto& e = o.via.array.ptr[i];
        if (e.type != msgpack::type::STR) {
            badType(key, "an array of str");
        }
        out.emplace_back(e.via.str.ptr, e.via.str.size);
    }
    return out;
}

std::vector<std::int64_t> MapReader::ints(std::string_view key) const {
    const auto& o = array(key);
    std::vector<std::int64_t> out;
    out.reserve(o.via.array.size);
    for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
        const auto& e = o.via.array.ptr[i];
        if (e.type == msgpack::type::NEGATIVE_INTEGER) {
            out.push_back(e.via.i64);
        } else if (e.type == msgpack::type::POSITIVE_INTEGER) {
            out.push_back(static_cast<std::int64_t>(e.via.u64));
        } else {
            badType(key, "an array of int");
        }
    }
    return out;
}

MapReader MapReader::map(std::string_view key) const {
    const auto& o = require(key);
    if (o.type != msgpack::type::MAP) {
        badType(key, "map");
    }
    return MapReader(o, what_ + "." + std::string(key));
}

std::string MapReader::optionalStr(std::string_view key, std::string fallback) const {
    const msgpack::object* o = find(key);
    if (o == nullptr || o->type == msgpack::type::NIL) {
        return fallback;
    }
    return str(key);
}

bool MapReader::present(std::string_view key) const {
    const msgpack::object* o = find(key);
    return o != nullptr && o->type != msgpack::type::NIL;
}

std::vector<std::string> MapReader::optionalStrings(std::string_view key) const {
    return present(key) ? strings(key) : std::vector<std::string>{};
}

std::optional<bool> MapReader::optionalBoolean(std::string_view key) const {
    if (!present(key)) {
        return std::nullopt;
    }
    return boolean(key);
}

F32View MapReader::optionalFloats(std::string_view key, std::size_t count) const {
    return present(key) ? floats(key, count, true) : F32View{};
}

}  // namespace avatar_bridge
