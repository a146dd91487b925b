#include "AvatarBridgeRetargetAsset.h"

#include "BonePose.h"
#include "Roles/LiveLinkAnimationTypes.h"

#include "avatar_bridge/SmplRetarget.hpp"

#include <string>
#include <vector>

namespace
{
const TCHAR* const SmplJointNames[24] = {
	TEXT("pelvis"), TEXT("left_hip"), TEXT("right_hip"), TEXT("spine1"), TEXT("left_knee"), TEXT("right_knee"),
	TEXT("spine2"), TEXT("left_ankle"), TEXT("right_ankle"), TEXT("spine3"), TEXT("left_foot"), TEXT("right_foot"),
	TEXT("neck"), TEXT("left_collar"), TEXT("right_collar"), TEXT("head"), TEXT("left_shoulder"), TEXT("right_shoulder"),
	TEXT("left_elbow"), TEXT("right_elbow"), TEXT("left_wrist"), TEXT("right_wrist"), TEXT("left_hand"), TEXT("right_hand"),
};

avatar_bridge::Quat ToCore(const FQuat& Q)
{
	return avatar_bridge::Quat{static_cast<float>(Q.X), static_cast<float>(Q.Y), static_cast<float>(Q.Z), static_cast<float>(Q.W)};
}

FQuat ToUnreal(const avatar_bridge::Quat& Q)
{
	return FQuat(Q.x, Q.y, Q.z, Q.w);
}
}  // namespace

UAvatarBridgeRetargetAsset::UAvatarBridgeRetargetAsset()
{
	const auto& Manny = avatar_bridge::SmplRetarget::mannyNames();
	for (int32 Joint = 0; Joint < 24; ++Joint)
	{
		if (!Manny[Joint].empty())
		{
			BoneMap.Add(FName(SmplJointNames[Joint]), FName(UTF8_TO_TCHAR(std::string(Manny[Joint]).c_str())));
		}
	}
}

#if WITH_EDITOR
void UAvatarBridgeRetargetAsset::PostEditChangeProperty(FPropertyChangedEvent& PropertyChangedEvent)
{
	Super::PostEditChangeProperty(PropertyChangedEvent);
	Solver.reset();  // rebuilt on the next pose with the edited map and corrections
}
#endif

void UAvatarBridgeRetargetAsset::BuildPoseFromAnimationData(float DeltaTime, const FLiveLinkSkeletonStaticData* InSkeletonData,
	const FLiveLinkAnimationFrameData* InFrameData, FCompactPose& OutPose)
{
	if (InSkeletonData == nullptr || InFrameData == nullptr || InFrameData->Transforms.Num() != InSkeletonData->BoneNames.Num())
	{
		return;
	}
	const FBoneContainer& Bones = OutPose.GetBoneContainer();
	const FQuat Facing = ComponentFacing.Quaternion();
	if (!Solver || SolverFor != &Bones || SolverSerial != static_cast<int32>(Bones.GetSerialNumber()) || SolverSmplNames != InSkeletonData->BoneNames)
	{
		// Target bones in compact-pose order (parents first), with their T-pose: reference pose, corrected.
		TMap<FName, int32> SmplIndex;
		for (int32 Joint = 0; Joint < InSkeletonData->BoneNames.Num(); ++Joint)
		{
			SmplIndex.Add(InSkeletonData->BoneNames[Joint], Joint);
		}
		TMap<FName, FName> TargetToSmpl;
		for (const TPair<FName, FName>& Pair : BoneMap)
		{
			TargetToSmpl.Add(Pair.Value, Pair.Key);
		}
		std::vector<avatar_bridge::SmplRetarget::Bone> Targets;
		TArray<FQuat> CorrectedWorld;
		TMap<int32, int32> CompactToTarget;
		SolverBones.Reset();
		for (const FCompactPoseBoneIndex Index : OutPose.ForEachBoneIndex())
		{
			const FName Name = Bones.GetReferenceSkeleton().GetBoneName(Bones.MakeMeshPoseIndex(Index).GetInt());
			const FCompactPoseBoneIndex Parent = Bones.GetParentBoneIndex(Index);
			const int32* ParentTarget = Parent.IsValid() ? CompactToTarget.Find(Parent.GetInt()) : nullptr;
			const FQuat ParentWorld = ParentTarget ? CorrectedWorld[*ParentTarget] : FQuat::Identity;
			const FQuat RefLocal = OutPose.GetRefPose(Index).GetRotation();
			const FRotator* Correction = RestCorrections.Find(Name);
			const FQuat World = (Correction ? Correction->Quaternion() : FQuat::Identity) * (ParentWorld * RefLocal);
			avatar_bridge::SmplRetarget::Bone Bone;
			Bone.name = TCHAR_TO_UTF8(*Name.ToString());
			Bone.parent = ParentTarget ? *ParentTarget : -1;
			Bone.restLocal = ToCore(ParentWorld.Inverse() * World);
			const FName* Smpl = TargetToSmpl.Find(Name);
			const int32* Joint = Smpl ? SmplIndex.Find(*Smpl) : nullptr;
			Bone.smplJoint = Joint ? *Joint : -1;
			CompactToTarget.Add(Index.GetInt(), static_cast<int32>(Targets.size()));
			CorrectedWorld.Add(World);
			SolverBones.Add(Index);
			Targets.push_back(MoveTemp(Bone));
		}
		std::vector<int> Parents(InSkeletonData->BoneParents.GetData(), InSkeletonData->BoneParents.GetData() + InSkeletonData->BoneParents.Num());
		Solver = std::make_shared<avatar_bridge::SmplRetarget>(MoveTemp(Parents), MoveTemp(Targets));
		SolverFor = &Bones;
		SolverSerial = static_cast<int32>(Bones.GetSerialNumber());
		SolverSmplNames = InSkeletonData->BoneNames;
		PelvisRestOffset = InFrameData->Transforms[0].GetTranslation();
	}

	// The subject's rotations turned into the mesh's facing: L' = F L F^-1 (so every product G = ... L' stays one).
	std::vector<avatar_bridge::Quat> SmplLocal;
	SmplLocal.reserve(InFrameData->Transforms.Num());
	for (const FTransform& Transform : InFrameData->Transforms)
	{
		SmplLocal.push_back(ToCore(Facing * Transform.GetRotation() * Facing.Inverse()));
	}
	const std::vector<avatar_bridge::Quat> Local = Solver->solve(SmplLocal);
	for (int32 Target = 0; Target < SolverBones.Num(); ++Target)
	{
		OutPose[SolverBones[Target]].SetRotation(ToUnreal(Local[static_cast<size_t>(Target)]));
	}
	if (bRootMotion && SolverBones.Num() > 0)
	{
		const FVector Motion = Facing.RotateVector(InFrameData->Transforms[0].GetTranslation() - PelvisRestOffset);
		const FCompactPoseBoneIndex Root = SolverBones[0];
		OutPose[Root].SetTranslation(OutPose.GetRefPose(Root).GetTranslation() + Motion);
	}
}
