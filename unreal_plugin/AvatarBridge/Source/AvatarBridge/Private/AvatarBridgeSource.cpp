#include "AvatarBridgeSource.h"

#include "AvatarBridgeModule.h"
#include "AvatarBridgeSourceFactory.h"
#include "AvatarBridgeSourceSettings.h"
#include "ILiveLinkClient.h"
#include "LiveLinkSourceSettings.h"
#include "Misc/ScopeLock.h"
#include "Roles/LiveLinkAnimationRole.h"
#include "Roles/LiveLinkAnimationTypes.h"
#include "UnrealNetwork.h"

#include "avatar_bridge/AvatarLink.hpp"
#include "avatar_bridge/CurveKeys.hpp"
#include "avatar_bridge/SceneTime.hpp"
#include "avatar_bridge/WallClock.hpp"

#include <string>
#include <vector>

#define LOCTEXT_NAMESPACE "AvatarBridgeSource"

struct FAvatarBridgeSource::FPushTarget
{
	FCriticalSection Lock;  // held while pushing; shutdown takes it to clear Client
	ILiveLinkClient* Client = nullptr;
	FGuid SourceGuid;
	TMap<FName, uint64> PushedVersions;
};

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

// Live Link's clock (FPlatformTime) for a wall-clock frame time, through one clock pair read now.
double ToPlatformSeconds(int64 WallNs, double PlatformNowSeconds, int64 WallNowNs)
{
	return PlatformNowSeconds - static_cast<double>(WallNowNs - WallNs) * 1e-9;
}

void PushStaticData(ILiveLinkClient& Client, const FLiveLinkSubjectKey& Key, const avatar_bridge::SubjectLayout& Layout)
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
	Client.PushSubjectStaticData_AnyThread(Key, ULiveLinkAnimationRole::StaticClass(), MoveTemp(StaticData));
}

void PushFrame(ILiveLinkClient& Client, const FLiveLinkSubjectKey& Key, const avatar_bridge::SubjectFeed::Attachment& Attachment,
	const avatar_bridge::SubjectPose& Pose, double FrameSeconds)
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
	// Timecode of the frame's capture, at the session's rate: Take Recorder, timecode evaluation and the
	// detected frame rate read it.
	const double Fps = Attachment.periodNs > 0 ? 1e9 / static_cast<double>(Attachment.periodNs) : 60.0;
	const avatar_bridge::SceneTime Scene = avatar_bridge::sceneTimeOf(Pose.timeNs, Fps);
	Animation.MetaData.SceneTime = FQualifiedFrameTime(FFrameTime(Scene.frame, Scene.subFrame), FFrameRate(Scene.rateNumerator, Scene.rateDenominator));
	Animation.MetaData.StringMetaData.Add(TEXT("Session"), UTF8_TO_TCHAR(Attachment.session.c_str()));
	Animation.MetaData.StringMetaData.Add(TEXT("Seq"), FString::Printf(TEXT("%llu"), static_cast<unsigned long long>(Pose.seq)));
	Client.PushSubjectFrameData_AnyThread(Key, MoveTemp(FrameData));
}

// OutError: why the CURVE key files could not be read (the link must not start then), or empty.
avatar_bridge::AvatarLink::Config ToCoreConfig(const FAvatarBridgeConnectionSettings& Settings, std::string& OutError)
{
	avatar_bridge::AvatarLink::Config Config;
	Config.host = ToUtf8(Settings.Host);
	Config.requestPort = Settings.RequestPort;
	Config.framesPort = Settings.FramesPort;
	Config.clientName = "avatar-bridge-unreal 0.2.0";
	Config.observeOtherSessions = Settings.bObserveOtherSessions;
	Config.network = AvatarBridgeUnreal::MakeNetwork();
	if (!Settings.CurveServerPublicKeyFile.IsEmpty())
	{
		Config.curve.serverPublic = avatar_bridge::CurveKeys::publicKeyFromFile(ToUtf8(Settings.CurveServerPublicKeyFile), OutError);
		if (OutError.empty() && !Settings.CurveClientSecretKeyFile.IsEmpty())
		{
			Config.curve.clientSecret = avatar_bridge::CurveKeys::secretKeyFromFile(ToUtf8(Settings.CurveClientSecretKeyFile), OutError);
		}
	}
	TSet<FName> Used;
	for (const FAvatarBridgeSessionSettings& Session : Settings.Sessions)
	{
		const bool bFace = Session.Pipeline == EAvatarBridgePipeline::Face;
		const bool bSpeech = Session.Pipeline == EAvatarBridgePipeline::Speech;
		avatar_bridge::SessionSpec Spec;
		Spec.pipeline = bFace ? "face" : bSpeech ? "speech" : "motion";
		Spec.model = ToUtf8(Session.Model);
		if (bFace)
		{
			Spec.options = {{"blendshapes", Session.bBlendshapes}, {"smoothing", Session.bFaceSmoothing}};
			if (Session.bBody)
			{
				Spec.options.emplace("body", true);  // the face subject gains the humanoid bones (BodySubjectMapper)
			}
			Spec.mirror = Session.bMirror;
		}
		else if (bSpeech)
		{
			// A face subject (docs/protocol.md 5.2); its viseme, VRM vowel and Voice curves come from the rig's extras.
			Spec.options = {{"smoothing", Session.bFaceSmoothing}};
			Spec.mirror = Session.bMirror;
		}
		else
		{
			Spec.options = {{"smoothing", static_cast<double>(Session.MotionSmoothing)}};
			if (!Session.Style.IsEmpty())
			{
				Spec.options.emplace("style", ToUtf8(Session.Style));
			}
		}
		// One subject per session; names must be unique within the source: number repeats (AvatarBridgeFace2).
		const TCHAR* DefaultName = bFace ? TEXT("AvatarBridgeFace") : bSpeech ? TEXT("AvatarBridgeSpeech") : TEXT("AvatarBridgeBody");
		const FName Base = Session.SubjectName.IsNone() ? FName(DefaultName) : Session.SubjectName;
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
	// Live Link polls RequestSourceShutdown() until true before it lets go, so this normally finds nothing to
	// wait for; a source dropped without that still stops, bounded by the core (about 0.4 s).
	FAvatarBridgeModule::UnregisterLink(this);
	if (Push)
	{
		FScopeLock Guard(&Push->Lock);
		Push->Client = nullptr;
	}
	Link.reset();
	Retiring.reset();
}

void FAvatarBridgeSource::ReceiveClient(ILiveLinkClient* InClient, FGuid InSourceGuid)
{
	Client = InClient;
	SourceGuid = InSourceGuid;
	StartLink();
}

void FAvatarBridgeSource::StartLink()
{
	Push = std::make_shared<FPushTarget>();
	Push->Client = Client;
	Push->SourceGuid = SourceGuid;
	std::string KeyError;
	avatar_bridge::AvatarLink::Config Config = ToCoreConfig(Settings, KeyError);
	if (!KeyError.empty())
	{
		// Without its keys a CURVE bridge never answers: the source's status says why instead of "no hello".
		StartError = FString(TEXT("CURVE keys: ")) + UTF8_TO_TCHAR(KeyError.c_str());
		UE_LOG(LogAvatarBridge, Error, TEXT("%s"), *StartError);
		return;
	}
	if (!Settings.bInterpolateInPlugin)
	{
		// Receive thread: push each frame as it arrives, as Epic's own sources do, with its own time.
		Config.onPose = [Target = std::weak_ptr<FPushTarget>(Push)](avatar_bridge::SubjectFeed& Feed,
			const avatar_bridge::SubjectFeed::Attachment& Attachment, const avatar_bridge::SubjectPose& Pose)
		{
			const std::shared_ptr<FPushTarget> Push = Target.lock();
			if (!Push)
			{
				return;
			}
			FScopeLock Guard(&Push->Lock);
			if (Push->Client == nullptr)
			{
				return;
			}
			const FName Name = ToName(Feed.name());
			const FLiveLinkSubjectKey Key(Push->SourceGuid, Name);
			uint64& Pushed = Push->PushedVersions.FindOrAdd(Name);
			if (Pushed != Attachment.version)
			{
				PushStaticData(*Push->Client, Key, *Attachment.layout);  // also clears frames of the old session
				Pushed = Attachment.version;
			}
			PushFrame(*Push->Client, Key, Attachment, Pose, ToPlatformSeconds(Pose.timeNs, FPlatformTime::Seconds(), avatar_bridge::WallClock::nowNs()));
		};
	}
	Link = std::make_shared<avatar_bridge::AvatarLink>(MoveTemp(Config));
	StartError.Reset();
	FAvatarBridgeModule::RegisterLink(this, Link);
}

void FAvatarBridgeSource::InitializeSettings(ULiveLinkSourceSettings* InSettings)
{
	if (InSettings == nullptr)
	{
		return;
	}
	// Every source, however it was made (panel, preset, Blueprint), can be recreated from its preset.
	InSettings->Factory = UAvatarBridgeSourceFactory::StaticClass();
	InSettings->ConnectionString = Settings.ToConnectionString();
	if (Settings.bInterpolateInPlugin)
	{
		InSettings->Mode = ELiveLinkSourceMode::Latest;  // the plugin already interpolates to the tick
	}
	if (UAvatarBridgeSourceSettings* Typed = Cast<UAvatarBridgeSourceSettings>(InSettings))
	{
		Typed->Connection = Settings;
	}
}

TSubclassOf<ULiveLinkSourceSettings> FAvatarBridgeSource::GetSettingsClass() const
{
	return UAvatarBridgeSourceSettings::StaticClass();
}

void FAvatarBridgeSource::OnSettingsChanged(ULiveLinkSourceSettings* InSettings, const FPropertyChangedEvent& PropertyChangedEvent)
{
	ILiveLinkSource::OnSettingsChanged(InSettings, PropertyChangedEvent);
	const UAvatarBridgeSourceSettings* Typed = Cast<UAvatarBridgeSourceSettings>(InSettings);
	if (Typed == nullptr || PropertyChangedEvent.MemberProperty == nullptr ||
		PropertyChangedEvent.MemberProperty->GetFName() != GET_MEMBER_NAME_CHECKED(UAvatarBridgeSourceSettings, Connection))
	{
		return;
	}
	// Reconnect with the edited settings: the old link stops in the background (polled in Update) while the new
	// one starts, so the game thread never waits.
	Settings = Typed->Connection;
	InSettings->ConnectionString = Settings.ToConnectionString();
	if (Settings.bInterpolateInPlugin)
	{
		InSettings->Mode = ELiveLinkSourceMode::Latest;
	}
	FAvatarBridgeModule::UnregisterLink(this);
	if (Push)
	{
		FScopeLock Guard(&Push->Lock);
		Push->Client = nullptr;
	}
	if (Link)
	{
		Link->requestStop();
		Retiring = MoveTemp(Link);
	}
	Subjects.Reset();
	StartLink();
}

void FAvatarBridgeSource::Update()
{
	if (Retiring && Retiring->stopped())
	{
		Retiring.reset();
	}
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
			if (Push)
			{
				FScopeLock Guard(&Push->Lock);
				Push->PushedVersions.Remove(It->Key);
			}
			It.RemoveCurrent();
		}
	}
}

void FAvatarBridgeSource::UpdateSubject(avatar_bridge::SubjectFeed& Feed, FName Name, double PlatformNowSeconds, int64 WallNowNs)
{
	FSubjectState& State = Subjects.FindOrAdd(Name);
	if (Feed.errorCount() != State.ReportedErrors)
	{
		// Rare, so reading the detail (which briefly takes the network side's lock) is fine here.
		UE_LOG(LogAvatarBridge, Warning, TEXT("%s: %s"), *Name.ToString(), UTF8_TO_TCHAR(Feed.stats().lastError.c_str()));
		State.ReportedErrors = Feed.errorCount();
	}
	if (!Settings.bInterpolateInPlugin)
	{
		return;  // the receive thread pushes
	}
	const auto Attachment = Feed.attachment();
	if (!Attachment)
	{
		return;  // not (re)opened yet: the subject keeps its last pose until frames flow again
	}
	const FLiveLinkSubjectKey Key(SourceGuid, Name);
	if (State.PushedVersion != Attachment->version)
	{
		// Once per session: after a reopen the rig is pushed again, which also clears stale buffered frames.
		PushStaticData(*Client, Key, *Attachment->layout);
		State.PushedVersion = Attachment->version;
	}
	if (const auto Pose = Feed.sample(WallNowNs))
	{
		PushFrame(*Client, Key, *Attachment, *Pose, ToPlatformSeconds(Pose->timeNs, PlatformNowSeconds, WallNowNs));
	}
}

bool FAvatarBridgeSource::IsSourceStillValid() const
{
	return Link && Link->state() == avatar_bridge::AvatarLink::State::Connected;
}

bool FAvatarBridgeSource::RequestSourceShutdown()
{
	FAvatarBridgeModule::UnregisterLink(this);
	if (Push)
	{
		FScopeLock Guard(&Push->Lock);  // after this the receive thread pushes nothing more
		Push->Client = nullptr;
	}
	bool bDone = true;
	for (std::shared_ptr<avatar_bridge::AvatarLink>* Each : {&Link, &Retiring})
	{
		if (*Each)
		{
			(*Each)->requestStop();  // sets a flag; the supervisor closes our sessions on its own thread
			bDone = bDone && (*Each)->stopped();
		}
	}
	if (!bDone)
	{
		return false;
	}
	Link.reset();  // its threads have ended: this joins without waiting
	Retiring.reset();
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
		return StartError.IsEmpty() ? LOCTEXT("Stopped", "Stopped") : FText::FromString(StartError);
	}
	return FText::FromString(UTF8_TO_TCHAR(Link->statusText().c_str()));
}

bool FAvatarBridgeSource::SendImageRGB8(FName Subject, int32 Width, int32 Height, TArrayView<const uint8> Pixels)
{
	const FAvatarBridgeModule::FFound Found = FAvatarBridgeModule::FindSubject(Subject);
	return Found.Feed && Found.Link->sendImage(*Found.Feed, Width, Height, Pixels.GetData(), static_cast<size_t>(Pixels.Num()));
}

bool FAvatarBridgeSource::SendImageJPEG(FName Subject, TArrayView64<const uint8> Jpeg)
{
	const FAvatarBridgeModule::FFound Found = FAvatarBridgeModule::FindSubject(Subject);
	return Found.Feed && Found.Link->sendJpeg(*Found.Feed, Jpeg.GetData(), static_cast<size_t>(Jpeg.Num()));
}

bool FAvatarBridgeSource::SendAudioPCM16(FName Subject, int32 SampleRate, TArrayView<const int16> Samples)
{
	const FAvatarBridgeModule::FFound Found = FAvatarBridgeModule::FindSubject(Subject);
	return Found.Feed && Found.Link->sendAudio(*Found.Feed, SampleRate, "s16le", Samples.GetData(), static_cast<size_t>(Samples.Num()) * sizeof(int16));
}

bool FAvatarBridgeSource::SendAudioFloat(FName Subject, int32 SampleRate, TArrayView<const float> Samples)
{
	const FAvatarBridgeModule::FFound Found = FAvatarBridgeModule::FindSubject(Subject);
	return Found.Feed && Found.Link->sendAudio(*Found.Feed, SampleRate, "f32le", Samples.GetData(), static_cast<size_t>(Samples.Num()) * sizeof(float));
}

bool FAvatarBridgeSource::SendMusicFeatures(FName Subject, int32 Rows, TArrayView<const float> Values)
{
	const FAvatarBridgeModule::FFound Found = FAvatarBridgeModule::FindSubject(Subject);
	return Found.Feed && Found.Link->sendFeatures(*Found.Feed, Rows, avatar_bridge::RequestEncoder::kFeatureColumns, Values.GetData(),
		static_cast<size_t>(Values.Num()) * sizeof(float));
}

#undef LOCTEXT_NAMESPACE
