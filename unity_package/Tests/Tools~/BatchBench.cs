// Cost of the C# core's batched-motion receive path (BatchDecoder + BatchRouter: decode, look up, copy
// each row into its session's handoff, stats) per batch and per row, for 16, 256 and 2048 sessions.
// Not part of the test script (no timing in tests). Build and run from unity_package/, after
// `python Tests/Tools~/make_fixtures.py /tmp/fx` (it reads the bridge's open reply from there):
//   mcs -langversion:7.2 -optimize+ -target:library -out:/tmp/bb/AvatarBridge.Core.dll $(find Runtime/Core -name '*.cs')
//   mcs -langversion:7.2 -optimize+ -out:/tmp/bb/AvatarBridge.Editor.Tests.exe -r:/tmp/bb/AvatarBridge.Core.dll \
//       Tests/Tools~/BatchBench.cs Tests/Editor/Core/BatchPayload.cs
//   mono /tmp/bb/AvatarBridge.Editor.Tests.exe /tmp/fx
// (The executable takes the test assembly's name so that it sees the core's internals.)
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using AvatarBridge.Core.Client;
using AvatarBridge.Core.Protocol;
using AvatarBridge.Tests.Core;

static class BatchBench
{
    static void Main(string[] args)
    {
        var reply = File.ReadAllBytes(Path.Combine(args[0], "open_motion_reply.msgpack"));
        Console.WriteLine("| sessions | bytes | us per batch | ns per row | bytes allocated |");
        Console.WriteLine("|---:|---:|---:|---:|---:|");
        foreach (int n in new[] { 16, 256, 2048 })
        {
            var ids = new string[n];
            var sessions = new BridgeSession[n];
            for (int i = 0; i < n; i++)
            {
                ids[i] = (0x1000 + i).ToString("x16");
                var map = new Dictionary<string, object>(Reply.Parse(reply, 0, reply.Length).Map) { ["session"] = ids[i], ["topic"] = "frame/" + ids[i] };
                sessions[i] = new BridgeSession(new SessionRequest(Pipeline.Motion));
                sessions[i].Opened(SessionInfo.FromMap(map, true));
            }
            var w = new BatchPayload(ids).Write();
            var router = new BatchRouter();
            for (int r = 0; r < 20; r++) router.Deliver(w.Buffer, w.Length, sessions, 1, 0); // warm up
            int reps = Math.Max(50, 400000 / n);
            var watch = new Stopwatch();
            long before = GC.GetAllocatedBytesForCurrentThread();
            watch.Start();
            for (int r = 0; r < reps; r++) router.Deliver(w.Buffer, w.Length, sessions, 1, 0);
            double us = watch.Elapsed.TotalMilliseconds * 1000 / reps;
            long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
            Console.WriteLine("| " + n + " | " + w.Length + " | " + us.ToString("0.0") + " | " + (us * 1000 / n).ToString("0") + " | " + allocated + " |");
        }
    }
}
