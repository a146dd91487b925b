using System.Collections.Generic;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>Checks shared by the face and body rig descriptions.</summary>
    static class RigChecks
    {
        /// <summary>The axis conversion in AxisConversion is only right for the one wire convention; refuse anything else.</summary>
        public static void Coordinates(Dictionary<string, object> rig, string what)
        {
            var coordinates = ReadMap.Map(rig, "coordinates", what);
            if (ReadMap.String(coordinates, "handedness", what) != "right" ||
                ReadMap.String(coordinates, "up", what) != "+y" ||
                ReadMap.String(coordinates, "forward", what) != "+z" ||
                ReadMap.String(coordinates, "units", what) != "m")
                throw new ProtocolException(what + ": coordinates are not right-handed +y up +z forward metres");
            if (ReadMap.String(rig, "quaternion_order", what) != "xyzw")
                throw new ProtocolException(what + ": quaternion_order must be xyzw");
        }

        public static void Count(int actual, int expected, string key, string what)
        {
            if (actual != expected) throw new ProtocolException(what + ": '" + key + "' has " + actual + " entries, expected " + expected);
        }
    }
}
