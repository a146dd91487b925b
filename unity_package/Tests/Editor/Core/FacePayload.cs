using AvatarBridge.Core.MsgPack;

namespace AvatarBridge.Tests.Core
{
    /// <summary>Handmade face frames (section 5.1) for the decoder tests.</summary>
    static class FacePayload
    {
        const string Session = "0123456789abcdef";

        /// <summary>
        /// A face frame's 16 keys (face not found, identity jaw and head) with `blendshapes` and
        /// `expression` floats; `extraKeys` more are counted in the map header for the caller to write.
        /// </summary>
        public static void Write(MsgPackWriter w, int blendshapes, int expression = 50, int extraKeys = 0)
        {
            w.Reset();
            w.WriteMapHeader(16 + extraKeys);
            w.Write("op"); w.Write("frame");
            w.Write("v"); w.Write(1);
            w.Write("session"); w.Write(Session);
            w.Write("pipeline"); w.Write("face");
            w.Write("seq"); w.Write(0);
            w.Write("input_seq"); w.Write(0);
            w.Write("t_capture_ns"); w.Write(1L);
            w.Write("t_publish_ns"); w.Write(2L);
            w.Write("engine_us"); w.Write(1.0);
            w.Write("batch"); w.Write(1);
            w.Write("face_found"); w.Write(false);
            w.Write("expression"); w.WriteFloat32Binary(new float[expression]);
            w.Write("eyelids"); w.WriteFloat32Binary(new float[2]);
            w.Write("jaw"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("head"); w.WriteFloat32Binary(new float[] { 0, 0, 0, 1 });
            w.Write("blendshapes"); w.WriteFloat32Binary(new float[blendshapes]);
        }
    }
}
