#include "avatar_bridge/SubjectMapper.hpp"

#include "avatar_bridge/BodySubjectMapper.hpp"
#include "avatar_bridge/FaceSubjectMapper.hpp"

namespace avatar_bridge {

std::unique_ptr<SubjectMapper> SubjectMapper::create(const Rig& rig, bool mirrorFace) {
    if (const auto* face = std::get_if<FaceRig>(&rig)) {
        return std::make_unique<FaceSubjectMapper>(*face, mirrorFace);
    }
    return std::make_unique<BodySubjectMapper>(std::get<BodyRig>(rig));
}

}  // namespace avatar_bridge
