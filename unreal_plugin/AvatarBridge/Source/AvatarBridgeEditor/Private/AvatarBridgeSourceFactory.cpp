#include "AvatarBridgeSourceFactory.h"

#include "AvatarBridgeSource.h"
#include "SAvatarBridgeSourcePanel.h"

#define LOCTEXT_NAMESPACE "AvatarBridgeSourceFactory"

FText UAvatarBridgeSourceFactory::GetSourceDisplayName() const
{
	return LOCTEXT("DisplayName", "Avatar Bridge");
}

FText UAvatarBridgeSourceFactory::GetSourceTooltip() const
{
	return LOCTEXT("Tooltip", "Face (ARKit-52 / FLAME) and body (SMPL) animation from an avatar-bridge server over ZeroMQ");
}

TSharedPtr<SWidget> UAvatarBridgeSourceFactory::BuildCreationPanel(FOnLiveLinkSourceCreated OnLiveLinkSourceCreated) const
{
	return SNew(SAvatarBridgeSourcePanel)
		.OnAddSource_Lambda([OnLiveLinkSourceCreated](const FAvatarBridgeConnectionSettings& Settings)
		{
			OnLiveLinkSourceCreated.ExecuteIfBound(MakeShared<FAvatarBridgeSource>(Settings), Settings.ToConnectionString());
		});
}

TSharedPtr<ILiveLinkSource> UAvatarBridgeSourceFactory::CreateSource(const FString& ConnectionString) const
{
	FAvatarBridgeConnectionSettings Settings;
	if (!FAvatarBridgeConnectionSettings::FromConnectionString(ConnectionString, Settings))
	{
		return nullptr;
	}
	return MakeShared<FAvatarBridgeSource>(Settings);
}

#undef LOCTEXT_NAMESPACE
