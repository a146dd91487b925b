// Feeds a Media Texture (a webcam through a Media Player with a capture-device source, or any video) to the
// session behind a face subject as `image` inputs, at most ImagesPerSecond. Thin by design: on the render thread
// it copies the texture into a GPU readback (no stall), and once the copy has landed converts it to RGB8 and hands
// it to FAvatarBridgeSource::SendImageRGB8, which never waits on the network (the core's AvatarLink::sendImage,
// tested against a live bridge's face tracker in Source/AvatarBridgeCore/tests). 8-bit BGRA and RGBA textures only
// (the Media Texture's default output); at most 2,097,152 pixels (the bridge's limit, e.g. 1920 x 1080).
// With JpegQuality > 0 the image goes as JPEG instead (protocol 1.3, ~20x fewer bytes): the landed copy is handed
// to a background task that encodes it with the engine's IImageWrapper and sends it with SendImageJPEG (the core's
// AvatarLink::sendJpeg, unit-tested; the bridge's JPEG path is tested in tests/test_jpeg_input.py).
// NEVER COMPILED: Unreal Engine is not available where this plugin is developed (README, "What was never compiled").

#pragma once

#include "CoreMinimal.h"
#include "Components/ActorComponent.h"

#include "AvatarBridgeMediaTextureInput.generated.h"

class UMediaTexture;
struct FAvatarBridgeTextureReader;

UCLASS(ClassGroup = (AvatarBridge), meta = (BlueprintSpawnableComponent))
class AVATARBRIDGE_API UAvatarBridgeMediaTextureInput : public UActorComponent
{
	GENERATED_BODY()

public:
	UAvatarBridgeMediaTextureInput();

	/** The Live Link subject whose session gets the images: a Face session of an Avatar Bridge source. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	FName Subject = TEXT("AvatarBridgeFace");

	/** The texture the camera (or video) plays into. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	TObjectPtr<UMediaTexture> MediaTexture;

	/** Images sent per second at most (the face tracker runs at 30). */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge", meta = (ClampMin = "1.0", ClampMax = "120.0"))
	float ImagesPerSecond = 30.0f;

	/** 0: raw RGB8. 1-100: each image is sent as a JPEG of this quality (needs a bridge with protocol 1.3). */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge", meta = (ClampMin = "0", ClampMax = "100"))
	int32 JpegQuality = 0;

	virtual void TickComponent(float DeltaTime, ELevelTick TickType, FActorComponentTickFunction* ThisTickFunction) override;
	virtual void EndPlay(const EEndPlayReason::Type EndPlayReason) override;

private:
	TSharedPtr<FAvatarBridgeTextureReader, ESPMode::ThreadSafe> Reader;  // used on the render thread
	double NextImageSeconds = 0.0;
};
