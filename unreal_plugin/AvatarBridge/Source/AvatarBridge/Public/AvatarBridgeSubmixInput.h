// Feeds the audio of a submix to the session behind a speech (or motion) subject: the main mix (everything the
// game plays, a text-to-speech voice included), or a submix an Audio Capture component plays the microphone into.
// Thin by design: the listener downmixes each rendered buffer to mono on the audio render thread and hands it to
// FAvatarBridgeSource::SendAudioFloat, which finds the subject under a lock and never waits on the network (the
// core's AvatarLink::sendAudio, tested against a live bridge in Source/AvatarBridgeCore/tests).
// NEVER COMPILED: Unreal Engine is not available where this plugin is developed (README, "What was never compiled").

#pragma once

#include "CoreMinimal.h"
#include "Components/ActorComponent.h"

#include "AvatarBridgeSubmixInput.generated.h"

class FAvatarBridgeSubmixListener;
class USoundSubmix;

UCLASS(ClassGroup = (AvatarBridge), meta = (BlueprintSpawnableComponent))
class AVATARBRIDGE_API UAvatarBridgeSubmixInput : public UActorComponent
{
	GENERATED_BODY()

public:
	/** The Live Link subject whose session gets the audio: a Speech (or Motion) session of an Avatar Bridge source. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	FName Subject = TEXT("AvatarBridgeSpeech");

	/** The submix to listen to; none: the main submix. Set before BeginPlay. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Avatar Bridge")
	TObjectPtr<USoundSubmix> Submix;

	virtual void BeginPlay() override;
	virtual void EndPlay(const EEndPlayReason::Type EndPlayReason) override;

private:
	TSharedPtr<FAvatarBridgeSubmixListener, ESPMode::ThreadSafe> Listener;
	TWeakObjectPtr<USoundSubmix> ListenedSubmix;
};
