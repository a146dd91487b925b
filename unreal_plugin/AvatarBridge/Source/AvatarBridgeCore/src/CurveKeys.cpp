#include "avatar_bridge/CurveKeys.hpp"

#include <fstream>
#include <regex>
#include <sstream>

namespace avatar_bridge {
namespace {

std::string keyFromFile(const std::string& path, const std::string& which, std::string& error) {
    std::ifstream in(path);
    if (!in) {
        error = "cannot read CURVE key file " + path;
        return {};
    }
    std::stringstream text;
    text << in.rdbuf();
    const std::string body = text.str();
    const std::regex line(which + R"re(-key\s*=\s*"([^"]{40})")re");
    std::smatch m;
    if (!std::regex_search(body, m, line)) {
        error = path + ": no " + which + "-key in it";
        return {};
    }
    return m[1];
}

}  // namespace

std::string CurveKeys::publicKeyFromFile(const std::string& path, std::string& error) {
    return keyFromFile(path, "public", error);
}

std::string CurveKeys::secretKeyFromFile(const std::string& path, std::string& error) {
    return keyFromFile(path, "secret", error);
}

}  // namespace avatar_bridge
