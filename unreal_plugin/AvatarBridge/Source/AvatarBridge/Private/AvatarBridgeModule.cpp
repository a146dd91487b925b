#include "AvatarBridgeModule.h"

#include "Misc/ScopeLock.h"
#include "Modules/ModuleManager.h"

#include "avatar_bridge/AvatarLink.hpp"

#include <string>
#include <utility>
#include <vector>

DEFINE_LOG_CATEGORY(LogAvatarBridge);

namespace
{
struct FRegistry
{
	FCriticalSection Lock;
	std::vector<std::pair<const void*, std::weak_ptr<avatar_bridge::AvatarLink>>> Links;
};

FRegistry& Registry()
{
	static FRegistry Instance;  // outlives every source; thread-safe initialisation
	return Instance;
}
}  // namespace

void FAvatarBridgeModule::RegisterLink(const void* Key, const std::shared_ptr<avatar_bridge::AvatarLink>& Link)
{
	FRegistry& R = Registry();
	FScopeLock Guard(&R.Lock);
	R.Links.emplace_back(Key, Link);
}

void FAvatarBridgeModule::UnregisterLink(const void* Key)
{
	FRegistry& R = Registry();
	FScopeLock Guard(&R.Lock);
	for (auto It = R.Links.begin(); It != R.Links.end();)
	{
		It = It->first == Key ? R.Links.erase(It) : It + 1;
	}
}

FAvatarBridgeModule::FFound FAvatarBridgeModule::FindSubject(FName Subject)
{
	const std::string Name(TCHAR_TO_UTF8(*Subject.ToString()));
	std::vector<std::shared_ptr<avatar_bridge::AvatarLink>> Live;
	{
		FRegistry& R = Registry();
		FScopeLock Guard(&R.Lock);
		for (const auto& Entry : R.Links)
		{
			if (auto Link = Entry.second.lock())
			{
				Live.push_back(std::move(Link));
			}
		}
	}
	for (auto& Link : Live)
	{
		if (auto Feed = Link->feed(Name))
		{
			return {std::move(Link), std::move(Feed)};
		}
	}
	return {};
}

IMPLEMENT_MODULE(FAvatarBridgeModule, AvatarBridge)
