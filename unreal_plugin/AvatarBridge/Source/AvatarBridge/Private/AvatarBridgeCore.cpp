// Compiles the engine-independent core (Source/AvatarBridgeCore/src) into this module as one translation unit
// (CI compiles the same list the same way: scripts/test_cpp.sh). The core must stay a plain CMake project that
// builds and runs its tests without Unreal, so its sources are included here rather than copied. The guards
// keep Unreal's macros (check, verify) and warning settings away from the core's standard-library code (and
// libzmq in that build).
// PosixNetwork.cpp is left out: in Unreal the core talks through FSocket (UnrealNetwork.cpp).

#include "CoreMinimal.h"

#if PLATFORM_WINDOWS && AVATAR_BRIDGE_WITH_LIBZMQ
#include "Windows/AllowWindowsPlatformTypes.h"
#include "Windows/PreWindowsApi.h"
#endif
THIRD_PARTY_INCLUDES_START
#pragma push_macro("check")
#pragma push_macro("verify")
#undef check
#undef verify

#if AVATAR_BRIDGE_WITH_LIBZMQ
#include "../../AvatarBridgeCore/src/BridgeClientLibzmq.cpp"
#else
#include "../../AvatarBridgeCore/src/BridgeClient.cpp"
#endif
#include "../../AvatarBridgeCore/src/AvatarLink.cpp"
#include "../../AvatarBridgeCore/src/BodySubjectMapper.cpp"
#include "../../AvatarBridgeCore/src/CurveKeys.cpp"
#include "../../AvatarBridgeCore/src/Decoder.cpp"
#include "../../AvatarBridgeCore/src/ErrorCode.cpp"
#include "../../AvatarBridgeCore/src/FaceSubjectMapper.cpp"
#include "../../AvatarBridgeCore/src/FlameToArkit.cpp"
#include "../../AvatarBridgeCore/src/FrameClock.cpp"
#include "../../AvatarBridgeCore/src/JitterBuffer.cpp"
#include "../../AvatarBridgeCore/src/MapReader.cpp"
#include "../../AvatarBridgeCore/src/MotionCrowd.cpp"
#include "../../AvatarBridgeCore/src/MsgPackReader.cpp"
#include "../../AvatarBridgeCore/src/PoseMailbox.cpp"
#include "../../AvatarBridgeCore/src/Quat.cpp"
#include "../../AvatarBridgeCore/src/RequestEncoder.cpp"
#include "../../AvatarBridgeCore/src/SceneTime.cpp"
#include "../../AvatarBridgeCore/src/SmplRetarget.cpp"
#include "../../AvatarBridgeCore/src/SubjectFeed.cpp"
#include "../../AvatarBridgeCore/src/SubjectMapper.cpp"
#include "../../AvatarBridgeCore/src/UnrealAxes.cpp"
#include "../../AvatarBridgeCore/src/Zmtp.cpp"
#include "../../AvatarBridgeCore/src/ZmtpPeer.cpp"

#pragma pop_macro("verify")
#pragma pop_macro("check")
THIRD_PARTY_INCLUDES_END
#if PLATFORM_WINDOWS && AVATAR_BRIDGE_WITH_LIBZMQ
#include "Windows/PostWindowsApi.h"
#include "Windows/HideWindowsPlatformTypes.h"
#endif
