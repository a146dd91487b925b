#include "AvatarBridgeModule.h"

#include "AvatarBridgeSource.h"
#include "Modules/ModuleManager.h"

DEFINE_LOG_CATEGORY(LogAvatarBridge);

FAvatarBridgeModule& FAvatarBridgeModule::Get()
{
	return FModuleManager::LoadModuleChecked<FAvatarBridgeModule>("AvatarBridge");
}

void FAvatarBridgeModule::RegisterSource(FAvatarBridgeSource* Source)
{
	check(IsInGameThread());
	Sources.AddUnique(Source);
}

void FAvatarBridgeModule::UnregisterSource(FAvatarBridgeSource* Source)
{
	check(IsInGameThread());
	Sources.Remove(Source);
}

FAvatarBridgeSource* FAvatarBridgeModule::FindSourceForSubject(FName Subject) const
{
	check(IsInGameThread());
	for (FAvatarBridgeSource* Source : Sources)
	{
		if (Source->HasSubject(Subject))
		{
			return Source;
		}
	}
	return nullptr;
}

IMPLEMENT_MODULE(FAvatarBridgeModule, AvatarBridge)
