// The source's page in the Live Link panel's details (ILiveLinkSource::GetSettingsClass): host, ports and sessions
// stay visible and editable after the source was added (an edit reconnects), and the evaluation mode defaults
// to Latest while the plugin interpolates, so Live Link does not buffer on top of the plugin's jitter buffer.

#pragma once

#include "CoreMinimal.h"
#include "LiveLinkSourceSettings.h"

#include "AvatarBridgeSettings.h"

#include "AvatarBridgeSourceSettings.generated.h"

UCLASS()
class AVATARBRIDGE_API UAvatarBridgeSourceSettings : public ULiveLinkSourceSettings
{
	GENERATED_BODY()

public:
	UAvatarBridgeSourceSettings();

	UPROPERTY(EditAnywhere, Category = "Avatar Bridge", meta = (ShowOnlyInnerProperties))
	FAvatarBridgeConnectionSettings Connection;
};
