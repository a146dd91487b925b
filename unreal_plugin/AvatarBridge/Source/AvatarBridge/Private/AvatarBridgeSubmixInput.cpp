// NEVER COMPILED (see the header). API names checked against Epic's API reference: ISubmixBufferListener
// (Engine), FAudioDevice::RegisterSubmixBufferListener / UnregisterSubmixBufferListener (a TSharedRef and a
// USoundSubmix& from UE 5.4, a raw pointer and a USoundSubmix* before), FAudioDevice::GetMainSubmixObject.

#include "AvatarBridgeSubmixInput.h"

#include "AudioDevice.h"
#include "AvatarBridgeModule.h"
#include "AvatarBridgeSource.h"
#include "Engine/World.h"
#include "Sound/SoundSubmix.h"

#define AVATAR_BRIDGE_SHARED_SUBMIX_LISTENER (ENGINE_MAJOR_VERSION > 5 || (ENGINE_MAJOR_VERSION == 5 && ENGINE_MINOR_VERSION >= 4))

class FAvatarBridgeSubmixListener : public ISubmixBufferListener
{
public:
	explicit FAvatarBridgeSubmixListener(FName InSubject)
		: Subject(InSubject)
	{
	}

	// Audio render thread. AudioData holds NumSamples interleaved samples of NumChannels channels.
	virtual void OnNewSubmixBuffer(const USoundSubmix* OwningSubmix, float* AudioData, int32 NumSamples, int32 NumChannels,
		const int32 SampleRate, double AudioClock) override
	{
		if (AudioData == nullptr || NumChannels <= 0 || NumSamples < NumChannels)
		{
			return;
		}
		const int32 Frames = NumSamples / NumChannels;
		Mono.SetNumUninitialized(Frames);  // grows once, then reused: no allocation per buffer
		const float Scale = 1.0f / static_cast<float>(NumChannels);
		for (int32 Frame = 0; Frame < Frames; ++Frame)
		{
			float Sum = 0.0f;
			for (int32 Channel = 0; Channel < NumChannels; ++Channel)
			{
				Sum += AudioData[Frame * NumChannels + Channel];
			}
			Mono[Frame] = Sum * Scale;
		}
		// False while the subject has no session (not connected yet, bridge restarting): the audio is dropped.
		FAvatarBridgeSource::SendAudioFloat(Subject, SampleRate, Mono);
	}

private:
	const FName Subject;
	TArray<float> Mono;  // audio render thread only
};

void UAvatarBridgeSubmixInput::BeginPlay()
{
	Super::BeginPlay();
	UWorld* World = GetWorld();
	FAudioDeviceHandle Device = World != nullptr ? World->GetAudioDevice() : FAudioDeviceHandle();
	if (!Device.IsValid())
	{
		UE_LOG(LogAvatarBridge, Warning, TEXT("%s: no audio device, no audio is sent to %s"), *GetName(), *Subject.ToString());
		return;
	}
	USoundSubmix& Target = Submix != nullptr ? *Submix : Device->GetMainSubmixObject();
	Listener = MakeShared<FAvatarBridgeSubmixListener, ESPMode::ThreadSafe>(Subject);
#if AVATAR_BRIDGE_SHARED_SUBMIX_LISTENER
	Device->RegisterSubmixBufferListener(Listener.ToSharedRef(), Target);
#else
	Device->RegisterSubmixBufferListener(Listener.Get(), &Target);
#endif
	ListenedSubmix = &Target;
}

void UAvatarBridgeSubmixInput::EndPlay(const EEndPlayReason::Type EndPlayReason)
{
	UWorld* World = GetWorld();
	FAudioDeviceHandle Device = World != nullptr ? World->GetAudioDevice() : FAudioDeviceHandle();
	if (Listener && Device.IsValid() && ListenedSubmix.IsValid())
	{
#if AVATAR_BRIDGE_SHARED_SUBMIX_LISTENER
		Device->UnregisterSubmixBufferListener(Listener.ToSharedRef(), *ListenedSubmix.Get());
#else
		Device->UnregisterSubmixBufferListener(Listener.Get(), ListenedSubmix.Get());
#endif
	}
	// From 5.4 the device holds its own reference until its audio thread has let go. Before 5.4 it holds a raw
	// pointer and removes it on the audio render thread a little later, so a pre-5.4 build must keep the listener
	// alive past that point: this component keeps it until it is destroyed (not reset here).
#if AVATAR_BRIDGE_SHARED_SUBMIX_LISTENER
	Listener.Reset();
#endif
	ListenedSubmix.Reset();
	Super::EndPlay(EndPlayReason);
}
