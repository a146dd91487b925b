using System.Runtime.CompilerServices;

// The editor hooks stop clients through ClientRegistry; the play-mode tests drive the drivers' steps directly.
[assembly: InternalsVisibleTo("AvatarBridge.Editor")]
[assembly: InternalsVisibleTo("AvatarBridge.Runtime.Tests")]
