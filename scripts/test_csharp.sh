#!/usr/bin/env bash
# Builds the Unity package's engine-independent C# core with Mono's mcs and runs its NUnit 2.6 tests:
# msgpack, frame/reply decoding (against payloads from the bridge's Python encoder; speech frames;
# batched motion messages built by hand), axis conversion, ZMTP against a real libzmq peer, and live
# sessions against a real `avatar-bridge serve` (a speech session fed a held-out eSpeak NG voice
# included), which this script starts on free ports and stops at the end. Also compile-checks the Unity-facing code (components,
# editor, sample, play-mode tests, the optional VRM driver, the Android and WebGL branches) against stubs
# of the UnityEngine/UnityEditor/UniVRM members it uses (a type check only; nothing Unity-side runs here),
# and checks those stubs against Tests/UnityStub~/api-surface.txt, the list of every member with its
# signature as Unity 2021.3 declares it (Tests/Tools~/ApiSurface.cs, Mono.Cecil).
# Needs: mono-devel, nunit-console, libnunit-cil-dev, espeak-ng (Debian) and the avatar-bridge Python package.
# Takes about 20 s (40 s on a busy 2-core machine); exits non-zero if anything fails to compile, a test fails, or a test is ignored.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKG="$ROOT/unity_package"
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/avatar-bridge-csharp.XXXXXX")
BRIDGE_PID=""

cleanup() {
    if [[ -n "$BRIDGE_PID" ]] && kill -0 "$BRIDGE_PID" 2>/dev/null; then
        kill "$BRIDGE_PID" 2>/dev/null || true
        wait "$BRIDGE_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

NUNIT_FRAMEWORK=""
for candidate in /usr/lib/cli/nunit.framework-2.6*/nunit.framework.dll /usr/lib/mono/gac/nunit.framework/2.6*/nunit.framework.dll; do
    if [[ -f "$candidate" ]]; then NUNIT_FRAMEWORK=$candidate; break; fi
done
if [[ -z "$NUNIT_FRAMEWORK" ]]; then
    echo "nunit.framework.dll (NUnit 2.6) not found: install libnunit-cil-dev" >&2
    exit 2
fi

# mcs accepts C# up to 7.2; Unity compiles the same files as C# 9.
MCS=(mcs -langversion:7.2 -debug- -optimize+ -nologo -warnaserror+)

echo "== tests dial loopback only"
# Any IPv4 literal in the tests other than 127.x is a target we must never send to (private ranges included).
if grep -rnoE '\b[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\b' "$PKG/Tests" --include='*.cs' | grep -vE ':127\.[0-9.]+$'; then
    echo "non-loopback address in the C# tests" >&2
    exit 1
fi

echo "== tests use only what NUnit 2.6 (here) and NUnit 3 (Unity's Test Framework) both have"
# NUnit 3 removed these; NUnit 2.6 lacks their replacements (ExpectedResult, OneTimeSetUp...), so neither is used.
if grep -rnE '\[(TestFixtureSetUp|TestFixtureTearDown|OneTimeSetUp|OneTimeTearDown|ExpectedException|Suite|RequiredAddin|Ignore)\]|Assert\.Is(Not)?NullOrEmpty|Is\.String(Containing|Starting|Ending|Matching)|Is\.InstanceOfType|Text\.(Contains|StartsWith|EndsWith|Matches)|TestCase\([^]]*Result *=' \
    "$PKG/Tests" --include='*.cs'; then
    echo "an NUnit API that differs between NUnit 2.6 and 3 is used in the tests" >&2
    exit 1
fi

echo "== compile: core"
mapfile -t CORE < <(find "$PKG/Runtime/Core" -name '*.cs' | sort)
"${MCS[@]}" -target:library -out:"$WORK/AvatarBridge.Core.dll" "${CORE[@]}"

echo "== compile: tests"
mapfile -t TESTS < <(find "$PKG/Tests/Editor/Core" -name '*.cs' | sort)
"${MCS[@]}" -target:library -out:"$WORK/AvatarBridge.Editor.Tests.dll" -r:"$WORK/AvatarBridge.Core.dll" \
    -r:"$NUNIT_FRAMEWORK" -r:System.Net.Http "${TESTS[@]}"
cp "$NUNIT_FRAMEWORK" "$WORK/"

echo "== compile check: Unity-facing code against Tests/UnityStub~ (types only)"
# The stubs are three assemblies, as in Unity: runtime code that touched UnityEditor would fail here.
"${MCS[@]}" -nowarn:67,169,660,661 -target:library -out:"$WORK/UnityEngine.dll" "$PKG/Tests/UnityStub~/UnityEngine.cs"
"${MCS[@]}" -nowarn:67 -target:library -out:"$WORK/UnityEditor.dll" -r:"$WORK/UnityEngine.dll" "$PKG/Tests/UnityStub~/UnityEditor.cs"
"${MCS[@]}" -target:library -out:"$WORK/VRM10.dll" -r:"$WORK/UnityEngine.dll" "$PKG/Tests/UnityStub~/UniVRM10.cs"
mapfile -t COMPONENTS < <(find "$PKG/Runtime" -name '*.cs' -not -path '*/Core/*' -not -path '*/Vrm/*' | sort)
UNITY=(-r:"$WORK/AvatarBridge.Core.dll" -r:"$WORK/UnityEngine.dll")
"${MCS[@]}" -target:library -out:"$WORK/AvatarBridge.Runtime.dll" "${UNITY[@]}" "${COMPONENTS[@]}"
# The platform branches the editor never compiles: Android (runtime permissions) and WebGL (idle components).
mkdir -p "$WORK/android" "$WORK/webgl"
"${MCS[@]}" -define:UNITY_ANDROID -target:library -out:"$WORK/android/AvatarBridge.Runtime.dll" "${UNITY[@]}" "${COMPONENTS[@]}"
"${MCS[@]}" -define:UNITY_WEBGL -target:library -out:"$WORK/webgl/AvatarBridge.Runtime.dll" "${UNITY[@]}" "${COMPONENTS[@]}"
mapfile -t VRM < <(find "$PKG/Runtime/Vrm" -name '*.cs' | sort)
"${MCS[@]}" -define:AVATAR_BRIDGE_VRM10 -target:library -out:"$WORK/AvatarBridge.Vrm.dll" "${UNITY[@]}" -r:"$WORK/AvatarBridge.Runtime.dll" \
    -r:"$WORK/VRM10.dll" "${VRM[@]}"
mapfile -t EDITOR < <(find "$PKG/Editor" -name '*.cs' | sort)
"${MCS[@]}" -target:library -out:"$WORK/AvatarBridge.Editor.dll" "${UNITY[@]}" -r:"$WORK/UnityEditor.dll" \
    -r:"$WORK/AvatarBridge.Runtime.dll" "${EDITOR[@]}"
mapfile -t SAMPLES < <(find "$PKG/Samples~" -name '*.cs' | sort)
"${MCS[@]}" -target:library -out:"$WORK/Samples.dll" "${UNITY[@]}" -r:"$WORK/AvatarBridge.Runtime.dll" "${SAMPLES[@]}"
mapfile -t RUNTIME_TESTS < <(find "$PKG/Tests/Runtime" -name '*.cs' | sort)
"${MCS[@]}" -target:library -out:"$WORK/AvatarBridge.Runtime.Tests.dll" "${UNITY[@]}" \
    -r:"$WORK/AvatarBridge.Runtime.dll" -r:"$NUNIT_FRAMEWORK" "${RUNTIME_TESTS[@]}"

echo "== API surface: the stubs declare exactly Tests/UnityStub~/api-surface.txt, and the package uses nothing else"
CECIL=""
for candidate in /usr/lib/mono/gac/Mono.Cecil/0.11*/Mono.Cecil.dll; do [[ -f "$candidate" ]] && CECIL=$candidate; done
[[ -n "$CECIL" ]] || { echo "Mono.Cecil 0.11 not found: install mono-devel (libmono-cecil-private-cil)" >&2; exit 2; }
mkdir -p "$WORK/tool"
cp "$CECIL" "$WORK/tool/"
"${MCS[@]}" -out:"$WORK/tool/ApiSurface.exe" -r:"$CECIL" -r:System.Core "$PKG/Tests/Tools~/ApiSurface.cs"
mono "$WORK/tool/ApiSurface.exe" check "$PKG/Tests/UnityStub~/api-surface.txt" \
    "$WORK/UnityEngine.dll" "$WORK/UnityEditor.dll" "$WORK/VRM10.dll" -- \
    "$WORK/AvatarBridge.Runtime.dll" "$WORK/android/AvatarBridge.Runtime.dll" "$WORK/webgl/AvatarBridge.Runtime.dll" \
    "$WORK/AvatarBridge.Vrm.dll" "$WORK/AvatarBridge.Editor.dll" "$WORK/Samples.dll" "$WORK/AvatarBridge.Runtime.Tests.dll"

echo "== fixtures from the bridge's Python encoder"
"$PYTHON" "$PKG/Tests/Tools~/make_fixtures.py" "$WORK/fixtures"

echo "== start avatar-bridge serve"
BRIDGE=$(command -v avatar-bridge) || { echo "avatar-bridge is not on PATH: install the Python package (scripts/install.sh)" >&2; exit 2; }
"$BRIDGE" serve --request-port 0 --frames-port 0 --ports-file "$WORK/ports.json" >"$WORK/bridge.log" 2>&1 &
BRIDGE_PID=$!
for _ in $(seq 1 300); do
    [[ -s "$WORK/ports.json" ]] && break
    if ! kill -0 "$BRIDGE_PID" 2>/dev/null; then cat "$WORK/bridge.log" >&2; echo "avatar-bridge serve exited" >&2; exit 1; fi
    sleep 0.1
done
[[ -s "$WORK/ports.json" ]] || { cat "$WORK/bridge.log" >&2; echo "avatar-bridge serve did not write its ports" >&2; exit 1; }
cat "$WORK/ports.json"; echo

echo "== nunit"
export AVATAR_BRIDGE_FIXTURES="$WORK/fixtures"
export AVATAR_BRIDGE_TOOLS="$PKG/Tests/Tools~"
export AVATAR_BRIDGE_PYTHON="$PYTHON"
export AVATAR_BRIDGE_PORTS_FILE="$WORK/ports.json"
export AVATAR_BRIDGE_COMMAND="$BRIDGE"
status=0
(cd "$WORK" && nunit-console -nologo -noshadow -labels "$WORK/AvatarBridge.Editor.Tests.dll" -xml="$WORK/results.xml") || status=$?

# An ignored test here means an environment variable above went missing: treat it as a failure.
if grep -q 'result="Ignored"' "$WORK/results.xml"; then
    echo "some tests were ignored (their helpers were not found)" >&2
    status=1
fi
if [[ $status -ne 0 ]]; then
    echo "--- bridge log (tail)" >&2
    tail -n 40 "$WORK/bridge.log" >&2
fi
exit $status
