#include "AvatarBridgeSource.h"

#include "AvatarBridgeModule.h"
#include "ILiveLinkClient.h"
#include "Roles/LiveLinkAnimationRole.h"
#include "Roles/LiveLinkAnimationTypes.h"
#include "Modules/ModuleManager.h"

#include "avatar_bridge/AvatarLink.hpp"
#include "avatar_bridge/CurveKeys.hpp"
#include "avatar_bridge/WallClock.hpp"

#include <exception>
#include <string>
#include <vector>

#define LOCTEXT_NAMESPACE "AvatarBridgeSource"

namespace
{
std::string ToUtf8(const FString& Text)
{
	return std::string(TCHAR_TO_UTF8(*Text));
}

FName ToName(const std::string& Utf8)
{
	return FName(UTF8_TO_TCHAR(Utf8.c_str()));
}

avatar_bridge::AvatarLink::Config ToCoreConfig(const FAvatarBridgeConnectionSettings& Settings)
{
	avatar_bridge::AvatarLink::Config Config;
	Config.host = ToUtf8(Settings.Host);
	Config.requestPort = Settings.RequestPort;
	Config.framesPort = Settings.FramesPort;
	Config.clientName = "avatar-bridge-unreal 0.1.0";
	Config.observeOtherSessions = Settings.bObserveOtherSessions;
	if (!Settings.CurveServerPublicKeyFile.IsEmpty())
	{
		try
		{
			Config.curve.serverPublic = avatar_bridge::CurveKeys::publicKeyFromFile(ToUtf8(Settings.CurveServerPublicKeyFile));
			if (!Settings.CurveClientSecretKeyFile.IsEmpty())
			{
				Config.curve.clientSecret = avatar_bridge::CurveKeys::secretKeyFromFile(ToUtf8(Settings.CurveClientSecretKeyFile));
			}
		}
		catch (const std::exception& Error)
		{
			// Without the keys a CURVE bridge never answers; the source's status then says "no hello".
			UE_LOG(LogAvatarBridge, Error, TEXT("CURVE keys: %s"), UTF8_TO_TCHAR(Error.what()));
		}
	}
	TSet<FName> Used;
	for (const FAvatarBridgeSessionSettings& Session : Settings.Sessions)
	{
		const bool bFace = Session.Pipeline == EAvatarBridgePipeline::Face;
		avatar_bridge::SessionSpec Spec;
		Spec.pipeline = bFace ? "face" : "motion";
		Spec.model = ToUtf8(Session.Model);
		if (bFace)
		{
			Spec.options = {{"blendshapes", Session.bBlendshapes}, {"smoothing", Session.bFaceSmoothing}};
		}
		else
		{
			Spec.options = {{"smoothing", static_cast<double>(Session.MotionSmoothing)}};
			if (!Session.Style.IsEmpty())
			{
				Spec.options.emplace("style", ToUtf8(Session.Style));
			}
		}
		// Subject names must be unique within the source: number repeats (AvatarBridgeFace, AvatarBridgeFace2).
		const FName Base = Session.SubjectName.IsNone() ? FName(bFace ? TEXT("AvatarBridgeFace") : TEXT("AvatarBridgeBody")) : Session.SubjectName;
		FName Name = Base;
		for (int32 Suffix = 2; Used.Contains(Name); ++Suffix)
		{
			Name = FName(*FString::Printf(TEXT("%s%d"), *Base.ToString(), Suffix));
		}
		Used.Add(Name);
		Spec.subjectName = ToUtf8(Name.ToString());
		Config.sessions.push_back(MoveTemp(Spec));
	}
	return Config;
}
}  // namespace

FAvatarBridgeSource::FAvatarBridgeSource(const FAvatarBridgeConnectionSettings& InSettings)
	: Settings(InSettings)
{
}

FAvatarBridgeSource::~FAvatarBridgeSource()
{
	RequestSourceShutdown();
}

void FAvatarBridgeSource::ReceiveClient(ILiveLinkClient* InClient, FGuid InSourceGuid)
{
	Client = InClient;
	SourceGuid = InSourceGuid;
	// The link connects, handshakes and opens the sessions on its own threads; subjects appear in Update().
	Link = MakeUnique<avatar_bridge::AvatarLink>(ToCoreConfig(Settings));
	FAvatarBridgeModule::Get().RegisterSource(this);
}

void FAvatarBridgeSource::Update()
{
	if (!Link || !Client)
	{
		return;
	}
	const bool bConnected = Link->state() == avatar_bridge::AvatarLink::State::Connected;
	if (bConnected != bWasConnected)
	{
		UE_LOG(LogAvatarBridge, Log, TEXT("%s"), UTF8_TO_TCHAR(Link->statusText().c_str()));
		bWasConnected = bConnected;
	}

	// One clock pair per tick maps the bridge's wall-clock frame times onto Live Link's FPlatformTime.
	const double PlatformNowSeconds = FPlatformTime::Seconds();
	const int64 WallNowNs = avatar_bridge::WallClock::nowNs();
	const auto Feeds = Link->feeds();
	TSet<FName> Live;
	for (const auto& Feed : *Feeds)
	{
		const FName Name = ToName(Feed->name());
		Live.Add(Name);
		UpdateSubject(*Feed, Name, PlatformNowSeconds, WallNowNs);
	}
	// Observed sessions that closed: their subjects go away with them.
	for (auto It = Subjects.CreateIterator(); It; ++It)
	{
		if (!Live.Contains(It->Key))
		{
			Client->RemoveSubject_AnyThread(FLiveLinkSubjectKey(SourceGuid, It->Key));
			It.RemoveCurrent();
		}
	}
}

void FAvatarBridgeSource::UpdateSubject(avatar_bridge::SubjectFeed& Feed, FName Name, double PlatformNowSeconds, int64 WallNowNs)
{
	const auto Attachment = Feed.attachment();
	if (!Attachment)
	{
		return;  // not (re)opened yet: the subject keeps its last pose until frames flow again
	}
	const FLiveLinkSubjectKey Key(SourceGuid, Name);
	FSubjectState& State = Subjects.FindOrAdd(Name);
	if (State.PushedVersion != Attachment->version)
	{
		// Once per session: after a reopen the rig is pushed again, which also clears stale buffered frames.
		PushStaticData(Key, *Attachment->layout);
		State.PushedVersion = Attachment->version;
	}

	if (Feed.errorCount() != State.ReportedErrors)
	{
		// Rare, so reading the detail (which briefly takes the network side's lock) is fine here.
		UE_LOG(LogAvatarBridge, Warning, TEXT("%s: %s"), *Name.ToString(), UTF8_TO_TCHAR(Feed.stats().lastError.c_str()));
		State.ReportedErrors = Feed.errorCount();
	}

	const FString Session = UTF8_TO_TCHAR(Attachment->session.c_str());
	const auto ToPlatformSeconds = [&](int64 WallNs) { return PlatformNowSeconds - static_cast<double>(WallNowNs - WallNs) * 1e-9; };
	if (Settings.bInterpolateInPlugin)
	{
		if (const auto Pose = Feed.sample(WallNowNs))
		{
			PushFrame(Key, *Pose, ToPlatformSeconds(Pose->timeNs), Session);
		}
		return;
	}
	std::vector<avatar_bridge::SubjectPose> Poses;
	Feed.takeAll(Poses);
	for (const avatar_bridge::SubjectPose& Pose : Poses)
	{
		PushFrame(Key, Pose, ToPlatformSeconds(Pose.timeNs), Session);
	}
}

void FAvatarBridgeSource::PushStaticData(const FLiveLinkSubjectKey& Key, const avatar_bridge::SubjectLayout& Layout) const
{
	FLiveLinkStaticDataStruct StaticData(FLiveLinkSkeletonStaticData::StaticStruct());
	FLiveLinkSkeletonStaticData& Skeleton = *StaticData.Cast<FLiveLinkSkeletonStaticData>();
	Skeleton.BoneNames.Reserve(Layout.boneNames.size());
	for (const std::string& Bone : Layout.boneNames)
	{
		Skeleton.BoneNames.Add(ToName(Bone));
	}
	Skeleton.BoneParents.Append(Layout.boneParents.data(), static_cast<int32>(Layout.boneParents.size()));
	Skeleton.PropertyNames.Reserve(Layout.curveNames.size());
	for (const std::string& Curve : Layout.curveNames)
	{
		Skeleton.PropertyNames.Add(ToName(Curve));
	}
	Client->PushSubjectStaticData_AnyThread(Key, ULiveLinkAnimationRole::StaticClass(), MoveTemp(StaticData));
}

void FAvatarBridgeSource::PushFrame(const FLiveLinkSubjectKey& Key, const avatar_bridge::SubjectPose& Pose, double FrameSeconds,
	const FString& Session) const
{
	FLiveLinkFrameDataStruct FrameData(FLiveLinkAnimationFrameData::StaticStruct());
	FLiveLinkAnimationFrameData& Animation = *FrameData.Cast<FLiveLinkAnimationFrameData>();
	// The core already converted to Unreal space (left-handed, Z up, cm): copy, do not convert again.
	Animation.Transforms.Reserve(Pose.rotations.size());
	for (size_t Bone = 0; Bone < Pose.rotations.size(); ++Bone)
	{
		const avatar_bridge::Quat& Q = Pose.rotations[Bone];
		const avatar_bridge::Vec3& T = Pose.translations[Bone];
		Animation.Transforms.Add(FTransform(FQuat(Q.x, Q.y, Q.z, Q.w), FVector(T.x, T.y, T.z)));
	}
	Animation.PropertyValues.Append(Pose.curves.data(), static_cast<int32>(Pose.curves.size()));
	Animation.WorldTime = FLiveLinkWorldTime(FrameSeconds);
	Animation.MetaData.StringMetaData.Add(TEXT("Session"), Session);
	Animation.MetaData.StringMetaData.Add(TEXT("Seq"), FString::Printf(TEXT("%llu"), static_cast<unsigned long long>(Pose.seq)));
	Client->PushSubjectFrameData_AnyThread(Key, MoveTemp(FrameData));
}

bool FAvatarBridgeSource::IsSourceStillValid() const
{
	return Link && Link->state() == avatar_bridge::AvatarLink::State::Connected;
}

bool FAvatarBridgeSource::RequestSourceShutdown()
{
	if (Link)
	{
		if (FAvatarBridgeModule* Module = FModuleManager::GetModulePtr<FAvatarBridgeModule>("AvatarBridge"))
		{
			Module->UnregisterSource(this);
		}
		Link.Reset();  // closes the sessions it opened; bounded to a fraction of a second
	}
	Client = nullptr;
	return true;
}

FText FAvatarBridgeSource::GetSourceType() const
{
	return LOCTEXT("SourceType", "Avatar Bridge");
}

FText FAvatarBridgeSource::GetSourceMachineName() const
{
	return FText::FromString(FString::Printf(TEXT("%s:%d"), *Settings.Host, Settings.RequestPort));
}

FText FAvatarBridgeSource::GetSourceStatus() const
{
	if (!Link)
	{
		return LOCTEXT("Stopped", "Stopped");
	}
	return FText::FromString(UTF8_TO_TCHAR(Link->statusText().c_str()));
}

std::shared_ptr<avatar_bridge::SubjectFeed> FAvatarBridgeSource::FindFeed(FName Subject) const
{
	return Link ? Link->feed(ToUtf8(Subject.ToString())) : nullptr;
}

bool FAvatarBridgeSource::HasSubject(FName Subject) const
{
	return FindFeed(Subject) != nullptr;
}

bool FAvatarBridgeSource::SendImageRGB8(FName Subject, int32 Width, int32 Height, TArrayView<const uint8> Pixels)
{
	const std::shared_ptr<avatar_bridge::SubjectFeed> Feed = FindFeed(Subject);
	return Feed && Link->sendImage(*Feed, Width, Height, Pixels.GetData(), static_cast<size_t>(Pixels.Num()));
}

bool FAvatarBridgeSource::SendAudioPCM16(FName Subject, int32 SampleRate, TArrayView<const int16> Samples)
{
	const std::shared_ptr<avatar_bridge::SubjectFeed> Feed = FindFeed(Subject);
	return Feed && Link->sendAudio(*Feed, SampleRate, "s16le", Samples.GetData(), static_cast<size_t>(Samples.Num()) * sizeof(int16));
}

bool FAvatarBridgeSource::SendMusicFeatures(FName Subject, int32 Rows, TArrayView<const float> Values)
{
	const std::shared_ptr<avatar_bridge::SubjectFeed> Feed = FindFeed(Subject);
	return Feed && Link->sendFeatures(*Feed, Rows, avatar_bridge::RequestEncoder::kFeatureColumns, Values.GetData(), static_cast<size_t>(Values.Num()) * sizeof(float));
}

#undef LOCTEXT_NAMESPACE
