#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "avatar_bridge/ProtocolError.hpp"

// The value of a Result the test expects to hold one; otherwise a test failure naming the error, and a default
// value so the test goes on to report what else differs.
template <class T>
T decoded(avatar_bridge::Result<T> r) {
    if (!r) {
        ADD_FAILURE() << "not decoded: " << r.error().message;
        return T{};
    }
    return std::move(r).value();
}

// The error code of a Result the test expects to have failed.
template <class T>
avatar_bridge::ErrorCode errorOf(const avatar_bridge::Result<T>& r) {
    if (r) {
        ADD_FAILURE() << "decoded although it should not";
        return avatar_bridge::ErrorCode::Internal;
    }
    return r.error().code;
}
