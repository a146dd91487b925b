using System.Collections.Generic;
using AvatarBridge.Core.Client;

namespace AvatarBridge
{
    /// <summary>
    /// Every SessionClient the components started, so that domain reload, leaving play mode and
    /// quitting can stop them all even if a component never got OnDisable. Background threads that
    /// outlive their domain are what freezes editors with socket libraries; this makes sure none do.
    /// </summary>
    static class ClientRegistry
    {
        static readonly List<SessionClient> Live = new List<SessionClient>();

        public static void Add(SessionClient client)
        {
            lock (Live) Live.Add(client);
        }

        public static void Remove(SessionClient client)
        {
            lock (Live) Live.Remove(client);
        }

        /// <summary>Disposes every registered client; each Dispose is bounded, so this never hangs the editor.</summary>
        public static void ShutdownAll()
        {
            SessionClient[] clients;
            lock (Live)
            {
                clients = Live.ToArray();
                Live.Clear();
            }
            foreach (var client in clients) client.Dispose(500);
        }
    }
}
