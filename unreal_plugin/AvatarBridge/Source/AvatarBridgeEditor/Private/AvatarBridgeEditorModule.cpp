// The editor module has no state of its own: UAvatarBridgeSourceFactory is found by Live Link through
// reflection once this module is loaded.

#include "Modules/ModuleInterface.h"
#include "Modules/ModuleManager.h"

IMPLEMENT_MODULE(FDefaultModuleImpl, AvatarBridgeEditor)
