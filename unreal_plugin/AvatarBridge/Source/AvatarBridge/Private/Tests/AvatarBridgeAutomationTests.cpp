// Engine-side tests, for Session Frontend > Automation (filter "AvatarBridge") or
// `UnrealEditor-Cmd <project> -ExecCmds="Automation RunTests AvatarBridge; Quit" -unattended -nullrhi`.
// Never compiled or run in this repository's CI (no engine there); the core they wrap is tested there.

#include "Misc/AutomationTest.h"

#if WITH_DEV_AUTOMATION_TESTS

#include "Animation/AnimTypes.h"
#include "AvatarBridgeRetargetAsset.h"
#include "AvatarBridgeSource.h"
#include "AvatarBridgeSourceFactory.h"
#include "AvatarBridgeSourceSettings.h"
#include "BoneContainer.h"
#include "BonePose.h"
#include "Engine/SkeletalMesh.h"
#include "HAL/PlatformProcess.h"
#include "Roles/LiveLinkAnimationTypes.h"
#include "UObject/Package.h"

IMPLEMENT_SIMPLE_AUTOMATION_TEST(FAvatarBridgeSourcePresetTest, "AvatarBridge.Source.PresetAndSettings",
	EAutomationTestFlags::EditorContext | EAutomationTestFlags::ClientContext | EAutomationTestFlags::EngineFilter)

bool FAvatarBridgeSourcePresetTest::RunTest(const FString& Parameters)
{
	FAvatarBridgeConnectionSettings Settings;
	Settings.RequestPort = 5999;
	Settings.Sessions.SetNum(1);
	Settings.Sessions[0].SubjectName = TEXT("TestFace");
	Settings.Sessions[0].bMirror = true;

	const FString Connection = Settings.ToConnectionString();
	const TSharedPtr<ILiveLinkSource> Source = GetDefault<UAvatarBridgeSourceFactory>()->CreateSource(Connection);
	TestTrue(TEXT("the factory recreates a source from its connection string"), Source.IsValid());
	TestFalse(TEXT("garbage is refused"), GetDefault<UAvatarBridgeSourceFactory>()->CreateSource(TEXT("{not json")).IsValid());
	if (!Source.IsValid())
	{
		return false;
	}
	TestEqual(TEXT("settings class"), Source->GetSettingsClass().Get(), UAvatarBridgeSourceSettings::StaticClass());

	UAvatarBridgeSourceSettings* SourceSettings = NewObject<UAvatarBridgeSourceSettings>(GetTransientPackage());
	Source->InitializeSettings(SourceSettings);
	TestEqual(TEXT("factory recorded for presets"), SourceSettings->Factory.Get(), UAvatarBridgeSourceFactory::StaticClass());
	TestEqual(TEXT("connection string recorded"), SourceSettings->ConnectionString, Connection);
	TestEqual(TEXT("Latest while the plugin interpolates"), SourceSettings->Mode, ELiveLinkSourceMode::Latest);
	TestEqual(TEXT("visible settings"), SourceSettings->Connection.RequestPort, 5999);
	TestTrue(TEXT("mirror survives the round trip"), SourceSettings->Connection.Sessions.Num() == 1 && SourceSettings->Connection.Sessions[0].bMirror);

	// No client yet, nothing started: shutdown is immediate.
	TestTrue(TEXT("shutdown without a link"), Source->RequestSourceShutdown());
	return true;
}

IMPLEMENT_SIMPLE_AUTOMATION_TEST(FAvatarBridgeSourceShutdownTest, "AvatarBridge.Source.ShutdownIsFlagThenPoll",
	EAutomationTestFlags::EditorContext | EAutomationTestFlags::ClientContext | EAutomationTestFlags::EngineFilter)

bool FAvatarBridgeSourceShutdownTest::RunTest(const FString& Parameters)
{
	// A port nothing listens on (loopback): the link keeps trying; shutdown must still finish by polling.
	FAvatarBridgeConnectionSettings Settings;
	Settings.RequestPort = 1;
	TSharedPtr<ILiveLinkSource> Source = UAvatarBridgeSourceFactory::CreateSourceFromSettings(Settings);
	Source->ReceiveClient(nullptr, FGuid::NewGuid());
	Source->Update();  // no client: nothing pushed, nothing waits
	const double Start = FPlatformTime::Seconds();
	bool bDone = false;
	while (!(bDone = Source->RequestSourceShutdown()) && FPlatformTime::Seconds() - Start < 3.0)
	{
		FPlatformProcess::Sleep(0.01f);
	}
	TestTrue(TEXT("RequestSourceShutdown turns true within 3 s of polling"), bDone);
	Source.Reset();
	return true;
}

IMPLEMENT_SIMPLE_AUTOMATION_TEST(FAvatarBridgeRetargetTest, "AvatarBridge.RetargetAsset.SmplToManny",
	EAutomationTestFlags::EditorContext | EAutomationTestFlags::EngineFilter)

bool FAvatarBridgeRetargetTest::RunTest(const FString& Parameters)
{
	UAvatarBridgeRetargetAsset* Asset = NewObject<UAvatarBridgeRetargetAsset>(GetTransientPackage());
	TestEqual(TEXT("pelvis maps to pelvis"), Asset->BoneMap.FindRef(TEXT("pelvis")), FName(TEXT("pelvis")));
	TestEqual(TEXT("left elbow maps to lowerarm_l"), Asset->BoneMap.FindRef(TEXT("left_elbow")), FName(TEXT("lowerarm_l")));
	TestFalse(TEXT("SMPL hands have no Manny bone"), Asset->BoneMap.Contains(TEXT("left_hand")));

	// With the engine's Manny (Content Examples / third-person template), pose it: SMPL's T-pose gives Manny's
	// corrected reference pose, and a pelvis yaw turns the pelvis.
	USkeletalMesh* Manny = LoadObject<USkeletalMesh>(nullptr, TEXT("/Game/Characters/Mannequins/Meshes/SKM_Manny.SKM_Manny"));
	if (Manny == nullptr)
	{
		AddInfo(TEXT("SKM_Manny not in this project: pose checks skipped"));
		return true;
	}
	TArray<FBoneIndexType> Required;
	for (int32 Bone = 0; Bone < Manny->GetRefSkeleton().GetNum(); ++Bone)
	{
		Required.Add(static_cast<FBoneIndexType>(Bone));
	}
	FBoneContainer Bones(Required, UE::Anim::FCurveFilterSettings(), *Manny);
	FCompactPose Pose;
	Pose.SetBoneContainer(&Bones);
	Pose.ResetToRefPose();

	FLiveLinkSkeletonStaticData Skeleton;
	const int32 Parents[24] = {-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21};
	const TCHAR* Names[24] = {TEXT("pelvis"), TEXT("left_hip"), TEXT("right_hip"), TEXT("spine1"), TEXT("left_knee"), TEXT("right_knee"),
		TEXT("spine2"), TEXT("left_ankle"), TEXT("right_ankle"), TEXT("spine3"), TEXT("left_foot"), TEXT("right_foot"), TEXT("neck"),
		TEXT("left_collar"), TEXT("right_collar"), TEXT("head"), TEXT("left_shoulder"), TEXT("right_shoulder"), TEXT("left_elbow"),
		TEXT("right_elbow"), TEXT("left_wrist"), TEXT("right_wrist"), TEXT("left_hand"), TEXT("right_hand")};
	for (int32 Joint = 0; Joint < 24; ++Joint)
	{
		Skeleton.BoneNames.Add(Names[Joint]);
		Skeleton.BoneParents.Add(Parents[Joint]);
	}
	FLiveLinkAnimationFrameData Frame;
	Frame.Transforms.Init(FTransform::Identity, 24);
	Asset->BuildPoseFromAnimationData(0.0f, &Skeleton, &Frame, Pose);
	for (const FCompactPoseBoneIndex Index : Pose.ForEachBoneIndex())
	{
		if (!Pose[Index].GetRotation().Equals(Pose.GetRefPose(Index).GetRotation(), 1e-3f))
		{
			AddError(FString::Printf(TEXT("bone %d left its reference pose under SMPL's T-pose"), Index.GetInt()));
			break;
		}
	}
	Frame.Transforms[0].SetRotation(FQuat(FVector::UpVector, UE_HALF_PI));
	Asset->BuildPoseFromAnimationData(0.0f, &Skeleton, &Frame, Pose);
	const int32 Pelvis = Bones.GetPoseBoneIndexForBoneName(TEXT("pelvis"));
	const FCompactPoseBoneIndex PelvisIndex = Bones.MakeCompactPoseIndex(FMeshPoseBoneIndex(Pelvis));
	TestFalse(TEXT("a pelvis yaw turns the pelvis"), Pose[PelvisIndex].GetRotation().Equals(Pose.GetRefPose(PelvisIndex).GetRotation(), 1e-3f));
	return true;
}

#endif  // WITH_DEV_AUTOMATION_TESTS
