// Injects the creation panel into the runtime module's factory, the way Epic's Live Link sources split editor
// UI from what a packaged game needs to restore a preset.

#include "AvatarBridgeSource.h"
#include "AvatarBridgeSourceFactory.h"
#include "Modules/ModuleInterface.h"
#include "Modules/ModuleManager.h"
#include "SAvatarBridgeSourcePanel.h"

class FAvatarBridgeEditorModule : public IModuleInterface
{
public:
	virtual void StartupModule() override
	{
		UAvatarBridgeSourceFactory::OnBuildCreationPanel.BindLambda(
			[](const UAvatarBridgeSourceFactory*, ULiveLinkSourceFactory::FOnLiveLinkSourceCreated OnSourceCreated) -> TSharedPtr<SWidget>
			{
				return SNew(SAvatarBridgeSourcePanel)
					.OnAddSource_Lambda([OnSourceCreated](const FAvatarBridgeConnectionSettings& Settings)
					{
						OnSourceCreated.ExecuteIfBound(UAvatarBridgeSourceFactory::CreateSourceFromSettings(Settings), Settings.ToConnectionString());
					});
			});
	}

	virtual void ShutdownModule() override
	{
		UAvatarBridgeSourceFactory::OnBuildCreationPanel.Unbind();
	}
};

IMPLEMENT_MODULE(FAvatarBridgeEditorModule, AvatarBridgeEditor)
