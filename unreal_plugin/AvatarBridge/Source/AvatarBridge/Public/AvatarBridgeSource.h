// The Live Link source: a thin adapter over the core's avatar_bridge::AvatarLink, which owns the sockets,
// sessions, reconnects and jitter buffering on its own threads. Update() (game thread) only copies
// ready poses into Live Link and never waits.

#pragma once

#include "CoreMinimal.h"
#include "ILiveLinkSource.h"
#include "LiveLinkTypes.h"
#include "Templates/UniquePtr.h"

#include <memory>

#include "AvatarBridgeSettings.h"

class ILiveLinkClient;

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
	virtual void Update() override;
	virtual bool IsSourceStillValid() const override;
	virtual bool RequestSourceShutdown() override;
	virtual FText GetSourceType() const override;
	virtual FText GetSourceMachineName() const override;
	virtual FText GetSourceStatus() const override;

	const FAvatarBridgeConnectionSettings& GetSettings() const { return Settings; }
	bool HasSubject(FName Subject) const;

	// Inputs for the session behind a subject (game thread or any other). False when the subject has no
	// session right now (not connected yet, or the bridge is restarting); errors show in the log.
	/** Width * Height * 3 bytes, rows top to bottom, R G B. Face subjects. */
	bool SendImageRGB8(FName Subject, int32 Width, int32 Height, TArrayView<const uint8> Pixels);
	/** Mono 16-bit PCM in capture order, any chunk size. Motion subjects. */
	bool SendAudioPCM16(FName Subject, int32 SampleRate, TArrayView<const int16> Samples);
	/** Rows of 35 AIST++ music features, one row per output frame. Motion subjects. */
	bool SendMusicFeatures(FName Subject, int32 Rows, TArrayView<const float> Values);

private:
	struct FSubjectState
	{
		uint64 PushedVersion = 0;
		uint64 ReportedErrors = 0;
	};

	void UpdateSubject(avatar_bridge::SubjectFeed& Feed, FName Name, double PlatformNowSeconds, int64 WallNowNs);
	void PushStaticData(const FLiveLinkSubjectKey& Key, const avatar_bridge::SubjectLayout& Layout) const;
	void PushFrame(const FLiveLinkSubjectKey& Key, const avatar_bridge::SubjectPose& Pose, double FrameSeconds,
		const FString& Session) const;
	std::shared_ptr<avatar_bridge::SubjectFeed> FindFeed(FName Subject) const;

	FAvatarBridgeConnectionSettings Settings;
	ILiveLinkClient* Client = nullptr;
	FGuid SourceGuid;
	TUniquePtr<avatar_bridge::AvatarLink> Link;
	TMap<FName, FSubjectState> Subjects;  // game thread only
	bool bWasConnected = false;
};
