#pragma once

#include <string>
#include <vector>

namespace avatar_bridge {

// What a Live Link subject looks like, fixed per session: Live Link's static data (FLiveLinkSkeletonStaticData:
// bone names, parents, curve/property names). Parents precede children; the root's parent is -1.
struct SubjectLayout {
    std::vector<std::string> boneNames;
    std::vector<int> boneParents;
    std::vector<std::string> curveNames;
};

}  // namespace avatar_bridge
