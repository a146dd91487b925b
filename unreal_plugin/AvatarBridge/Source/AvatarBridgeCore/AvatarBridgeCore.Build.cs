// The engine-independent C++ core (include/, src/), kept a plain CMake project with its own tests (tests/,
// fuzz/) so CI builds it without Unreal. External: Unreal compiles none of these files itself; the runtime
// module compiles src/ as one translation unit (AvatarBridge/Private/AvatarBridgeCore.cpp). Living under
// Source/ is what makes RunUAT BuildPlugin and Fab package it.

using System.IO;
using UnrealBuildTool;

public class AvatarBridgeCore : ModuleRules
{
	public AvatarBridgeCore(ReadOnlyTargetRules Target) : base(Target)
	{
		Type = ModuleType.External;
		PublicIncludePaths.Add(Path.Combine(ModuleDirectory, "include"));
	}
}
