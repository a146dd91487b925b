// The core's Stream/Network over Unreal's FSocket, so the plugin needs no socket library of its own.

#pragma once

#include <memory>

#include "avatar_bridge/Stream.hpp"

namespace AvatarBridgeUnreal
{
/** FSocket streams from the platform socket subsystem. */
std::shared_ptr<avatar_bridge::Network> MakeNetwork() noexcept;
}
