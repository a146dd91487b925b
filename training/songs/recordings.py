"""Real music recordings that ship in Debian packages: which ones the dance benchmark holds out, which
ones the dance student trains and validates on, and how to read them.

No recording is in the repository: each is read from where its package installs it (`apt-get install
PACKAGE`), and a missing one is skipped by whoever uses it, saying so. The three uses never share a
package, so neither training nor validation hears the benchmark's songs or their composers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import soundfile


@dataclass(frozen=True)
class Recording:
    package: str
    path: Path
    start_s: float = 0.0
    loops: int = 1  # a short game loop is played back to back, as the game does
    style: int = 0  # index into bridge.models.motion.AIST_STYLES (the benchmark's choice per song)


_ETR = Path("/usr/share/games/etr/music")
_XMOTO = Path("/usr/share/games/xmoto/Textures/Musics")
_LINCITY = Path("/usr/share/games/lincity-ng/music/default")
_POWERMANGA = Path("/usr/share/games/powermanga/sound/handheld_console")
_NEVERBALL = Path("/usr/share/games/neverball/bgm")

# Held out by bench/dance_quality.py (beats estimated offline, checked against librosa's tracker).
BENCH = (
    Recording("chromium-bsu-data", Path("/usr/share/games/chromium-bsu/wav/music_game.wav"), 0.0, 5, 3),
    Recording("asc-music", Path("/usr/share/games/asc/music/time_to_strike.mp3"), 20.0, 1, 1),  # pop
    Recording("asc-music", Path("/usr/share/games/asc/music/frontiers.mp3"), 200.0, 1, 4),  # la_hiphop
)
# Training: whole game soundtracks (electronic, rock, jazz-funk, chiptune), about 37 min of music in
# tracks of a minute or more. No beat labels are needed: the target is the choreographer's dance on
# the served features, as for every other training song.
TRAINING = (
    *(
        Recording("extremetuxracer-data", _ETR / f"{name}.ogg")
        for name in ("start1-jt", "credits1-cp", "spunkyrace-ks", "freezingpoint", "calmrace-ks")
    ),
    *(
        Recording("xmoto-data", _XMOTO / f"{name}.ogg")
        for name in ("ridealong", "batcave", "legolodio", "foxrun", "MadeiraStew", "menu", "speeditup")
    ),
    *(
        Recording("lincity-ng-data", _LINCITY / name)
        for name in (
            "01 - pronobozo - lincity.ogg",
            "02 - Robert van Herk - City Blues.ogg",
            "03 - Robert van Herk - Architectural Contemplations.ogg",
        )
    ),
    *(
        Recording("powermanga-data", _POWERMANGA / f"music_{name}.ogg")
        for name in ("game", "congratulations", "menu")
    ),
    Recording("freedroid-data", Path("/usr/share/games/freedroid/sound/Paradroid.ogg")),
)
# Validation (the training's checkpoint choice): 30 s from 10 s into six Neverball tracks, scored on
# the served beat tracker's beats (the ones the teacher dances to: whether the student follows the
# music on recordings, not whether the tracker is right).
VALIDATION = tuple(Recording("neverball-data", _NEVERBALL / f"track{n}.ogg", 10.0) for n in range(1, 7))


def read_mono(recording: Recording, seconds: float | None = None) -> tuple[npt.NDArray[np.float32], int]:
    """(mono PCM, sample rate) from `start_s`: `seconds` of it, or the rest; a loop played `loops` times."""
    with soundfile.SoundFile(str(recording.path)) as f:
        rate = int(f.samplerate)
        f.seek(int(recording.start_s * rate))
        frames = -1 if seconds is None or recording.loops > 1 else int(seconds * rate)
        pcm = np.asarray(f.read(frames, "float32", True)).mean(axis=1)
    return np.tile(pcm, recording.loops).astype(np.float32), rate


def missing(recordings: tuple[Recording, ...]) -> list[str]:
    """The packages to install for the recordings that are not on this machine."""
    return sorted({r.package for r in recordings if not r.path.exists()})
