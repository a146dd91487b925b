"""Songs played on real instrument samples: MIDI we compose, rendered by FluidSynth with a GM sound font.

`compose` writes a Standard MIDI File (through `mido`) for a genre: a General MIDI drum kit
(channel 10), a bass line and a chord or lead voice, in 4/4 or 3/4, straight or swung, at any tempo.
Every note sits on a grid derived from the tempo, so the beat times are known exactly. `render`
plays it with Debian's `fluidsynth` and `fluid-soundfont-gm` (sampled instruments, not our
synthesizer), which is what makes these songs a held-out test for a dancer trained on
`training.songs.synthetic`. Used by the dance benchmark and tests; neither the bridge nor `import bridge`
needs mido or fluidsynth.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import mido
import numpy as np
import numpy.typing as npt
import soundfile

__all__ = ["GENRES", "SOUND_FONTS", "MidiSong", "compose", "fluidsynth_available", "midi_song", "render"]

TICKS = 480  # per beat
SOUND_FONTS = (Path("/usr/share/sounds/sf2/FluidR3_GM.sf2"), Path("/usr/share/sounds/sf2/default-GM.sf2"))
DRUMS = 9  # MIDI channel 10
KICK, SNARE, CLAP, HAT, PEDAL_HAT, OPEN_HAT, CRASH, RIDE = 36, 38, 39, 42, 44, 46, 49, 51
_MAJOR = (0, 2, 4, 5, 7, 9, 11)
_PROGRESSIONS = ((0, 4, 5, 3), (0, 5, 3, 4), (1, 4, 0, 0), (0, 3, 4, 3))


@dataclass(frozen=True)
class Genre:
    beats_per_bar: int
    swing: float  # 0 straight; 1/3 triplet swing (the off-beat eighth falls 1/6 beat late)
    bass: int  # GM program (0-based)
    chords: int
    lead: int | None


GENRES: dict[str, Genre] = {
    "hiphop": Genre(4, 0.15, 38, 4, None),  # synth bass, electric piano, a lazy swing
    "rock": Genre(4, 0.0, 34, 29, None),  # picked bass, overdriven guitar
    "swing": Genre(4, 1.0 / 3.0, 32, 0, 65),  # acoustic bass walking, piano, alto sax
    "house": Genre(4, 0.0, 38, 89, None),  # four on the floor, warm pad stabs
    "waltz": Genre(3, 0.0, 32, 48, 73),  # oom-pah-pah: bass on 1, strings on 2 and 3, flute
    "punk": Genre(4, 0.0, 34, 30, None),  # distortion guitar, straight eighths, fast
}


@dataclass(frozen=True)
class MidiSong:
    midi: mido.MidiFile
    genre: str
    bpm: float
    beats_per_bar: int
    swing: float
    beats: npt.NDArray[np.float64]  # beat times, seconds (exact: the notes are placed on them)
    beat_in_bar: npt.NDArray[np.int64]  # 0 = downbeat


class _Track:
    """Note events on absolute ticks, written out as one mido track of delta times."""

    def __init__(self) -> None:
        self.events: list[tuple[int, int, mido.Message]] = []  # (tick, order: offs first, message)

    def program(self, channel: int, program: int) -> None:
        self.events.append((0, 0, mido.Message("program_change", channel=channel, program=program)))

    def note(self, channel: int, note: int, at: float, length: float, velocity: int) -> None:
        """A note at `at` beats for `length` beats."""
        on, off = round(at * TICKS), round((at + length) * TICKS)
        v = int(np.clip(velocity, 1, 127))
        self.events.append((on, 1, mido.Message("note_on", channel=channel, note=note, velocity=v)))
        self.events.append((max(off, on + 1), 0, mido.Message("note_off", channel=channel, note=note)))

    def to_midi(self, tempo: int | None = None) -> mido.MidiTrack:
        track = mido.MidiTrack()
        if tempo is not None:
            track.append(mido.MetaMessage("set_tempo", tempo=tempo, time=0))
        last = 0
        for tick, _, msg in sorted(self.events, key=lambda e: (e[0], e[1])):
            track.append(msg.copy(time=tick - last))
            last = tick
        return track


def _eighth(beat: int, swing: float) -> float:
    """The off-beat eighth of `beat`, in beats, swung later by swing/2 of a beat."""
    return beat + 0.5 + swing / 2


def compose(genre: str, bpm: float, seconds: float, seed: int) -> MidiSong:
    """A deterministic song of `genre` at `bpm` for `seconds` (a whole number of beats)."""
    g = GENRES[genre]
    rng = np.random.default_rng(seed)
    meter, sw = g.beats_per_bar, g.swing
    n_beats = int(seconds * bpm / 60.0)
    key = 36 + int(rng.integers(0, 12))  # bass root octave, C2..B2
    prog = _PROGRESSIONS[int(rng.integers(len(_PROGRESSIONS)))]
    drums, bass, chords = _Track(), _Track(), _Track()
    bass.program(1, g.bass)
    chords.program(2, g.chords)
    if g.lead is not None:
        chords.program(3, g.lead)

    def hit(note: int, at: float, vel: float) -> None:
        drums.note(DRUMS, note, at, 0.25, round(vel * rng.uniform(0.9, 1.0)))

    for b in range(n_beats):
        p, bar = b % meter, b // meter
        degree = prog[bar % len(prog)]
        root = key + _MAJOR[degree]
        # Drums: the downbeat is the loudest hit, as in the training songs and most real music.
        if p == 0:
            hit(KICK, b, 118)
            if bar % 4 == 0:
                hit(CRASH, b, 90)
        if genre == "house":
            if p:
                hit(KICK, b, 110)  # four on the floor
            hit(OPEN_HAT, _eighth(b, sw), 70)
            if p % 2 == 1:
                hit(CLAP, b, 100)
        elif genre == "swing":
            hit(RIDE, b, 80)
            if p % 2 == 1:
                hit(PEDAL_HAT, b, 70)
                hit(RIDE, _eighth(b, sw), 60)
            hit(KICK, b, 45)  # feathered kick
        elif genre == "waltz":
            if p:
                hit(SNARE, b, 55)
                hit(HAT, b, 60)
        else:  # hiphop, rock, punk: back-beat
            if p % 2 == 1:
                hit(SNARE, b, 110)
            elif p and genre != "hiphop":
                hit(KICK, b, 100)
            hit(HAT, b, 75)
            hit(HAT, _eighth(b, sw), 55)
            if genre == "hiphop" and p == 2:
                hit(KICK, _eighth(b, sw), 95)
        # Bass.
        if genre == "swing":
            bass.note(1, root + (0, 4, 7, 9)[p], b, 0.9, 95)  # walking up the chord
        elif genre == "waltz":
            if p == 0:
                bass.note(1, root, b, 0.9, 100)
        elif genre == "house":
            bass.note(1, root, _eighth(b, sw), 0.4, 100)
        elif genre in ("rock", "punk"):
            bass.note(1, root, b, 0.45, 100)
            bass.note(1, root, _eighth(b, sw), 0.45, 85)
        elif p in (0, 2):  # hiphop
            bass.note(1, root, b, 1.5, 105)
        # Chords (triads over the bass root, two octaves up) and a lead phrase on some bars.
        triad = [
            root + 24 + _MAJOR[(degree + k) % 7] - _MAJOR[degree] + 12 * ((degree + k) // 7)
            for k in (0, 2, 4)
        ]
        if genre == "waltz":
            if p:
                for n in triad:
                    chords.note(2, n, b, 0.8, 70)
        elif genre == "house":
            if p % 2 == 1:
                for n in triad:
                    chords.note(2, n, _eighth(b, sw), 0.3, 80)
        elif p == 0:
            for n in triad:
                chords.note(2, n, b, meter - 0.1, 72)
        if g.lead is not None and bar % 2 == 1:
            chords.note(3, triad[int(rng.integers(3))] + 12, b + (0.5 if p == 1 else 0.0), 0.45, 85)
    midi = mido.MidiFile(ticks_per_beat=TICKS)
    midi.tracks.append(drums.to_midi(tempo=round(60e6 / bpm)))
    midi.tracks.append(bass.to_midi())
    midi.tracks.append(chords.to_midi())
    # The set_tempo meta holds whole microseconds per beat: the beat times use that exact value.
    beats = np.arange(n_beats) * round(60e6 / bpm) / 1e6
    return MidiSong(midi, genre, bpm, meter, sw, beats, (np.arange(n_beats) % meter).astype(np.int64))


def _sound_font() -> Path | None:
    return next((p for p in SOUND_FONTS if p.exists()), None)


def fluidsynth_available() -> str | None:
    """None when songs can be rendered here, else what is missing (for a skip message)."""
    if shutil.which("fluidsynth") is None:
        return "fluidsynth is not installed (apt-get install fluidsynth)"
    if _sound_font() is None:
        return f"no GM sound font at {SOUND_FONTS[0]} (apt-get install fluid-soundfont-gm)"
    return None


def render(song: MidiSong, sample_rate: int = 48000, seconds: float | None = None) -> npt.NDArray[np.float32]:
    """Mono float32 PCM of `song` played by FluidSynth (fast file rendering, no audio device),
    cut to `seconds` when given; the first note starts at sample 0."""
    missing = fluidsynth_available()
    if missing is not None:
        raise RuntimeError(missing)
    with tempfile.TemporaryDirectory() as tmp:
        mid, wav = Path(tmp) / "song.mid", Path(tmp) / "song.wav"
        song.midi.save(str(mid))
        cmd = [
            "fluidsynth",
            "-q",
            "-n",
            "-i",
            "-g",
            "0.6",
            "-r",
            str(sample_rate),
            "-T",
            "wav",
            "-F",
            str(wav),
        ]
        subprocess.run([*cmd, str(_sound_font()), str(mid)], check=True, capture_output=True)
        pcm, _ = soundfile.read(str(wav), dtype="float32", always_2d=True)
    mono: npt.NDArray[np.float32] = np.asarray(pcm, np.float32).mean(axis=1)
    if seconds is not None:
        mono = mono[: int(seconds * sample_rate)]
    mono /= max(1e-9, float(np.abs(mono).max()))
    return (0.9 * mono).astype(np.float32)


def midi_song(
    genre: str, bpm: float, seconds: float, seed: int, sample_rate: int = 48000
) -> tuple[MidiSong, npt.NDArray[np.float32]]:
    """`compose` then `render`: the song (with its beats) and its PCM."""
    song = compose(genre, bpm, seconds + 2.0, seed)  # two spare seconds so the cut lands mid-song
    keep = song.beats < seconds
    return replace(song, beats=song.beats[keep], beat_in_bar=song.beat_in_bar[keep]), render(
        song, sample_rate, seconds
    )
