"""What the bridge needs from outside pip, and the command that installs each on Debian/Ubuntu, macOS
and Windows: one wording for every message that names a fix (sources, the demo, `avatar-bridge doctor`).

A leaf module (standard library only), so every layer may ask it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FFMPEG", "OPENCV_FFMPEG", "PORTAUDIO", "SystemPackage", "reencode_command"]


@dataclass(frozen=True)
class SystemPackage:
    name: str
    debian: str  # Debian and Ubuntu
    macos: str
    windows: str

    def fix(self) -> str:
        return (
            f"install {self.name}: Debian/Ubuntu `{self.debian}`; macOS `{self.macos}`; "
            f"Windows `{self.windows}`"
        )


# sounddevice's macOS and Windows wheels carry PortAudio; on Linux it loads the system's library.
PORTAUDIO = SystemPackage(
    "PortAudio",
    debian="sudo apt-get install libportaudio2",
    macos="pip install --force-reinstall sounddevice",
    windows="pip install --force-reinstall sounddevice",
)
FFMPEG = SystemPackage(
    "ffmpeg",
    debian="sudo apt-get install ffmpeg",
    macos="brew install ffmpeg",
    windows="winget install Gyan.FFmpeg",
)
# OpenCV decodes video files through the FFmpeg its PyPI wheels bundle, on every system.
OPENCV_FFMPEG = SystemPackage(
    "OpenCV with its FFmpeg video backend",
    debian="pip install --force-reinstall opencv-python-headless",
    macos="pip install --force-reinstall opencv-python-headless",
    windows="pip install --force-reinstall opencv-python-headless",
)


def reencode_command(path: str) -> str:
    """ffmpeg's command turning a video into H.264 in MP4, which every OpenCV build with FFmpeg decodes."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return f'ffmpeg -i "{path}" -c:v libx264 -pix_fmt yuv420p -an "{stem}-h264.mp4"'
