using System.Collections.Generic;

namespace AvatarBridge.Core.Protocol
{
    /// <summary>One entry of the list reply (section 4.2).</summary>
    public sealed class ModelInfo
    {
        const string What = "list model";

        public string Name { get; private set; }
        public string Pipeline { get; private set; }
        public double Fps { get; private set; }
        public bool Trained { get; private set; }
        public string Backend { get; private set; }
        public bool IsDefault { get; private set; }
        /// <summary>Motion models' styles; empty for face models.</summary>
        public string[] Styles { get; private set; }

        public static ModelInfo[] FromReply(Reply reply)
        {
            var items = reply.GetArray("models");
            var models = new ModelInfo[items.Length];
            for (int i = 0; i < items.Length; i++)
            {
                var map = items[i] as Dictionary<string, object>;
                if (map == null) throw new ProtocolException("list: models must be maps");
                models[i] = new ModelInfo
                {
                    Name = ReadMap.String(map, "name", What),
                    Pipeline = ReadMap.String(map, "pipeline", What),
                    Fps = ReadMap.Double(map, "fps", What),
                    Trained = ReadMap.Bool(map, "trained", What),
                    Backend = ReadMap.String(map, "backend", What),
                    IsDefault = ReadMap.Bool(map, "default", What),
                    Styles = map.ContainsKey("styles") ? ReadMap.StringArray(map, "styles", What) : new string[0],
                };
            }
            return models;
        }
    }
}
