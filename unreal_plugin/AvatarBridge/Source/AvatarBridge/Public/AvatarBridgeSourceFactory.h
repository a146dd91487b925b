// The "Avatar Bridge" entry of the Live Link panel's "+ Source" menu, and what recreates a source from a preset.
// In the runtime module, so presets also restore in a packaged game; its creation panel is an editor widget,
// injected by the editor module through OnBuildCreationPanel (the way Epic's own Live Link sources do it).

#pragma once

#include "CoreMinimal.h"
#include "LiveLinkSourceFactory.h"

#include "AvatarBridgeSettings.h"

#include "AvatarBridgeSourceFactory.generated.h"

UCLASS()
class AVATARBRIDGE_API UAvatarBridgeSourceFactory : public ULiveLinkSourceFactory
{
	GENERATED_BODY()

public:
	DECLARE_DELEGATE_RetVal_TwoParams(TSharedPtr<SWidget>, FBuildCreationPanelDelegate, const UAvatarBridgeSourceFactory*, FOnLiveLinkSourceCreated);
	/** Bound by the editor module; unbound in a game, where the menu is not shown. */
	static FBuildCreationPanelDelegate OnBuildCreationPanel;

	virtual FText GetSourceDisplayName() const override;
	virtual FText GetSourceTooltip() const override;
	virtual EMenuType GetMenuType() const override { return OnBuildCreationPanel.IsBound() ? EMenuType::SubPanel : EMenuType::Disabled; }
	virtual TSharedPtr<SWidget> BuildCreationPanel(FOnLiveLinkSourceCreated OnLiveLinkSourceCreated) const override;
	/** From a connection string (FAvatarBridgeConnectionSettings as JSON); null when it is not one. */
	virtual TSharedPtr<ILiveLinkSource> CreateSource(const FString& ConnectionString) const override;

	/** The one way sources are made (panel, presets, Blueprint), so each carries what recreates it. */
	static TSharedPtr<ILiveLinkSource> CreateSourceFromSettings(const FAvatarBridgeConnectionSettings& Settings);
};
