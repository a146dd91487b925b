#include "AvatarBridgeSettings.h"

#include "JsonObjectConverter.h"

FAvatarBridgeConnectionSettings::FAvatarBridgeConnectionSettings()
{
	// A face and a body subject out of the box; remove either in the panel.
	FAvatarBridgeSessionSettings Face;
	Face.Pipeline = EAvatarBridgePipeline::Face;
	FAvatarBridgeSessionSettings Motion;
	Motion.Pipeline = EAvatarBridgePipeline::Motion;
	Sessions = {Face, Motion};
}

FString FAvatarBridgeConnectionSettings::ToConnectionString() const
{
	FString Json;
	FJsonObjectConverter::UStructToJsonObjectString(*this, Json, 0, 0, 0, nullptr, false);
	return Json;
}

bool FAvatarBridgeConnectionSettings::FromConnectionString(const FString& ConnectionString, FAvatarBridgeConnectionSettings& Out)
{
	FAvatarBridgeConnectionSettings Parsed;
	Parsed.Sessions.Reset();  // take the string's sessions, not the defaults plus the string's
	if (!FJsonObjectConverter::JsonObjectStringToUStruct(ConnectionString, &Parsed, 0, 0))
	{
		return false;
	}
	Out = MoveTemp(Parsed);
	return true;
}
