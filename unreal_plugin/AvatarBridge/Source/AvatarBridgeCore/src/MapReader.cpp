#include "MapReader.hpp"

#include <limits>

namespace avatar_bridge {

MapReader::MapReader(const MsgPackReader& tree, std::uint32_t node, std::string what, DecodeStatus& status)
    : tree_(tree), node_(node), what_(std::move(what)), status_(status) {
    if (node_ == kNone) {
        return;
    }
    const MsgNode& map = tree_.node(node_);
    if (map.type != MsgType::Map) {
        status_.fail(ErrorCode::Malformed, what_ + ": expected a msgpack map");
        node_ = kNone;
        return;
    }
    std::uint32_t key = node_ + 1;
    for (std::uint32_t i = 0; i < map.size; ++i) {
        if (tree_.node(key).type != MsgType::Str) {
            status_.fail(ErrorCode::Malformed, what_ + ": map keys must be strings");
            node_ = kNone;
            return;
        }
        key = tree_.node(tree_.node(key).end).end;  // past the key, then past its value
    }
}

std::uint32_t MapReader::findIndex(std::string_view key) const {
    if (node_ == kNone) {
        return kNone;
    }
    std::uint32_t k = node_ + 1;
    for (std::uint32_t i = 0; i < tree_.node(node_).size; ++i) {
        const std::uint32_t value = tree_.node(k).end;
        if (tree_.node(k).str() == key) {
            return value;
        }
        k = tree_.node(value).end;
    }
    return kNone;
}

const MsgNode* MapReader::find(std::string_view key) const {
    const std::uint32_t index = findIndex(key);
    return index == kNone ? nullptr : &tree_.node(index);
}

const MsgNode* MapReader::require(std::string_view key) const {
    const MsgNode* o = find(key);
    if (o == nullptr) {
        status_.fail(ErrorCode::MissingField, what_ + ": missing field '" + std::string(key) + "'");
    }
    return o;
}

const MsgNode* MapReader::require(std::string_view key, MsgType type, std::string_view expected) const {
    const MsgNode* o = require(key);
    if (o != nullptr && o->type != type) {
        badType(key, expected);
        return nullptr;
    }
    return o;
}

void MapReader::badType(std::string_view key, std::string_view expected) const {
    status_.fail(ErrorCode::BadType, what_ + ": field '" + std::string(key) + "' must be " + std::string(expected));
}

std::string MapReader::str(std::string_view key) const {
    const MsgNode* o = require(key, MsgType::Str, "str");
    return o == nullptr ? std::string() : std::string(o->str());
}

std::uint64_t MapReader::uint(std::string_view key) const {
    const MsgNode* o = require(key, MsgType::PositiveInt, "a non-negative int");
    return o == nullptr ? 0 : o->u64;
}

std::int64_t MapReader::int64(std::string_view key) const {
    const MsgNode* o = require(key);
    if (o == nullptr) {
        return 0;
    }
    if (o->type == MsgType::NegativeInt) {
        return o->i64;
    }
    if (o->type != MsgType::PositiveInt || o->u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        badType(key, "a 64-bit int");
        return 0;
    }
    return static_cast<std::int64_t>(o->u64);
}

double MapReader::number(std::string_view key) const {
    const MsgNode* o = require(key);
    if (o == nullptr) {
        return 0.0;
    }
    switch (o->type) {
        case MsgType::Float: return o->f64;
        case MsgType::PositiveInt: return static_cast<double>(o->u64);
        case MsgType::NegativeInt: return static_cast<double>(o->i64);
        default: badType(key, "a number"); return 0.0;
    }
}

bool MapReader::boolean(std::string_view key) const {
    const MsgNode* o = require(key, MsgType::Boolean, "bool");
    return o != nullptr && o->boolean;
}

MapReader::Bytes MapReader::bin(std::string_view key) const {
    const MsgNode* o = require(key, MsgType::Bin, "bin");
    return o == nullptr ? Bytes{} : Bytes{o->bytes, o->size};
}

F32View MapReader::floats(std::string_view key, std::size_t count, bool allowEmpty) const {
    const MsgNode* o = require(key, MsgType::Bin, "bin");
    if (o == nullptr || (allowEmpty && o->size == 0)) {
        return {};
    }
    if (o->size != count * sizeof(float)) {
        status_.fail(ErrorCode::BadSize, what_ + ": field '" + std::string(key) + "' must hold " +
                                             std::to_string(count * sizeof(float)) + " bytes, got " +
                                             std::to_string(o->size));
        return {};
    }
    return {o->bytes, count};
}

std::vector<std::string> MapReader::strings(std::string_view key) const {
    std::vector<std::string> out;
    const std::uint32_t array = findIndex(key);
    if (require(key, MsgType::Array, "array") == nullptr) {
        return out;
    }
    out.reserve(tree_.node(array).size);
    for (std::uint32_t i = 0, e = array + 1; i < tree_.node(array).size; ++i, e = tree_.node(e).end) {
        if (tree_.node(e).type != MsgType::Str) {
            badType(key, "an array of str");
            return {};
        }
        out.emplace_back(tree_.node(e).str());
    }
    return out;
}

std::vector<std::int64_t> MapReader::ints(std::string_view key) const {
    std::vector<std::int64_t> out;
    const std::uint32_t array = findIndex(key);
    if (require(key, MsgType::Array, "array") == nullptr) {
        return out;
    }
    out.reserve(tree_.node(array).size);
    for (std::uint32_t i = 0, e = array + 1; i < tree_.node(array).size; ++i, e = tree_.node(e).end) {
        const MsgNode& n = tree_.node(e);
        if (n.type == MsgType::NegativeInt) {
            out.push_back(n.i64);
        } else if (n.type == MsgType::PositiveInt) {
            out.push_back(static_cast<std::int64_t>(n.u64));
        } else {
            badType(key, "an array of int");
            return {};
        }
    }
    return out;
}

MapReader MapReader::map(std::string_view key) const {
    const std::uint32_t index = findIndex(key);
    const bool ok = require(key, MsgType::Map, "map") != nullptr;
    return MapReader(tree_, ok ? index : kNone, what_ + "." + std::string(key), status_);
}

std::vector<MapReader> MapReader::maps(std::string_view key) const {
    std::vector<MapReader> out;
    const std::uint32_t array = findIndex(key);
    if (require(key, MsgType::Array, "array") == nullptr) {
        return out;
    }
    const std::string prefix = what_ + "." + std::string(key) + "[";
    for (std::uint32_t i = 0, e = array + 1; i < tree_.node(array).size && !status_.failed(); ++i, e = tree_.node(e).end) {
        out.emplace_back(tree_, e, prefix + std::to_string(i) + "]", status_);
    }
    return out;
}

std::string MapReader::optionalStr(std::string_view key, std::string fallback) const {
    return present(key) ? str(key) : fallback;
}

bool MapReader::present(std::string_view key) const {
    const MsgNode* o = find(key);
    return o != nullptr && o->type != MsgType::Nil;
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

std::vector<bool> MapReader::optionalBooleans(std::string_view key) const {
    std::vector<bool> out;
    if (!present(key)) {
        return out;
    }
    const std::uint32_t array = findIndex(key);
    if (require(key, MsgType::Array, "array") == nullptr) {
        return out;
    }
    out.reserve(tree_.node(array).size);
    for (std::uint32_t i = 0, e = array + 1; i < tree_.node(array).size; ++i, e = tree_.node(e).end) {
        if (tree_.node(e).type != MsgType::Boolean) {
            badType(key, "an array of bool");
            return {};
        }
        out.push_back(tree_.node(e).boolean);
    }
    return out;
}

F32View MapReader::optionalFloats(std::string_view key, std::size_t count) const {
    return present(key) ? floats(key, count, true) : F32View{};
}

}  // namespace avatar_bridge
