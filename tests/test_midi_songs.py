"""Songs on real instrument samples (training.songs.midi): the MIDI grid is the ground truth,
FluidSynth plays it, and the served beat tracker hears the tempo that was written."""

from __future__ import annotations

import numpy as np
import pytest

from bridge.audio.music_features import MusicFeatureStream
from training.songs.midi import compose, midi_song


def test_the_beats_are_the_midi_grid() -> None:
    song = compose("waltz", 100.0, 12.0, seed=3)
    assert song.beats_per_bar == 3 and list(song.beat_in_bar[:6]) == [0, 1, 2, 0, 1, 2]
    assert np.allclose(np.diff(song.beats), 0.6) and song.beats[-1] < 12.0 <= song.beats[-1] + 0.6
    drums = song.midi.tracks[0]
    at, kicks = 0, []
    for msg in drums:
        at += msg.time
        if msg.type == "note_on" and msg.note == 36:
            kicks.append(at / song.midi.ticks_per_beat)
    assert kicks[:3] == [0.0, 3.0, 6.0]  # a kick on every downbeat of 3/4
    assert compose("waltz", 100.0, 12.0, seed=3).midi.tracks[2] == song.midi.tracks[2]  # deterministic


@pytest.mark.parametrize(("genre", "bpm"), [("swing", 140.0), ("waltz", 96.0), ("punk", 176.0)])
def test_fluidsynth_renders_what_the_tracker_hears(genre: str, bpm: float) -> None:
    song, pcm = midi_song(genre, bpm, 10.0, seed=1)
    assert pcm.dtype == np.float32 and len(pcm) == 10 * 48000 and 0.5 < np.abs(pcm).max() <= 0.9
    stream = MusicFeatureStream(48000, 60.0)
    rows = stream.push(pcm)
    assert stream.meter.tempo_bpm == pytest.approx(bpm, rel=0.02)
    # The onsets are on the written beats: the onset envelope peaks within 3 frames after them.
    beats = np.round(song.beats * 60).astype(int)
    beats = beats[(beats > 10) & (beats < len(rows) - 10)]
    profile = np.mean([rows[b - 5 : b + 6, 0] for b in beats], axis=0)
    assert 0 <= int(np.argmax(profile)) - 5 <= 3
