#pragma once

#include <map>
#include <string>

#include "avatar_bridge/OptionValue.hpp"

namespace avatar_bridge {

// What to open on the bridge, and under which Live Link subject name to publish it.
struct SessionSpec {
    std::string pipeline;  // "face" or "motion"
    std::string model;     // empty: the pipeline's default model
    std::map<std::string, OptionValue> options;
    std::string subjectName;  // empty: derived from the pipeline ("face", "motion") by the caller
    // Face, plugin side: mirror the face (left and right curves swapped, head and jaw reflected), for a
    // camera that shows the performer as a mirror does.
    bool mirror = false;
};

}  // namespace avatar_bridge
