// Drives any skeleton (UE5 Manny/Quinn, a MetaHuman body) from the body subject's SMPL rotations with a Live Link
// Pose node, without an SMPL mesh: set this as the node's Retarget Asset. The maths is the core's SmplRetarget
// (the Unity package's HumanoidDriver, tested in CI): each mapped bone turns, in component space, as its SMPL
// joint turns away from SMPL's T-pose, applied on top of the target's T-pose. Manny's reference pose is an
// A-pose: RestCorrections bring its arms to a T-pose first (no defaults: the angles were never measured on a
// real Manny here; see the README).

#pragma once

#include "CoreMinimal.h"
#include "LiveLinkRetargetAsset.h"

#include <memory>

#include "AvatarBridgeRetargetAsset.generated.h"

namespace avatar_bridge
{
class SmplRetarget;
}

UCLASS(BlueprintType, meta = (DisplayName = "Avatar Bridge SMPL Retarget"))
class AVATARBRIDGE_API UAvatarBridgeRetargetAsset : public ULiveLinkRetargetAsset
{
	GENERATED_BODY()

public:
	UAvatarBridgeRetargetAsset();

	/** SMPL joint (the body subject's bone) -> target bone. Defaults: UE5 Mannequin names. */
	UPROPERTY(EditAnywhere, Category = "Avatar Bridge")
	TMap<FName, FName> BoneMap;

	/**
	 * Rotation (component space) that turns a target bone from its reference pose into the T-pose SMPL's rest
	 * pose is, applied before retargeting. Empty for a rig whose reference pose already is a T-pose.
	 */
	UPROPERTY(EditAnywhere, Category = "Avatar Bridge")
	TMap<FName, FRotator> RestCorrections;

	/**
	 * The rotation from the subject's facing (Unreal's +X, as the plugin converts SMPL) to the target mesh's
	 * facing in component space. UE5 Mannequin meshes face +Y: yaw 90.
	 */
	UPROPERTY(EditAnywhere, Category = "Avatar Bridge")
	FRotator ComponentFacing = FRotator(0.0f, 90.0f, 0.0f);

	/** Move the target's root bone (pelvis) by the subject's root motion (relative to the first frame), in cm. */
	UPROPERTY(EditAnywhere, Category = "Avatar Bridge")
	bool bRootMotion = false;

	virtual void BuildPoseFromAnimationData(float DeltaTime, const FLiveLinkSkeletonStaticData* InSkeletonData,
		const FLiveLinkAnimationFrameData* InFrameData, FCompactPose& OutPose) override;

#if WITH_EDITOR
	virtual void PostEditChangeProperty(FPropertyChangedEvent& PropertyChangedEvent) override;
#endif

private:
	/** Rebuilt when the target's bones or the subject's skeleton change. */
	std::shared_ptr<avatar_bridge::SmplRetarget> Solver;
	TArray<FCompactPoseBoneIndex> SolverBones;
	const FBoneContainer* SolverFor = nullptr;
	int32 SolverSerial = INDEX_NONE;
	TArray<FName> SolverSmplNames;
	FVector PelvisRestOffset = FVector::ZeroVector;
};
