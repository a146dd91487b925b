using UnityEditor;

namespace AvatarBridge.Editor
{
    /// <summary>
    /// Stops every bridge client before a domain reload and when leaving play mode. OnDisable
    /// normally does it; this also covers "Enter Play Mode Options" without domain reload and
    /// components destroyed in unusual orders, so no socket thread outlives its domain.
    /// </summary>
    [InitializeOnLoad]
    static class BridgeLifecycle
    {
        static BridgeLifecycle()
        {
            AssemblyReloadEvents.beforeAssemblyReload += ClientRegistry.ShutdownAll;
            EditorApplication.playModeStateChanged += state =>
            {
                if (state == PlayModeStateChange.ExitingPlayMode) ClientRegistry.ShutdownAll();
            };
        }
    }
}
