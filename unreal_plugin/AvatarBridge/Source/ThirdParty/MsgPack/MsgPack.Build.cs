// msgpack-cxx (msgpack-c's C++ side), header-only; dropped in as described in ../README.md.

using System.IO;
using UnrealBuildTool;

public class MsgPack : ModuleRules
{
	public MsgPack(ReadOnlyTargetRules Target) : base(Target)
	{
		Type = ModuleType.External;

		// include/: msgpack.hpp and the msgpack/ folder next to it.
		PublicSystemIncludePaths.Add(Path.Combine(ModuleDirectory, "include"));
		// msgpack-cxx 4.x uses Boost only for optional adaptors the plugin does not need.
		PublicDefinitions.Add("MSGPACK_NO_BOOST=1");
	}
}
