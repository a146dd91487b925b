using System;
using System.Diagnostics;
using System.IO;
using System.Threading;

namespace AvatarBridge.Tests.Core
{
    /// <summary>A helper process (libzmq peer, bridge) that is killed when the test is done with it.</summary>
    sealed class ChildProcess : IDisposable
    {
        readonly Process _process;

        ChildProcess(Process process)
        {
            _process = process;
        }

        public static ChildProcess Start(string file, string arguments)
        {
            var info = new ProcessStartInfo(file, arguments)
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = false,
                CreateNoWindow = true,
            };
            return new ChildProcess(Process.Start(info));
        }

        public bool HasExited => _process.HasExited;

        /// <summary>The first line the process prints (helpers print their ports there).</summary>
        public string ReadLine(int timeoutMs)
        {
            var read = _process.StandardOutput.ReadLineAsync();
            if (!read.Wait(timeoutMs)) throw new TimeoutException("helper printed nothing within " + timeoutMs + " ms");
            if (read.Result == null) throw new InvalidOperationException("helper exited before printing its ports");
            return read.Result;
        }

        /// <summary>Waits for a file the process writes once it is ready (the bridge's --ports-file).</summary>
        public string WaitForFile(string path, int timeoutMs)
        {
            var watch = Stopwatch.StartNew();
            while (watch.ElapsedMilliseconds < timeoutMs)
            {
                if (File.Exists(path))
                {
                    string text = File.ReadAllText(path);
                    if (text.Trim().EndsWith("}")) return text;
                }
                if (_process.HasExited) throw new InvalidOperationException("process exited with " + _process.ExitCode + " before writing " + path);
                Thread.Sleep(50);
            }
            throw new TimeoutException(path + " did not appear within " + timeoutMs + " ms");
        }

        public void Kill()
        {
            if (_process.HasExited) return;
            _process.Kill();
            _process.WaitForExit(5000);
        }

        public void Dispose()
        {
            Kill();
            _process.Dispose();
        }
    }
}
