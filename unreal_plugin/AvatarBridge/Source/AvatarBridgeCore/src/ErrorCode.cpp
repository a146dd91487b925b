#include "avatar_bridge/ErrorCode.hpp"

namespace avatar_bridge {

std::string_view errorCodeName(int code) {
    switch (static_cast<ErrorCode>(code)) {
        case ErrorCode::Malformed: return "MALFORMED";
        case ErrorCode::TooLarge: return "TOO_LARGE";
        case ErrorCode::UnsupportedVersion: return "UNSUPPORTED_VERSION";
        case ErrorCode::UnknownOp: return "UNKNOWN_OP";
        case ErrorCode::MissingField: return "MISSING_FIELD";
        case ErrorCode::BadType: return "BAD_TYPE";
        case ErrorCode::BadValue: return "BAD_VALUE";
        case ErrorCode::BadSize: return "BAD_SIZE";
        case ErrorCode::BadImage: return "BAD_IMAGE";
        case ErrorCode::UnknownSession: return "UNKNOWN_SESSION";
        case ErrorCode::UnknownPipeline: return "UNKNOWN_PIPELINE";
        case ErrorCode::UnknownModel: return "UNKNOWN_MODEL";
        case ErrorCode::WrongInputKind: return "WRONG_INPUT_KIND";
        case ErrorCode::SessionLimit: return "SESSION_LIMIT";
        case ErrorCode::Overloaded: return "OVERLOADED";
        case ErrorCode::NotOwner: return "NOT_OWNER";
        case ErrorCode::ClientSessionLimit: return "CLIENT_SESSION_LIMIT";
        case ErrorCode::Internal: return "INTERNAL";
    }
    return "UNKNOWN";
}

}  // namespace avatar_bridge
