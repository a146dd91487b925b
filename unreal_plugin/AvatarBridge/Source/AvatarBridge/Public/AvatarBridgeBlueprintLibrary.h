// Blueprint access: add a source at runtime (packaged games have no Live Link panel), and feed inputs to the
// sessions behind subjects. The Send functions may be called from any thread (e.g. an audio capture callback).

#pragma once

#include "CoreMinimal.h"
#include "Kismet/BlueprintFunctionLibrary.h"

#include "AvatarBridgeSettings.h"

#include "AvatarBridgeBlueprintLibrary.generated.h"

UCLASS()
class AVATARBRIDGE_API UAvatarBridgeBlueprintLibrary : public UBlueprintFunctionLibrary
{
	GENERATED_BODY()

public:
	/** Adds an Avatar Bridge source to Live Link through its factory, as the panel does (so presets restore it). False without Live Link. */
	UFUNCTION(BlueprintCallable, Category = "Avatar Bridge")
	static bool AddAvatarBridgeSource(const FAvatarBridgeConnectionSettings& Settings);

	/** Sends one camera image (Width * Height * 3 bytes, rows top to bottom, R G B) to a face subject's session. */
	UFUNCTION(BlueprintCallable, Category = "Avatar Bridge")
	static bool SendImageRGB8(FName Subject, int32 Width, int32 Height, const TArray<uint8>& Pixels);

	/** Sends mono 16-bit little-endian PCM (2 bytes per sample, any chunk size) to a motion or speech subject's session. */
	UFUNCTION(BlueprintCallable, Category = "Avatar Bridge")
	static bool SendAudioPCM16(FName Subject, int32 SampleRate, const TArray<uint8>& PCM16Bytes);

	/** Sends rows of 35 AIST++ music features (Rows * 35 values) to a motion subject's session. */
	UFUNCTION(BlueprintCallable, Category = "Avatar Bridge")
	static bool SendMusicFeatures(FName Subject, int32 Rows, const TArray<float>& Values);
};
