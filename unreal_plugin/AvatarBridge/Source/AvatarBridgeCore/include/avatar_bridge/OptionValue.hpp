#pragma once

#include <string>
#include <utility>
#include <variant>

namespace avatar_bridge {

// One `open` option value (docs/protocol.md §4.3): bool, number or string. A class rather than a bare
// std::variant so that a string literal can never silently become `true` (pre-P0608 variant conversion).
class OptionValue {
public:
    using Value = std::variant<bool, double, std::string>;

    OptionValue(bool v) : value_(v) {}                     // NOLINT: implicit by design
    OptionValue(double v) : value_(v) {}                   // NOLINT
    OptionValue(const char* v) : value_(std::string(v)) {}  // NOLINT
    OptionValue(std::string v) : value_(std::move(v)) {}   // NOLINT

    const Value& value() const { return value_; }
    bool operator==(const OptionValue& o) const { return value_ == o.value_; }

private:
    Value value_;
};

}  // namespace avatar_bridge
