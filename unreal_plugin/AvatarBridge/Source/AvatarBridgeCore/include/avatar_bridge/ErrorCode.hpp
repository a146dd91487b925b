#pragma once

#include <string_view>

namespace avatar_bridge {

// Stable error codes of docs/protocol.md §6. Client-side decoding reuses the 1xx codes for what it rejects.
enum class ErrorCode : int {
    Malformed = 100,
    TooLarge = 101,
    UnsupportedVersion = 102,
    UnknownOp = 103,
    MissingField = 104,
    BadType = 105,
    BadValue = 106,
    BadSize = 107,
    BadImage = 108,  // an image's data is not a decodable image of its format (a corrupt JPEG; protocol 1.3)
    UnknownSession = 200,
    UnknownPipeline = 201,
    UnknownModel = 202,
    WrongInputKind = 203,
    SessionLimit = 204,
    Overloaded = 205,
    NotOwner = 206,
    ClientSessionLimit = 207,
    Internal = 500,
};

// The protocol's upper-case name ("BAD_SIZE"), or "UNKNOWN" for a code this client does not know.
std::string_view errorCodeName(int code);

}  // namespace avatar_bridge
