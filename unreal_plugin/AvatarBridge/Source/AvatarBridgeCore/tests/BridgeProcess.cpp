#include "BridgeProcess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace {

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string bridgeExecutable() {
    const char* custom = std::getenv("AVATAR_BRIDGE_CMD");
    return custom != nullptr ? custom : "avatar-bridge";
}

// The avatar-bridge executable's directory: from $AVATAR_BRIDGE_CMD when it is a path, else from PATH.
std::string bridgeDirectory() {
    const std::string exe = bridgeExecutable();
    if (exe.find('/') != std::string::npos) {
        return exe.substr(0, exe.rfind('/'));
    }
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path != nullptr ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        if (!dir.empty() && access((dir + "/" + exe).c_str(), X_OK) == 0) {
            return dir;
        }
    }
    return {};
}

}  // namespace

int BridgeProcess::python(const std::string& code, const std::string& outPath) {
    const std::string dir = bridgeDirectory();
    std::string interpreter = dir + "/python";
    if (dir.empty() || access(interpreter.c_str(), X_OK) != 0) {
        return -1;
    }
    std::vector<std::string> args = {interpreter, "-c", code};
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, interpreter.c_str(), &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    if (rc != 0) {
        return -1;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int BridgeProcess::run(std::vector<std::string> args) {
    args.insert(args.begin(), bridgeExecutable());
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;  // quiet: the tests report what matters
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, argv[0], &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    if (rc != 0) {
        return -1;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::unique_ptr<BridgeProcess> BridgeProcess::start(int requestPort, int framesPort, std::vector<std::string> extra,
                                                    std::chrono::seconds timeout) {
    char dirTemplate[] = "/tmp/avatar-bridge-test-XXXXXX";
    if (mkdtemp(dirTemplate) == nullptr) {
        throw std::runtime_error("mkdtemp failed");
    }
    const std::string dir = dirTemplate;
    const std::string portsFile = dir + "/ports.json";
    const std::string exe = bridgeExecutable();
    // The bundled models only: serve would also load the face tracker from the user cache when it is there,
    // and make it the face default (the face-tracking test serves it from its own folder instead).
    std::vector<std::string> args = {exe,
                                     "serve",
                                     "--no-face-tracking",
                                     "--request-port",
                                     std::to_string(requestPort),
                                     "--frames-port",
                                     std::to_string(framesPort),
                                     "--ports-file",
                                     portsFile};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);

    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    const std::string log = dir + "/bridge.log";
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, exe.c_str(), &files, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        throw std::runtime_error("cannot start '" + exe + "' (is the Python package installed?)");
    }
    std::unique_ptr<BridgeProcess> bridge(new BridgeProcess(pid, dir));

    const std::regex ports(R"("request_port"\s*:\s*(\d+)[\s\S]*"frames_port"\s*:\s*(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        std::smatch m;
        const std::string json = readFile(portsFile);
        if (std::regex_search(json, m, ports)) {
            bridge->requestPort_ = std::stoi(m[1]);
            bridge->framesPort_ = std::stoi(m[2]);
            return bridge;
        }
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            bridge->pid_ = 0;
            throw std::runtime_error("avatar-bridge exited early; log:\n" + readFile(log));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw std::runtime_error("avatar-bridge did not write its ports file in time; log:\n" + readFile(log));
}

void BridgeProcess::stop() {
    if (pid_ <= 0) {
        return;
    }
    kill(-pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = 0;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(-pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = 0;
}

BridgeProcess::~BridgeProcess() {
    stop();
    std::remove((dir_ + "/ports.json").c_str());
    std::remove(log_.c_str());
    rmdir(dir_.c_str());
}
