// Compiles the engine-independent core (Plugins/AvatarBridge/Core/src) into this module. Unreal Build Tool only
// compiles sources inside a module's folder, while the core must stay a plain CMake project that builds and
// runs its tests without Unreal; so its sources are included here rather than copied or moved. The guards
// keep Unreal's warning settings and macros (check, verify, Windows types) away from zmq.h, cppzmq and
// msgpack-cxx, which the core's sources include.

#include "CoreMinimal.h"

#if PLATFORM_WINDOWS
#include "Windows/AllowWindowsPlatformTypes.h"
#endif
THIRD_PARTY_INCLUDES_START
#pragma push_macro("check")
#pragma push_macro("verify")
#undef check
#undef verify

#include "../../../Core/src/AvatarLink.cpp"
#include "../../../Core/src/BodySubjectMapper.cpp"
#include "../../../Core/src/BridgeClient.cpp"
#include "../../../Core/src/CurveKeys.cpp"
#include "../../../Core/src/Decoder.cpp"
#include "../../../Core/src/ErrorCode.cpp"
#include "../../../Core/src/FaceSubjectMapper.cpp"
#include "../../../Core/src/FlameToArkit.cpp"
#include "../../../Core/src/FrameClock.cpp"
#include "../../../Core/src/JitterBuffer.cpp"
#include "../../../Core/src/MapReader.cpp"
#include "../../../Core/src/PoseMailbox.cpp"
#include "../../../Core/src/Quat.cpp"
#include "../../../Core/src/RequestEncoder.cpp"
#include "../../../Core/src/SubjectFeed.cpp"
#include "../../../Core/src/SubjectMapper.cpp"
#include "../../../Core/src/UnrealAxes.cpp"

#pragma pop_macro("verify")
#pragma pop_macro("check")
THIRD_PARTY_INCLUDES_END
#if PLATFORM_WINDOWS
#include "Windows/HideWindowsPlatformTypes.h"
#endif
