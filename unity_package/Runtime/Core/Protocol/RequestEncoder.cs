using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using AvatarBridge.Core.MsgPack;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>
    /// Encodes requests (section 4) into a reused MsgPackWriter. Every request carries "v": 1 and an
    /// id, inputs included, so an error reply to an input can be traced to it.
    /// </summary>
    public static class RequestEncoder
    {
        public static void Hello(MsgPackWriter w, ulong id, string client)
        {
            Header(w, "hello", id, client == null ? 0 : 1);
            if (client != null) Pair(w, "client", client);
        }

        public static void List(MsgPackWriter w, ulong id) => Header(w, "list", id, 0);

        /// <summary>model null = the pipeline's default; options null = none (values: bool, int, double, string).</summary>
        public static void Open(MsgPackWriter w, ulong id, Pipeline pipeline, string model, IDictionary<string, object> options)
        {
            Header(w, "open", id, 1 + (model != null ? 1 : 0) + (options != null ? 1 : 0));
            Pair(w, "pipeline", ProtocolConstants.PipelineName(pipeline));
            if (model != null) Pair(w, "model", model);
            if (options != null)
            {
                w.Write("options");
                w.WriteObject(options);
            }
        }

        public static void Close(MsgPackWriter w, ulong id, string session)
        {
            Header(w, "close", id, 1);
            Pair(w, "session", session);
        }

        /// <summary>session null = a plain liveness/clock ping; a session keeps that session from being reaped.</summary>
        public static void Ping(MsgPackWriter w, ulong id, string session)
        {
            Header(w, "ping", id, session == null ? 0 : 1);
            if (session != null) Pair(w, "session", session);
        }

        /// <summary>
        /// Writes an rgb8 image input up to its data and returns the width*height*3 bytes to fill
        /// (rows top to bottom, R G B), so a caller converts pixels straight into the request buffer.
        /// </summary>
        public static Span<byte> BeginImage(MsgPackWriter w, ulong id, string session, ulong seq, long captureNs, int width, int height, bool ack)
        {
            if (width < 1 || height < 1) throw new ArgumentOutOfRangeException(nameof(width), "image size must be positive");
            InputHeader(w, id, session, "image", seq, captureNs, ack, 4);
            Pair(w, "width", width);
            Pair(w, "height", height);
            Pair(w, "format", "rgb8");
            int bytes = width * height * 3;
            w.Write("data");
            w.WriteBinaryHeader(bytes);
            return w.WriteRaw(bytes);
        }

        public static void Image(MsgPackWriter w, ulong id, string session, ulong seq, long captureNs, int width, int height, ReadOnlySpan<byte> rgb, bool ack)
        {
            var target = BeginImage(w, id, session, seq, captureNs, width, height, ack);
            if (rgb.Length != target.Length) throw new ArgumentException("rgb8 data must be width*height*3 bytes", nameof(rgb));
            rgb.CopyTo(target);
        }

        /// <summary>
        /// A JPEG image input (protocol 1.3): the bytes of one JPEG file, sent as they are; the bridge reads
        /// width and height from its header (docs/protocol.md section 4.5.1).
        /// </summary>
        public static void JpegImage(MsgPackWriter w, ulong id, string session, ulong seq, long captureNs, ReadOnlySpan<byte> jpeg, bool ack)
        {
            if (jpeg.Length == 0) throw new ArgumentException("a JPEG image needs its bytes", nameof(jpeg));
            InputHeader(w, id, session, "image", seq, captureNs, ack, 2);
            Pair(w, "format", "jpeg");
            w.Write("data");
            w.WriteBinary(jpeg);
        }

        /// <summary>A block of music feature rows (rows × cols float32, row-major; cols is 35 in v1).</summary>
        public static void Features(MsgPackWriter w, ulong id, string session, ulong seq, long captureNs, int rows, int cols, ReadOnlySpan<float> values, bool ack)
        {
            if (values.Length != rows * cols) throw new ArgumentException("features must hold rows*cols values", nameof(values));
            InputHeader(w, id, session, "features", seq, captureNs, ack, 3);
            Pair(w, "rows", rows);
            Pair(w, "cols", cols);
            w.Write("data");
            w.WriteFloat32Binary(values);
        }

        /// <summary>Mono audio samples; format "f32le" or "s16le", data in that format.</summary>
        public static void Audio(MsgPackWriter w, ulong id, string session, ulong seq, long captureNs, int rate, string format, ReadOnlySpan<byte> data, bool ack)
        {
            InputHeader(w, id, session, "audio", seq, captureNs, ack, 3);
            Pair(w, "rate", rate);
            Pair(w, "format", format);
            w.Write("data");
            w.WriteBinary(data);
        }

        /// <summary>Mono float samples sent as f32le (no conversion: the platform is little-endian).</summary>
        public static void Audio(MsgPackWriter w, ulong id, string session, ulong seq, long captureNs, int rate, ReadOnlySpan<float> samples, bool ack) =>
            Audio(w, id, session, seq, captureNs, rate, "f32le", MemoryMarshal.AsBytes(samples), ack);

        /// <summary>A face tracker session's neutral calibration (section 5.1): the next frame with a face becomes the neutral.</summary>
        public static void Calibrate(MsgPackWriter w, ulong id, string session)
        {
            Header(w, "calibrate", id, 1);
            Pair(w, "session", session);
        }

        /// <summary>
        /// A speech session's voice calibration (section 5.2): mono samples of the user saying A, I, U,
        /// E, O once, in that order, each followed by a short pause (at most 8 s), sent as f32le.
        /// </summary>
        public static void CalibrateVoice(MsgPackWriter w, ulong id, string session, int rate, ReadOnlySpan<float> samples)
        {
            Header(w, "calibrate", id, 4);
            Pair(w, "session", session);
            Pair(w, "rate", rate);
            Pair(w, "format", "f32le");
            w.Write("data");
            w.WriteBinary(MemoryMarshal.AsBytes(samples));
        }

        static void InputHeader(MsgPackWriter w, ulong id, string session, string kind, ulong seq, long captureNs, bool ack, int extraKeys)
        {
            Header(w, "input", id, 4 + (ack ? 1 : 0) + extraKeys);
            Pair(w, "session", session);
            Pair(w, "kind", kind);
            w.Write("seq");
            w.Write(seq);
            w.Write("t_capture_ns");
            w.Write(captureNs);
            if (ack)
            {
                w.Write("ack");
                w.Write(true);
            }
        }

        static void Header(MsgPackWriter w, string op, ulong id, int extraKeys)
        {
            w.Reset();
            w.WriteMapHeader(3 + extraKeys);
            Pair(w, "op", op);
            w.Write("id");
            w.Write(id);
            Pair(w, "v", ProtocolConstants.Version);
        }

        static void Pair(MsgPackWriter w, string key, string value)
        {
            w.Write(key);
            w.Write(value);
        }

        static void Pair(MsgPackWriter w, string key, int value)
        {
            w.Write(key);
            w.Write(value);
        }
    }
}
