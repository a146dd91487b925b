// Editor module: the "Avatar Bridge" entry of the Live Link panel's "+ Source" menu and its settings panel.

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
