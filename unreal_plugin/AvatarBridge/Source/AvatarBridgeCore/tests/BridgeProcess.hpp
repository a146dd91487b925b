#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

// A real `avatar-bridge serve` for the integration tests, in its own process group so that stopping it
// also stops anything it started. The executable is `avatar-bridge` on PATH, or $AVATAR_BRIDGE_CMD.
class BridgeProcess {
public:
    // Port 0 lets the bridge pick free ports; it writes them to a ports file once it is ready.
    // `extra` arguments go to `serve` as they are (e.g. CURVE key options).
    static std::unique_ptr<BridgeProcess> start(int requestPort = 0, int framesPort = 0,
                                                std::vector<std::string> extra = {},
                                                std::chrono::seconds timeout = std::chrono::seconds(90));
    // Runs another avatar-bridge subcommand (e.g. `keys`) to completion, stdout discarded; its exit status.
    static int run(std::vector<std::string> args);
    // Runs `python -c code` with the interpreter installed beside avatar-bridge (its virtual environment, so
    // the bridge's own package imports), stdout into `outPath`; its exit status, or -1 when there is none.
    static int python(const std::string& code, const std::string& outPath);
    ~BridgeProcess();

    BridgeProcess(const BridgeProcess&) = delete;
    BridgeProcess& operator=(const BridgeProcess&) = delete;

    void stop();
    int requestPort() const { return requestPort_; }
    int framesPort() const { return framesPort_; }
    const std::string& logPath() const { return log_; }

private:
    BridgeProcess(pid_t pid, std::string dir) : pid_(pid), dir_(std::move(dir)), log_(dir_ + "/bridge.log") {}

    pid_t pid_;
    std::string dir_;
    std::string log_;
    int requestPort_ = 0;
    int framesPort_ = 0;
};
