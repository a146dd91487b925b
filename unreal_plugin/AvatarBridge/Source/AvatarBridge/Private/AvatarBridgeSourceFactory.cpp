#include "AvatarBridgeSourceFactory.h"

#include "AvatarBridgeSource.h"

#define LOCTEXT_NAMESPACE "AvatarBridgeSourceFactory"

UAvatarBridgeSourceFactory::FBuildCreationPanelDelegate UAvatarBridgeSourceFactory::OnBuildCreationPanel;

FText UAvatarBridgeSourceFactory::GetSourceDisplayName() const
{
	return LOCTEXT("DisplayName", "Avatar Bridge");
}

FText UAvatarBridgeSourceFactory::GetSourceTooltip() const
{
	return LOCTEXT("Tooltip", "Face (ARKit-52 / FLAME) and body (SMPL) animation from an avatar-bridge server");
}

TSharedPtr<SWidget> UAvatarBridgeSourceFactory::BuildCreationPanel(FOnLiveLinkSourceCreated OnLiveLinkSourceCreated) const
{
	return OnBuildCreationPanel.IsBound() ? OnBuildCreationPanel.Execute(this, OnLiveLinkSourceCreated) : TSharedPtr<SWidget>();
}

TSharedPtr<ILiveLinkSource> UAvatarBridgeSourceFactory::CreateSource(const FString& ConnectionString) const
{
	FAvatarBridgeConnectionSettings Settings;
	if (!FAvatarBridgeConnectionSettings::FromConnectionString(ConnectionString, Settings))
	{
		return nullptr;
	}
	return CreateSourceFromSettings(Settings);
}

TSharedPtr<ILiveLinkSource> UAvatarBridgeSourceFactory::CreateSourceFromSettings(const FAvatarBridgeConnectionSettings& Settings)
{
	return MakeShared<FAvatarBridgeSource>(Settings);
}

#undef LOCTEXT_NAMESPACE
