#pragma once

#include <string>

namespace avatar_bridge {

// ZeroMQ CURVE keys for a bridge started with --curve-secret-key (docs/protocol.md §1): the bridge's public
// key, and this client's key pair. Keys are 40-character Z85 text. With no client pair, an ephemeral one is
// generated, which a bridge admits unless it was given a list of allowed client keys.
struct CurveKeys {
    std::string serverPublic;
    std::string clientPublic;  // derived from clientSecret by BridgeClient; may be left empty
    std::string clientSecret;

    bool enabled() const { return !serverPublic.empty(); }

    // Reads a key from a libzmq/czmq certificate file, as `avatar-bridge keys` writes them: NAME.key holds
    // `public-key = "..."`, NAME.key_secret also `secret-key = "..."`. An empty string, with `error` saying why,
    // when the file cannot be read or has no such key.
    static std::string publicKeyFromFile(const std::string& path, std::string& error);
    static std::string secretKeyFromFile(const std::string& path, std::string& error);
};

}  // namespace avatar_bridge
