#pragma once

#include "CoreMinimal.h"
#include "Modules/ModuleInterface.h"

DECLARE_LOG_CATEGORY_EXTERN(LogAvatarBridge, Log, All);

class FAvatarBridgeSource;

/** Runtime module. Keeps track of live Avatar Bridge sources so Blueprint calls can find a subject's source. */
class AVATARBRIDGE_API FAvatarBridgeModule : public IModuleInterface
{
public:
	static FAvatarBridgeModule& Get();

	/** Game thread. */
	void RegisterSource(FAvatarBridgeSource* Source);
	void UnregisterSource(FAvatarBridgeSource* Source);
	FAvatarBridgeSource* FindSourceForSubject(FName Subject) const;

private:
	TArray<FAvatarBridgeSource*> Sources;
};
