// Editor module: injects the creation panel (SAvatarBridgeSourcePanel) into the runtime module's source factory.

using UnrealBuildTool;

public class AvatarBridgeEditor : ModuleRules
{
	public AvatarBridgeEditor(ReadOnlyTargetRules Target) : base(Target)
	{
		PCHUsage = PCHUsageMode.UseExplicitOrSharedPCHs;

		PrivateDependencyModuleNames.AddRange(new string[]
		{
			"AvatarBridge",
			"Core",
			"CoreUObject",
			"LiveLinkInterface",
			"PropertyEditor",
			"Slate",
			"SlateCore",
		});
	}
}
