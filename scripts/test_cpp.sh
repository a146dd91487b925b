#!/usr/bin/env bash
# The Unreal plugin's engine-independent C++ core (unreal_plugin/AvatarBridge/Source/AvatarBridgeCore), built
# and tested without Unreal, in four jobs:
#   1. GCC, Release: every unit test (decoding, speech frames and motion batches included, the crowd table,
#      axes, jitter buffer, mappers, retarget maths, our ZMTP client against real libzmq ROUTER/PUB sockets and
#      raw protocol violations) and the live test against a real `avatar-bridge serve` (hello/list/open/input/
#      close, every error code, a bridge restart, pushes from the receive thread, flag-then-poll stop, speech
#      sessions fed espeak-ng speech, a face-tracking subject fed images, a face subject with the body fed a
#      photo of a person (skipped without the body models), a crowd read from `batch/motion`).
#      The CURVE live test needs the libzmq build and is skipped here.
#   2. The core as one translation unit, as Unreal compiles it: clang + libc++, -std=c++20 -fno-rtti
#      -fno-exceptions (Unreal's module defaults; AvatarBridge.Build.cs keeps exceptions off) -Werror -Wshadow,
#      compile only, after checking that Unreal's list (AvatarBridge/Private/AvatarBridgeCore.cpp) names every
#      source and that no core file includes a third-party header; then the optional libzmq (CURVE) client
#      alone, with exceptions, as that build compiles it.
#   3. clang with ASan + UBSan: sanitizer_tests (ZMTP, BridgeClient, decoder, batch, feed, mailbox tests) and a subset
#      of the live test; then the libFuzzer target for the frame/reply/event decoder and the ZMTP framing,
#      seeded, for FUZZ_SECONDS.
#   4. clang with TSan: sanitizer_tests, the AvatarLink live tests and the resume-at-newest live test.
# Jobs 3-4 build with clang from scratch (a fresh run on 2 busy cores: job 1 132 s, job 2 14 s, job 3 140 s,
# job 4 ~120 s). The default runs all four (the README's test command and CI included); SANITIZERS=1 leaves
# out TSan, SANITIZERS=0 runs jobs 1-2 only.
# Needs (scripts/install.sh): g++, cmake, pkg-config, libzmq3-dev, cppzmq-dev, libgtest-dev, clang, libc++-dev,
# libc++abi-dev, libclang-rt-14-dev, libmsgpack-cxx-dev (the tests' reference encodings only: the plugin itself
# needs no msgpack library), espeak-ng (the speech live tests skip
# without it); and avatar-bridge on PATH, with the python of its environment beside it (the face-tracking live
# test renders the bundled photo with it, and skips where no face-tracking model is found).
# Env: BUILD_DIR (default <core>/build, git-ignored, reused), JOBS (2), AVATAR_BRIDGE_CMD (avatar-bridge),
#      FUZZ_SECONDS (15), SANITIZERS (2: all four, the default; 1: jobs 1-3; 0: jobs 1-2).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CORE="$ROOT/unreal_plugin/AvatarBridge/Source/AvatarBridgeCore"
BUILD_DIR=${BUILD_DIR:-"$CORE/build"}
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-15}
SANITIZERS=${SANITIZERS:-2}

if ! command -v "${AVATAR_BRIDGE_CMD:-avatar-bridge}" >/dev/null; then
    echo "'${AVATAR_BRIDGE_CMD:-avatar-bridge}' not found: install the Python package first (scripts/install.sh)" >&2
    exit 2
fi
t0=$SECONDS
stamp() { echo "   ($((SECONDS - t0)) s so far)"; }

echo "== 1. GCC Release: build, unit tests, live test"
cmake -S "$CORE" -B "$BUILD_DIR/gcc" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$BUILD_DIR/gcc" -j "$JOBS"
# A live test that fails gets one more try: two close-on-stop tests miss their `closed` event now and then
# on a loaded machine (unexplained; see the plugin README). A second failure fails the job.
(cd "$BUILD_DIR/gcc" && ctest --output-on-failure --repeat until-pass:2)
stamp

echo "== 2. one translation unit, clang + libc++, C++20, no RTTI, no exceptions"
# The same list as Unreal's AvatarBridge/Private/AvatarBridgeCore.cpp (PosixNetwork.cpp is Unreal's FSocket there).
UNREAL_TU="$ROOT/unreal_plugin/AvatarBridge/Source/AvatarBridge/Private/AvatarBridgeCore.cpp"
# The plugin must build from its own folder: no third-party header outside the optional libzmq client (the
# compile below would find this machine's copies, so look for them by name).
if grep -rnE '#include *<(msgpack|zmq|boost)' "$CORE/src" "$CORE/include" | grep -v '/BridgeClientLibzmq.cpp:'; then
    echo "the core includes a third-party header: the plugin would need it fetched by hand" >&2
    exit 1
fi
ONE_TU="$BUILD_DIR/OneTu.cpp"
mkdir -p "$BUILD_DIR"
: > "$ONE_TU"
for src in "$CORE"/src/*.cpp; do
    case $(basename "$src") in BridgeClientLibzmq.cpp|PosixNetwork.cpp) continue ;; esac
    if ! grep -q "AvatarBridgeCore/src/$(basename "$src")\"" "$UNREAL_TU"; then
        echo "$(basename "$src") is missing from $UNREAL_TU: Unreal would not compile it" >&2
        exit 1
    fi
    echo "#include \"$src\"" >> "$ONE_TU"
done
clang++ -std=c++20 -stdlib=libc++ -fno-rtti -fno-exceptions -Wall -Wextra -Wpedantic -Wshadow -Werror \
    -I"$CORE/include" -I"$CORE/src" -c "$ONE_TU" -o "$BUILD_DIR/OneTu.o"
echo "ok: $(ls "$CORE"/src/*.cpp | wc -l) sources, one TU, -fno-exceptions -fno-rtti"
# The libzmq build swaps BridgeClient.cpp for this file; nothing else builds it here (no CURVE libzmq in Unreal's
# shape on this machine), so at least compile it, with exceptions as that build enables them.
clang++ -std=c++20 -stdlib=libc++ -fno-rtti -Wall -Wextra -Wpedantic -Wshadow -Werror -DAVATAR_BRIDGE_WITH_LIBZMQ=1 \
    -I"$CORE/include" -I"$CORE/src" -c "$CORE/src/BridgeClientLibzmq.cpp" -o "$BUILD_DIR/BridgeClientLibzmq.o"
echo "ok: the libzmq client compiles"
stamp

[[ $SANITIZERS -ge 1 ]] || exit 0

sanitized() {  # name, flags, then the targets to build
    local name=$1 flags=$2; shift 2
    cmake -S "$CORE" -B "$BUILD_DIR/$name" -DCMAKE_BUILD_TYPE=Debug -DBUILD_TESTING=ON -DCMAKE_UNITY_BUILD=ON \
        -DCMAKE_CXX_COMPILER=clang++ -DAVATAR_BRIDGE_FUZZ=$([[ $name == asan ]] && echo ON || echo OFF) \
        "-DCMAKE_CXX_FLAGS=-O1 -g1 -fno-omit-frame-pointer $flags" "-DCMAKE_EXE_LINKER_FLAGS=$flags" >/dev/null
    cmake --build "$BUILD_DIR/$name" -j "$JOBS" --target "$@"
}
# The two close-on-stop tests that flake under load run in job 1 (with a retry), not under ASan.
LIVE_SUBSET='Live.HelloAndList:Live.MotionSessionFromFeaturesAndAudio:Live.BadInputsGetTheDocumentedErrorCodes:Live.SpeechSession*:Live.AvatarLink*:Live.PausedReceiverResumesAtTheNewestFrame:-Live.AvatarLinkReopensSessionsWhenTheBridgeRestarts:Live.AvatarLinkClosesItsSessionsWhenDestroyed:Live.AvatarLinkPushesFromTheReceiveThreadAndStopsFlagThenPoll'

echo "== 3. clang ASan + UBSan: unit and live subsets, then the decoder fuzzer"
sanitized asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link" \
    sanitizer_tests integration_tests decoder_fuzz write_seeds
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$BUILD_DIR/asan/sanitizer_tests" --gtest_brief=1
"$BUILD_DIR/asan/integration_tests" --gtest_brief=1 --gtest_filter="$LIVE_SUBSET"
CORPUS="$BUILD_DIR/fuzz-corpus"
rm -rf "$CORPUS" && mkdir -p "$CORPUS"
"$BUILD_DIR/asan/write_seeds" "$CORPUS"
if ! "$BUILD_DIR/asan/decoder_fuzz" -max_total_time="$FUZZ_SECONDS" -max_len=4096 -timeout=5 -print_final_stats=1 \
        -artifact_prefix="$BUILD_DIR/" "$CORPUS" > "$BUILD_DIR/fuzz.log" 2>&1; then
    tail -40 "$BUILD_DIR/fuzz.log"
    echo "the fuzzer found a crash (input saved under $BUILD_DIR/)" >&2
    exit 1
fi
grep -E "^stat::(number_of_executed_units|new_units_added)" "$BUILD_DIR/fuzz.log"
stamp

if [[ $SANITIZERS -lt 2 ]]; then
    echo "C++ core: jobs 1-3 passed (SANITIZERS=1: the TSan job left out)"
    exit 0
fi
echo "== 4. clang TSan: threaded unit tests and the AvatarLink live tests"
sanitized tsan "-fsanitize=thread" sanitizer_tests integration_tests
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$CORE/tests/tsan.supp"
"$BUILD_DIR/tsan/sanitizer_tests" --gtest_brief=1
"$BUILD_DIR/tsan/integration_tests" --gtest_brief=1 --gtest_filter='Live.AvatarLink*:Live.PausedReceiverResumesAtTheNewestFrame:-Live.AvatarLinkReopensSessionsWhenTheBridgeRestarts'
stamp
echo "C++ core: all jobs passed"
