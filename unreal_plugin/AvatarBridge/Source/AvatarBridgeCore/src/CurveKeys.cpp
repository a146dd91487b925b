#include "avatar_bridge/CurveKeys.hpp"

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace avatar_bridge {
namespace {

std::string keyFromFile(const std::string& path, const std::string& which) {
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("cannot read CURVE key file " + path);
    }
    std::stringstream text;
    text << in.rdbuf();
    const std::string body = text.str();
    const std::regex line(which + R"re(-key\s*=\s*"([^"]{40})")re");
    std::smatch m;
    if (!std::regex_search(body, m, line)) {
        throw std::runtime_error(path + ": no " + which + "-key in it");
    }
    return m[1];
}

}  // namespace

std::string CurveKeys::publicKeyFromFile(const std::string& path) { return keyFromFile(path, "public"); }

std::string CurveKeys::secretKeyFromFile(const std::string& path) { return keyFromFile(path, "secret"); }

}  // namespace avatar_bridge
