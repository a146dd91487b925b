#pragma once

#include <memory>

#include "avatar_bridge/Frame.hpp"
#include "avatar_bridge/ProtocolError.hpp"
#include "avatar_bridge/Rig.hpp"
#include "avatar_bridge/SubjectLayout.hpp"
#include "avatar_bridge/SubjectPose.hpp"

namespace avatar_bridge {

// Turns a session's rig into a Live Link subject layout and each of its frames into an Unreal-space pose.
class SubjectMapper {
public:
    virtual ~SubjectMapper() = default;

    // FaceSubjectMapper for a face rig (mirrored when asked), BodySubjectMapper for a body rig.
    static std::unique_ptr<SubjectMapper> create(const Rig& rig, bool mirrorFace = false);

    virtual const SubjectLayout& layout() const = 0;
    // A ProtocolError when the frame belongs to the other pipeline or does not fit the rig. The pose's timeNs is left 0.
    virtual Result<SubjectPose> pose(const DecodedFrame& frame) const = 0;
};

}  // namespace avatar_bridge
