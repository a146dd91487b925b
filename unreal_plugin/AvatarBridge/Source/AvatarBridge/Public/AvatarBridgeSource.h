// The Live Link source: a thin adapter over the core's avatar_bridge::AvatarLink, which owns the sockets,
// sessions, reconnects and jitter buffering on its own threads. With Interpolate In Plugin, Update() (game
// thread) pushes the pose interpolated to the tick; without, every frame is pushed from the receive thread as
// it arrives, with its own time and timecode (SceneTime). Nothing here waits on the network or throws.

#pragma once

#include "CoreMinimal.h"
#include "ILiveLinkSource.h"
#include "LiveLinkTypes.h"

#include <memory>

#include "AvatarBridgeSettings.h"

class ILiveLinkClient;
class ULiveLinkSourceSettings;

namespace avatar_bridge
{
class AvatarLink;
class SubjectFeed;
struct SubjectLayout;
struct SubjectPose;
}

class AVATARBRIDGE_API FAvatarBridgeSource : public ILiveLinkSource
{
public:
	explicit FAvatarBridgeSource(const FAvatarBridgeConnectionSettings& InSettings);
	virtual ~FAvatarBridgeSource() override;

	// ILiveLinkSource
	virtual void ReceiveClient(ILiveLinkClient* InClient, FGuid InSourceGuid) override;
	virtual void InitializeSettings(ULiveLinkSourceSettings* InSettings) override;
	virtual TSubclassOf<ULiveLinkSourceSettings> GetSettingsClass() const override;
	virtual void OnSettingsChanged(ULiveLinkSourceSettings* InSettings, const FPropertyChangedEvent& PropertyChangedEvent) override;
	virtual void Update() override;
	virtual bool IsSourceStillValid() const override;
	/** Flag-then-poll: asks the link to stop and returns false until its threads are done (Live Link calls again). */
	virtual bool RequestSourceShutdown() override;
	virtual FText GetSourceType() const override;
	virtual FText GetSourceMachineName() const override;
	virtual FText GetSourceStatus() const override;

	const FAvatarBridgeConnectionSettings& GetSettings() const { return Settings; }

	// Inputs for the session behind a subject, from any thread. False when the subject has no session right now
	// (not connected yet, or the bridge is restarting); errors show in the log.
	/** Width * Height * 3 bytes, rows top to bottom, R G B. Face subjects. */
	static bool SendImageRGB8(FName Subject, int32 Width, int32 Height, TArrayView<const uint8> Pixels);
	/** The bytes of one upright JPEG file (protocol 1.3: the bridge reads the size from its header). Face subjects. */
	static bool SendImageJPEG(FName Subject, TArrayView64<const uint8> Jpeg);
	/** Mono 16-bit PCM in capture order, any chunk size up to one second. Motion and speech subjects. */
	static bool SendAudioPCM16(FName Subject, int32 SampleRate, TArrayView<const int16> Samples);
	/** Mono float PCM in [-1, 1] (what a submix renders), in capture order, up to one second. Motion and speech subjects. */
	static bool SendAudioFloat(FName Subject, int32 SampleRate, TArrayView<const float> Samples);
	/** Rows of 35 AIST++ music features, one row per output frame. Motion subjects. */
	static bool SendMusicFeatures(FName Subject, int32 Rows, TArrayView<const float> Values);

	/** What the receive thread needs to push, shared with it so a source being torn down is never touched. */
	struct FPushTarget;

private:
	struct FSubjectState
	{
		uint64 PushedVersion = 0;
		uint64 ReportedErrors = 0;
	};

	void StartLink();
	void UpdateSubject(avatar_bridge::SubjectFeed& Feed, FName Name, double PlatformNowSeconds, int64 WallNowNs);

	FAvatarBridgeConnectionSettings Settings;
	ILiveLinkClient* Client = nullptr;
	FGuid SourceGuid;
	std::shared_ptr<avatar_bridge::AvatarLink> Link;
	std::shared_ptr<FPushTarget> Push;
	/** A link being replaced after a settings edit: polled in Update() until it has stopped. */
	std::shared_ptr<avatar_bridge::AvatarLink> Retiring;
	FString StartError;
	TMap<FName, FSubjectState> Subjects;  // game thread only
	bool bWasConnected = false;
};
