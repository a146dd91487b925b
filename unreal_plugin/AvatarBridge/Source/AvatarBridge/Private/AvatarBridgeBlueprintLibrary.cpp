#include "AvatarBridgeBlueprintLibrary.h"

#include "AvatarBridgeModule.h"
#include "AvatarBridgeSource.h"
#include "Features/IModularFeatures.h"
#include "ILiveLinkClient.h"

bool UAvatarBridgeBlueprintLibrary::AddAvatarBridgeSource(const FAvatarBridgeConnectionSettings& Settings)
{
	IModularFeatures& Features = IModularFeatures::Get();
	if (!Features.IsModularFeatureAvailable(ILiveLinkClient::ModularFeatureName))
	{
		return false;
	}
	ILiveLinkClient& Client = Features.GetModularFeature<ILiveLinkClient>(ILiveLinkClient::ModularFeatureName);
	return Client.AddSource(MakeShared<FAvatarBridgeSource>(Settings)).IsValid();
}

bool UAvatarBridgeBlueprintLibrary::SendImageRGB8(FName Subject, int32 Width, int32 Height, const TArray<uint8>& Pixels)
{
	FAvatarBridgeSource* Source = FAvatarBridgeModule::Get().FindSourceForSubject(Subject);
	return Source && Source->SendImageRGB8(Subject, Width, Height, Pixels);
}

bool UAvatarBridgeBlueprintLibrary::SendAudioPCM16(FName Subject, int32 SampleRate, const TArray<uint8>& PCM16Bytes)
{
	FAvatarBridgeSource* Source = FAvatarBridgeModule::Get().FindSourceForSubject(Subject);
	const TArrayView<const int16> Samples(reinterpret_cast<const int16*>(PCM16Bytes.GetData()), PCM16Bytes.Num() / 2);
	return Source && Source->SendAudioPCM16(Subject, SampleRate, Samples);
}

bool UAvatarBridgeBlueprintLibrary::SendMusicFeatures(FName Subject, int32 Rows, const TArray<float>& Values)
{
	FAvatarBridgeSource* Source = FAvatarBridgeModule::Get().FindSourceForSubject(Subject);
	return Source && Source->SendMusicFeatures(Subject, Rows, Values);
}
