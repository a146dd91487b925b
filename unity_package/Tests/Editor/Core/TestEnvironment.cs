using System;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;
using NUnit.Framework;

namespace AvatarBridge.Tests.Core
{
    /// <summary>
    /// What the tests that need Python find through environment variables, which scripts/test_csharp.sh
    /// sets. Inside Unity they are usually unset, and those tests are ignored rather than failed.
    /// </summary>
    static class TestEnvironment
    {
        /// <summary>Folder of payloads written by Tests/Tools~/make_fixtures.py.</summary>
        public static string Fixtures => Require("AVATAR_BRIDGE_FIXTURES", "fixtures made by the bridge's Python encoder");

        /// <summary>Tests/Tools~ (the Python helpers).</summary>
        public static string Tools => Require("AVATAR_BRIDGE_TOOLS", "the Python test helpers");

        public static string Python => Environment.GetEnvironmentVariable("AVATAR_BRIDGE_PYTHON") ?? "python3";

        /// <summary>The avatar-bridge executable (for tests that start their own bridge).</summary>
        public static string BridgeCommand => Require("AVATAR_BRIDGE_COMMAND", "the avatar-bridge command");

        /// <summary>Ports of the `avatar-bridge serve` the test script started.</summary>
        public static void BridgePorts(out int requestPort, out int framesPort)
        {
            string file = Require("AVATAR_BRIDGE_PORTS_FILE", "a running avatar-bridge serve");
            ReadPorts(File.ReadAllText(file), "request_port", "frames_port", out requestPort, out framesPort);
        }

        /// <summary>A loopback TCP port nobody listens on right now.</summary>
        public static int FreePort()
        {
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            int port = ((IPEndPoint)listener.LocalEndpoint).Port;
            listener.Stop();
            return port;
        }

        public static byte[] Fixture(string name) => File.ReadAllBytes(Path.Combine(Fixtures, name + ".msgpack"));

        /// <summary>Two integer fields of a flat JSON object (enough for the ports files the helpers write).</summary>
        public static void ReadPorts(string json, string first, string second, out int a, out int b)
        {
            a = JsonInt(json, first);
            b = JsonInt(json, second);
        }

        static int JsonInt(string json, string key)
        {
            var match = Regex.Match(json, "\"" + key + "\"\\s*:\\s*(\\d+)");
            if (!match.Success) throw new FormatException("no '" + key + "' in " + json);
            return int.Parse(match.Groups[1].Value);
        }

        static string Require(string variable, string what)
        {
            string value = Environment.GetEnvironmentVariable(variable);
            if (string.IsNullOrEmpty(value)) Assert.Ignore(variable + " is not set: this test needs " + what + " (scripts/test_csharp.sh sets it)");
            return value;
        }
    }
}
