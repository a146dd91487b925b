// Runtime module: the Live Link source, its factory and settings, the SMPL retarget asset, Blueprint functions
// and the FSocket transport. All protocol, networking and animation logic lives in the engine-independent core
// (../AvatarBridgeCore, plain C++17 with its own msgpack reader and ZMTP client, built and tested with CMake
// outside Unreal); this module compiles those sources in (Private/AvatarBridgeCore.cpp) and adapts them. Nothing
// needs fetching by hand: copy the plugin into Plugins/ and build.

using System.IO;
using UnrealBuildTool;

public class AvatarBridge : ModuleRules
{
	public AvatarBridge(ReadOnlyTargetRules Target) : base(Target)
	{
		PCHUsage = PCHUsageMode.UseExplicitOrSharedPCHs;

		// The core reports errors as values (ProtocolError, Result<T>) and is compiled with -fno-exceptions in CI
		// (scripts/test_cpp.sh), as Unreal compiles its modules by default. Only the optional libzmq build below
		// turns exceptions on: cppzmq throws, and BridgeClientLibzmq.cpp catches all of it on its own thread.
		bEnableExceptions = false;

		PrivateIncludePaths.Add(Path.Combine(PluginDirectory, "Source", "AvatarBridgeCore", "src"));

		PublicDependencyModuleNames.AddRange(new string[]
		{
			"Core",
			"CoreUObject",
			"Engine",
			"LiveLinkInterface",
			"LiveLinkAnimationCore",
		});

		PrivateDependencyModuleNames.AddRange(new string[]
		{
			"AvatarBridgeCore",
			"Json",
			"ImageWrapper", // JPEG encoding of media texture images (AvatarBridgeMediaTextureInput, JpegQuality)
			"JsonUtilities",
			"MediaAssets",  // UMediaTexture (AvatarBridgeMediaTextureInput)
			"Networking",
			"RenderCore",   // ENQUEUE_RENDER_COMMAND, FTextureResource
			"RHI",          // FRHIGPUTextureReadback
			"Sockets",
		});

		// Optional: a static libzmq dropped into ../ThirdParty/ZeroMQ (see its README) switches the core to its
		// libzmq transport, which adds CURVE for a remote bridge. Without it the core's own ZMTP client runs
		// over FSocket and nothing needs building.
		string ZmqDir = Path.Combine(PluginDirectory, "Source", "ThirdParty", "ZeroMQ");
		string ZmqLib = null;
		if (Target.Platform == UnrealTargetPlatform.Win64) { ZmqLib = Path.Combine(ZmqDir, "lib", "Win64", "libzmq.lib"); }
		else if (Target.Platform == UnrealTargetPlatform.Linux) { ZmqLib = Path.Combine(ZmqDir, "lib", "Linux", "libzmq.a"); }
		else if (Target.Platform == UnrealTargetPlatform.Mac) { ZmqLib = Path.Combine(ZmqDir, "lib", "Mac", "libzmq.a"); }
		if (ZmqLib != null && File.Exists(ZmqLib) && File.Exists(Path.Combine(ZmqDir, "include", "zmq.hpp")))
		{
			PublicSystemIncludePaths.Add(Path.Combine(ZmqDir, "include"));
			PublicAdditionalLibraries.Add(ZmqLib);
			PublicDefinitions.Add("AVATAR_BRIDGE_WITH_LIBZMQ=1");
			bEnableExceptions = true;
			if (Target.Platform == UnrealTargetPlatform.Win64)
			{
				PublicDefinitions.Add("ZMQ_STATIC");
				PublicSystemLibraries.AddRange(new string[] { "ws2_32.lib", "iphlpapi.lib", "advapi32.lib" });
			}
		}
		else
		{
			PublicDefinitions.Add("AVATAR_BRIDGE_WITH_LIBZMQ=0");
		}
	}
}
