// The "Avatar Bridge" entry in the Live Link panel's "+ Source" menu. Its settings panel edits
// FAvatarBridgeConnectionSettings; the source is recreated from the JSON connection string in presets.

#pragma once

#include "CoreMinimal.h"
#include "LiveLinkSourceFactory.h"

#include "AvatarBridgeSourceFactory.generated.h"

UCLASS()
class UAvatarBridgeSourceFactory : public ULiveLinkSourceFactory
{
	GENERATED_BODY()

public:
	virtual FText GetSourceDisplayName() const override;
	virtual FText GetSourceTooltip() const override;
	virtual EMenuType GetMenuType() const override { return EMenuType::SubPanel; }
	virtual TSharedPtr<SWidget> BuildCreationPanel(FOnLiveLinkSourceCreated OnLiveLinkSourceCreated) const override;
	virtual TSharedPtr<ILiveLinkSource> CreateSource(const FString& ConnectionString) const override;
};
