#pragma once

#include "CoreMinimal.h"
#include "Modules/ModuleInterface.h"

#include <memory>

DECLARE_LOG_CATEGORY_EXTERN(LogAvatarBridge, Log, All);

namespace avatar_bridge
{
class AvatarLink;
class SubjectFeed;
}

/**
 * Runtime module. Keeps a registry of the live sources' links, so inputs can be sent to a subject's session from
 * any thread (audio capture, a render-thread texture read-back) without touching a source that is shutting down.
 */
class AVATARBRIDGE_API FAvatarBridgeModule : public IModuleInterface
{
public:
	struct FFound
	{
		std::shared_ptr<avatar_bridge::AvatarLink> Link;
		std::shared_ptr<avatar_bridge::SubjectFeed> Feed;
	};

	/** Any thread. Key identifies the source (its address); the registry keeps the link alive only while in use. */
	static void RegisterLink(const void* Key, const std::shared_ptr<avatar_bridge::AvatarLink>& Link);
	static void UnregisterLink(const void* Key);
	/** Any thread: the link and feed publishing `Subject`, both null when no source has it. */
	static FFound FindSubject(FName Subject);
};
