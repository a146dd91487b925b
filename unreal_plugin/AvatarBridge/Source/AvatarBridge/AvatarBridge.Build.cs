// Runtime module: the Live Link source. All protocol, networking and animation logic lives in the
// engine-independent core (../../Core, plain C++17, built and tested with CMake outside Unreal); this module
// compiles those sources in (Private/AvatarBridgeCore.cpp) and adapts them to Live Link.

using System.IO;
using UnrealBuildTool;

public class AvatarBridge : ModuleRules
{
	public AvatarBridge(ReadOnlyTargetRules Target) : base(Target)
	{
		PCHUsage = PCHUsageMode.UseExplicitOrSharedPCHs;

		// cppzmq and msgpack-cxx report errors with exceptions; the core catches them on its own threads,
		// so nothing ever unwinds into engine code.
		bEnableExceptions = true;

		string CoreDir = Path.Combine(PluginDirectory, "Core");
		PrivateIncludePaths.Add(Path.Combine(CoreDir, "include"));
		PrivateIncludePaths.Add(Path.Combine(CoreDir, "src"));

		PublicDependencyModuleNames.AddRange(new string[]
		{
			"Core",
			"CoreUObject",
			"Engine",
			"LiveLinkInterface",
		});

		PrivateDependencyModuleNames.AddRange(new string[]
		{
			"Json",
			"JsonUtilities",
			"MsgPack",
			"ZeroMQ",
		});
	}
}
