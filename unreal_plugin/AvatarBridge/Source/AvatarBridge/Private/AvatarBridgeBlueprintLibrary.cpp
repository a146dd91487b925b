#include "AvatarBridgeBlueprintLibrary.h"

#include "AvatarBridgeSource.h"
#include "AvatarBridgeSourceFactory.h"
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
	// Through the factory, like the panel: the source's settings then name the factory and carry the
	// connection string (InitializeSettings), so a preset saved afterwards restores it.
	const TSharedPtr<ILiveLinkSource> Source = UAvatarBridgeSourceFactory::CreateSourceFromSettings(Settings);
	return Source.IsValid() && Client.AddSource(Source).IsValid();
}

bool UAvatarBridgeBlueprintLibrary::SendImageRGB8(FName Subject, int32 Width, int32 Height, const TArray<uint8>& Pixels)
{
	return FAvatarBridgeSource::SendImageRGB8(Subject, Width, Height, Pixels);
}

bool UAvatarBridgeBlueprintLibrary::SendAudioPCM16(FName Subject, int32 SampleRate, const TArray<uint8>& PCM16Bytes)
{
	const TArrayView<const int16> Samples(reinterpret_cast<const int16*>(PCM16Bytes.GetData()), PCM16Bytes.Num() / 2);
	return FAvatarBridgeSource::SendAudioPCM16(Subject, SampleRate, Samples);
}

bool UAvatarBridgeBlueprintLibrary::SendMusicFeatures(FName Subject, int32 Rows, const TArray<float>& Values)
{
	return FAvatarBridgeSource::SendMusicFeatures(Subject, Rows, Values);
}
