using System.Collections.Generic;
using System.Threading;
using AvatarBridge.Core.Protocol;

namespace AvatarBridge.Core.Client
{
    /// <summary>
    /// The frame thread's side of batched motion frames (section 5.3): decodes a batch and hands each
    /// row that belongs to one of the client's open motion sessions to that session's newest-frame
    /// handoff, as a per-session frame would be. Rows of other clients' sessions are skipped. Routing
    /// is a dictionary from session id to session, rebuilt only when a session was opened or lost, so
    /// a batch of any size allocates nothing. Single-threaded: the frame thread owns it.
    /// </summary>
    sealed class BatchRouter
    {
        readonly BatchDecoder _decoder = new BatchDecoder();
        readonly Dictionary<SessionKey, int> _routes = new Dictionary<SessionKey, int>();
        BridgeSession[] _sessions = new BridgeSession[0];
        SessionInfo[] _infos = new SessionInfo[0];
        long _received, _dropped, _rows;

        /// <summary>Batches decoded and delivered.</summary>
        public long Received => Interlocked.Read(ref _received);
        /// <summary>Batches that broke the contract, dropped whole.</summary>
        public long Dropped => Interlocked.Read(ref _dropped);
        /// <summary>Rows handed to this client's sessions.</summary>
        public long Rows => Interlocked.Read(ref _rows);

        /// <summary>Delivers buffer[0..length) (one batch payload); false when it was malformed and dropped.</summary>
        public bool Deliver(byte[] buffer, int length, BridgeSession[] sessions, long receivedNs, long clockOffsetNs)
        {
            try
            {
                _decoder.Decode(buffer, 0, length);
            }
            catch (System.Exception e) when (e is MsgPack.MsgPackException || e is ProtocolException)
            {
                Interlocked.Increment(ref _dropped);
                return false;
            }
            Refresh(sessions);
            int delivered = 0;
            for (int row = 0; row < _decoder.Rows; row++)
            {
                int index;
                if (!_routes.TryGetValue(SessionKey.Of(_decoder.SessionId(row)), out index)) continue;
                var session = _sessions[index];
                var info = _infos[index];
                if (session.Info != info) continue; // lost since the table was built: not its frame any more
                var slot = session.Frames.Back;
                _decoder.CopyRow(row, slot.Frame, info.Session);
                slot.Frame.ReceivedNs = receivedNs;
                session.Stats.Record(slot.Frame, clockOffsetNs);
                session.Frames.Publish();
                delivered++;
            }
            Interlocked.Increment(ref _received);
            Interlocked.Add(ref _rows, delivered);
            return true;
        }

        /// <summary>Counts a batch message dropped before decoding (wrong framing).</summary>
        public void Reject() => Interlocked.Increment(ref _dropped);

        // Rebuilds the table when the session list or any session's Info changed since the last batch.
        void Refresh(BridgeSession[] sessions)
        {
            bool same = sessions == _sessions;
            for (int i = 0; same && i < sessions.Length; i++) same = sessions[i].Info == _infos[i];
            if (same) return;
            _routes.Clear();
            _sessions = sessions;
            _infos = new SessionInfo[sessions.Length];
            for (int i = 0; i < sessions.Length; i++)
            {
                var info = _infos[i] = sessions[i].Info;
                if (info != null && info.Pipeline == Pipeline.Motion) _routes[SessionKey.Of(info.Session)] = i;
            }
        }
    }
}
