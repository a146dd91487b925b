using System.Collections;
using UnityEngine;
#if UNITY_ANDROID && !UNITY_EDITOR
using UnityEngine.Android;
#endif

namespace AvatarBridge
{
    /// <summary>
    /// Camera and microphone permission: Android's runtime permissions there, Unity's
    /// Application.RequestUserAuthorization elsewhere (iOS, WebGL; desktop players and the editor
    /// grant it at once).
    /// </summary>
    static class DevicePermission
    {
        // How long to wait for an Android answer: the dialog gives no callback we rely on, so we poll.
        const float AndroidWaitSeconds = 30f;

        public static bool Granted(bool camera)
        {
#if UNITY_ANDROID && !UNITY_EDITOR
            return Permission.HasUserAuthorizedPermission(camera ? Permission.Camera : Permission.Microphone);
#else
            return Application.HasUserAuthorization(camera ? UserAuthorization.WebCam : UserAuthorization.Microphone);
#endif
        }

        /// <summary>A coroutine that asks once and ends when answered (check Granted afterwards).</summary>
        public static IEnumerator Request(bool camera)
        {
            if (Granted(camera)) yield break;
#if UNITY_ANDROID && !UNITY_EDITOR
            Permission.RequestUserPermission(camera ? Permission.Camera : Permission.Microphone);
            float until = Time.realtimeSinceStartup + AndroidWaitSeconds;
            while (!Granted(camera) && Time.realtimeSinceStartup < until) yield return null;
#else
            yield return Application.RequestUserAuthorization(camera ? UserAuthorization.WebCam : UserAuthorization.Microphone);
#endif
        }
    }
}
