#include "AvatarBridgeSourceSettings.h"

UAvatarBridgeSourceSettings::UAvatarBridgeSourceSettings()
{
	// Connection.bInterpolateInPlugin defaults to true: the plugin already delivers one frame per tick.
	Mode = ELiveLinkSourceMode::Latest;
}
