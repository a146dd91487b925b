using System.Collections.Generic;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>Typed reads from a decoded msgpack map; a missing key or wrong type is a ProtocolException naming both.</summary>
    public static class ReadMap
    {
        public static object Required(IDictionary<string, object> map, string key, string what)
        {
            object value;
            if (!map.TryGetValue(key, out value)) throw new ProtocolException(what + ": missing '" + key + "'");
            return value;
        }

        public static string String(IDictionary<string, object> map, string key, string what)
        {
            var value = Required(map, key, what) as string;
            if (value == null) throw WrongType(what, key, "str");
            return value;
        }

        public static string OptionalString(IDictionary<string, object> map, string key, string what)
        {
            object value;
            if (!map.TryGetValue(key, out value) || value == null) return null;
            var text = value as string;
            if (text == null) throw WrongType(what, key, "str");
            return text;
        }

        public static long Long(IDictionary<string, object> map, string key, string what)
        {
            var value = Required(map, key, what);
            if (value is long) return (long)value;
            throw WrongType(what, key, "int");
        }

        public static double Double(IDictionary<string, object> map, string key, string what)
        {
            var value = Required(map, key, what);
            if (value is double) return (double)value;
            if (value is long) return (long)value; // an integral float may be packed as an int
            throw WrongType(what, key, "float");
        }

        public static bool Bool(IDictionary<string, object> map, string key, string what)
        {
            var value = Required(map, key, what);
            if (value is bool) return (bool)value;
            throw WrongType(what, key, "bool");
        }

        public static byte[] Bytes(IDictionary<string, object> map, string key, string what)
        {
            var value = Required(map, key, what) as byte[];
            if (value == null) throw WrongType(what, key, "bin");
            return value;
        }

        public static object[] Array(IDictionary<string, object> map, string key, string what)
        {
            var value = Required(map, key, what) as object[];
            if (value == null) throw WrongType(what, key, "array");
            return value;
        }

        public static Dictionary<string, object> Map(IDictionary<string, object> map, string key, string what)
        {
            var value = Required(map, key, what) as Dictionary<string, object>;
            if (value == null) throw WrongType(what, key, "map");
            return value;
        }

        public static string[] StringArray(IDictionary<string, object> map, string key, string what)
        {
            var items = Array(map, key, what);
            var result = new string[items.Length];
            for (int i = 0; i < items.Length; i++)
            {
                result[i] = items[i] as string;
                if (result[i] == null) throw WrongType(what, key, "array of str");
            }
            return result;
        }

        public static int[] IntArray(IDictionary<string, object> map, string key, string what)
        {
            var items = Array(map, key, what);
            var result = new int[items.Length];
            for (int i = 0; i < items.Length; i++)
            {
                if (!(items[i] is long)) throw WrongType(what, key, "array of int");
                result[i] = (int)(long)items[i];
            }
            return result;
        }

        /// <summary>A float32 little-endian bin with exactly count elements.</summary>
        public static float[] FloatArray(IDictionary<string, object> map, string key, int count, string what)
        {
            var bytes = Bytes(map, key, what);
            if (bytes.Length != count * 4) throw new ProtocolException(what + ": '" + key + "' must hold " + count + " float32, got " + bytes.Length + " bytes");
            var result = new float[count];
            System.Buffer.BlockCopy(bytes, 0, result, 0, bytes.Length);
            return result;
        }

        static ProtocolException WrongType(string what, string key, string type) =>
            new ProtocolException(what + ": '" + key + "' must be " + type);
    }
}
