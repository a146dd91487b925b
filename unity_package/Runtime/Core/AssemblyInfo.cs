using System.Runtime.CompilerServices;

// The handoff and stats internals are exercised directly by the edit-mode tests.
[assembly: InternalsVisibleTo("AvatarBridge.Editor.Tests")]
