// libzmq (the C library) and cppzmq (its header-only C++ binding), prebuilt by you and dropped in as
// described in ../README.md. Static libraries on every platform, so there is no DLL to stage or load.

using System.IO;
using UnrealBuildTool;

public class ZeroMQ : ModuleRules
{
	public ZeroMQ(ReadOnlyTargetRules Target) : base(Target)
	{
		Type = ModuleType.External;

		// include/: zmq.h (libzmq) and zmq.hpp, zmq_addon.hpp (cppzmq).
		PublicSystemIncludePaths.Add(Path.Combine(ModuleDirectory, "include"));
		string LibDir = Path.Combine(ModuleDirectory, "lib");

		if (Target.Platform == UnrealTargetPlatform.Win64)
		{
			// libzmq built with -DBUILD_STATIC=ON -DBUILD_SHARED=OFF, renamed to libzmq.lib. ZMQ_STATIC stops
			// zmq.h from declaring its functions __declspec(dllimport); the system libraries are libzmq's own.
			PublicAdditionalLibraries.Add(Path.Combine(LibDir, "Win64", "libzmq.lib"));
			PublicDefinitions.Add("ZMQ_STATIC");
			PublicSystemLibraries.AddRange(new string[] { "ws2_32.lib", "iphlpapi.lib", "advapi32.lib" });
		}
		else if (Target.Platform == UnrealTargetPlatform.Linux)
		{
			// Must be built with Unreal's own clang toolchain and libc++ (see ../README.md): libzmq is C++
			// inside, and a libstdc++ build does not link into an Unreal binary.
			PublicAdditionalLibraries.Add(Path.Combine(LibDir, "Linux", "libzmq.a"));
		}
		else if (Target.Platform == UnrealTargetPlatform.Mac)
		{
			// A universal (arm64 + x86_64) static library.
			PublicAdditionalLibraries.Add(Path.Combine(LibDir, "Mac", "libzmq.a"));
		}
	}
}
