// Writes the fuzz target's seed corpus: well-formed frames, replies, events and a motion batch (tests/TestPayloads, packed
// with msgpack-cxx as the bridge packs them) and a two-part ZMTP message, each behind its selector byte.
#include <fstream>
#include <iostream>
#include <string>

#include "TestPayloads.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: write_seeds DIR\n";
        return 2;
    }
    const std::string dir = argv[1];
    int n = 0;
    const auto write = [&](char selector, const std::string& bytes) {
        std::ofstream(dir + "/seed" + std::to_string(n++), std::ios::binary) << selector << bytes;
    };
    write('\0', payloads::faceFrame(3).bytes());
    write('\0', payloads::motionFrame(4).bytes());
    write('\0', payloads::speechFrame(5).bytes());
    write('\0', payloads::faceBodyFrame(6, 8, 1.0f).bytes());
    write('\1', payloads::hello(1).bytes());
    write('\1', payloads::openFace(2, "00112233445566ff").bytes());
    write('\1', payloads::openMotion(3, "ffeeddccbbaa0099").bytes());
    write('\1', payloads::openFaceBody(5, "00112233445566ff").bytes());
    write('\1', payloads::error(4, 107, "BAD_SIZE", "0123456789abcdef").bytes());
    write('\2', payloads::closedEvent("0123456789abcdef", "client").bytes());
    write('\2', payloads::openedEvent("0123456789abcdef").bytes());
    write('\4', payloads::motionBatch({"00000000000000a0", "00000000000000a1"}, {1, 2}).bytes());
    write('\3', std::string("\x01\x05topic\x00\x03" "abc\x04\x07\x04PING\x00\x01x", 22));
    std::cout << n << " seeds in " << dir << "\n";
    return 0;
}
