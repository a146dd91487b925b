#include "avatar_bridge/FaceSubjectMapper.hpp"

#include <array>
#include <string>
#include <string_view>

#include "avatar_bridge/ArkitNames.hpp"
#include "avatar_bridge/FlameToArkit.hpp"
#include "avatar_bridge/ProtocolError.hpp"
#include "avatar_bridge/SpeechNames.hpp"
#include "avatar_bridge/UnrealAxes.hpp"

namespace avatar_bridge {
namespace {

Quat quatAt(const F32View& v) { return Quat{v[0], v[1], v[2], v[3]}.normalized(); }

// kArkitNames index of each curve's other side ("EyeBlinkLeft" <-> "EyeBlinkRight"); itself when it has none.
constexpr std::array<std::size_t, kArkitNames.size()> arkitMirror() {
    std::array<std::size_t, kArkitNames.size()> other{};
    for (std::size_t i = 0; i < kArkitNames.size(); ++i) {
        other[i] = i;
        const std::string_view name = kArkitNames[i];
        for (std::size_t j = 0; j < kArkitNames.size(); ++j) {
            const std::string_view candidate = kArkitNames[j];
            const bool leftToRight = name.size() >= 4 && name.substr(name.size() - 4) == "Left" &&
                                     candidate.size() == name.size() + 1 &&
                                     candidate.substr(0, name.size() - 4) == name.substr(0, name.size() - 4) &&
                                     candidate.substr(name.size() - 4) == "Right";
            const bool rightToLeft = name.size() >= 5 && name.substr(name.size() - 5) == "Right" &&
                                     candidate.size() + 1 == name.size() &&
                                     candidate.substr(0, name.size() - 5) == name.substr(0, name.size() - 5) &&
                                     candidate.substr(candidate.size() - 4) == "Left";
            if (leftToRight || rightToLeft) {
                other[i] = j;
            }
        }
    }
    return other;
}
constexpr auto kArkitMirror = arkitMirror();

}  // namespace

FaceSubjectMapper::FaceSubjectMapper(const FaceRig& rig, bool mirror)
    : expressionCount_(rig.expression.size()),
      visemes_(rig.hasExtra("visemes")),
      vowels_(rig.hasExtra("vowels")),
      voice_(rig.hasExtra("voice")),
      mirror_(mirror) {
    layout_.boneNames = {kHeadBone, kJawBone};
    layout_.boneParents = {-1, 0};
    for (const auto name : kArkitNames) {
        layout_.curveNames.emplace_back(name);
    }
    layout_.curveNames.insert(layout_.curveNames.end(), rig.expression.begin(), rig.expression.end());
    layout_.curveNames.insert(layout_.curveNames.end(), rig.eyelids.begin(), rig.eyelids.end());
    for (const char* name : {"HeadYaw", "HeadPitch", "HeadRoll", "LeftEyeYaw", "LeftEyePitch", "LeftEyeRoll",
                             "RightEyeYaw", "RightEyePitch", "RightEyeRoll", "FaceFound"}) {
        layout_.curveNames.emplace_back(name);
    }
    if (visemes_) {
        layout_.curveNames.insert(layout_.curveNames.end(), kVisemeCurveNames.begin(), kVisemeCurveNames.end());
    }
    if (vowels_) {
        layout_.curveNames.insert(layout_.curveNames.end(), kVrmVowelCurveNames.begin(), kVrmVowelCurveNames.end());
    }
    if (voice_) {
        layout_.curveNames.emplace_back(kVoiceCurveName);
    }
    for (const auto& name : rig.blendshapes) {
        arkitSlot_.push_back(arkitIndex(name));
    }
    if (rig.body) {
        body_.emplace(*rig.body, mirror_);
        for (const char* name : {"BodyFound", "LeftHandFound", "RightHandFound"}) {
            layout_.curveNames.emplace_back(name);
        }
        const SubjectLayout& bones = body_->layout();
        const int first = static_cast<int>(layout_.boneNames.size());
        layout_.boneNames.insert(layout_.boneNames.end(), bones.boneNames.begin(), bones.boneNames.end());
        for (const int parent : bones.boneParents) {
            layout_.boneParents.push_back(parent < 0 ? -1 : parent + first);
        }
    }
}

Result<SubjectPose> FaceSubjectMapper::pose(const DecodedFrame& decoded) const {
    const auto* f = std::get_if<FaceFrame>(&decoded.frame);
    if (f == nullptr) {
        return ProtocolError{ErrorCode::BadValue, "face subject received a motion frame"};
    }
    SubjectPose p;
    p.seq = f->header.seq;
    const Quat jaw = quatAt(f->jaw);  // wire axes: FlameToArkit reads the jaw's own opening angle
    const Quat head = mirror_ ? UnrealAxes::mirrored(UnrealAxes::rotation(quatAt(f->head))) : UnrealAxes::rotation(quatAt(f->head));
    const Quat jawUnreal = mirror_ ? UnrealAxes::mirrored(UnrealAxes::rotation(jaw)) : UnrealAxes::rotation(jaw);
    p.rotations = {head, jawUnreal};
    p.translations = {Vec3{}, Vec3{}};
    p.curves.reserve(layout_.curveNames.size());

    FlameToArkit::Weights arkit{};
    if (f->blendshapes.size() == arkitSlot_.size() && !arkitSlot_.empty()) {
        for (std::size_t i = 0; i < arkitSlot_.size(); ++i) {
            if (arkitSlot_[i] < arkit.size()) {
                arkit[arkitSlot_[i]] = f->blendshapes[i];
            }
        }
    } else {
        arkit = FlameToArkit::map(f->expression, f->eyelids, jaw);
    }
    if (mirror_) {
        for (std::size_t i = 0; i < arkit.size(); ++i) {
            p.curves.push_back(arkit[kArkitMirror[i]]);
        }
    } else {
        p.curves.assign(arkit.begin(), arkit.end());
    }
    if (f->expression.size() != expressionCount_) {
        return ProtocolError{ErrorCode::BadSize, "face frame: 'expression' does not match the rig's " +
                                                    std::to_string(expressionCount_) + " names"};
    }
    for (std::size_t i = 0; i < f->expression.size(); ++i) {
        p.curves.push_back(f->expression[i]);
    }
    for (std::size_t i = 0; i < f->eyelids.size(); ++i) {
        p.curves.push_back(f->eyelids[mirror_ ? f->eyelids.size() - 1 - i : i]);  // [left, right]
    }
    // Live Link Face's scale for head angles: FRotator degrees / 180, i.e. radians / pi, in [-1, 1].
    const UnrealAxes::Rotator r = UnrealAxes::rotator(head);
    constexpr float kInvPi = 0.318309886f;
    p.curves.insert(p.curves.end(), {r.yaw * kInvPi, r.pitch * kInvPi, r.roll * kInvPi});
    // Eye angles on the head's scale (radians / pi, Unreal's signs: +yaw to the subject's right, +pitch up) from
    // the frame's gaze (left yaw, pitch, right yaw, pitch; +yaw to the subject's left); roll is always 0. No
    // gaze (FLAME models): zeros, like the bridge's own Live Link Face sender. Mirrored: sides swap, yaw flips.
    if (f->gaze.size() == 4) {
        const float sign = mirror_ ? 1.0f : -1.0f;
        const std::size_t left = mirror_ ? 2 : 0;
        const std::size_t right = mirror_ ? 0 : 2;
        p.curves.insert(p.curves.end(), {sign * f->gaze[left] * kInvPi, f->gaze[left + 1] * kInvPi, 0.0f,
                                         sign * f->gaze[right] * kInvPi, f->gaze[right + 1] * kInvPi, 0.0f});
    } else {
        p.curves.insert(p.curves.end(), kEyeCurves, 0.0f);
    }
    p.curves.push_back(f->faceFound ? 1.0f : 0.0f);
    // Speech channels the rig announced; a frame without them (the decoder checked their sizes) reads 0.
    const auto appendOrZeros = [&p](const F32View& values, std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) {
            p.curves.push_back(values.size() == count ? values[i] : 0.0f);
        }
    };
    if (visemes_) {
        appendOrZeros(f->visemes, kVisemeCurveNames.size());
    }
    if (vowels_) {
        appendOrZeros(f->vowels, kVrmVowelCurveNames.size());
    }
    if (voice_) {
        p.curves.push_back(f->voice.value_or(false) ? 1.0f : 0.0f);
    }
    if (body_) {
        const auto flag = [](const std::optional<bool>& v) { return v.value_or(false) ? 1.0f : 0.0f; };
        const std::optional<bool>& left = mirror_ ? f->rightHandFound : f->leftHandFound;
        const std::optional<bool>& right = mirror_ ? f->leftHandFound : f->rightHandFound;
        p.curves.insert(p.curves.end(), {flag(f->bodyFound), flag(left), flag(right)});
        if (const auto error = body_->append(f->body, Vec3{}, p)) {
            return ProtocolError{error->code, "face frame: 'body' does not fit the rig's body (" + error->message + ")"};
        }
    }
    return p;
}

}  // namespace avatar_bridge
