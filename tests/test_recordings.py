"""Packaged recordings for dance training: the three lists never share a package, and a recording is
cut into pieces of the served features that cover all of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile

from bridge.audio.music_features import BEAT_COLUMN, MusicFeatureStream
from training.dance.train import recording_pieces
from training.songs.recordings import BENCH, TRAINING, VALIDATION, Recording, missing, read_mono
from training.songs.synthetic import synthesize_song


def test_training_and_validation_never_hear_the_benchmark_packages() -> None:
    packages = [{r.package for r in group} for group in (BENCH, TRAINING, VALIDATION)]
    assert not packages[0] & packages[1] and not packages[0] & packages[2] and not packages[1] & packages[2]


def test_a_recording_is_cut_into_served_pieces_that_cover_it(tmp_path: Path) -> None:
    song = synthesize_song(25.0, 128.0, seed=3)
    path = tmp_path / "song.ogg"
    soundfile.write(str(path), np.stack([song.pcm, song.pcm], axis=1), song.sample_rate)
    recording = Recording("test", path)
    pcm, rate = read_mono(recording)
    whole = MusicFeatureStream(rate, 60.0).push(pcm)
    pieces = recording_pieces(recording, 10.0, style=2)
    assert len(pieces) == 3 and all(p[0].shape == (600, whole.shape[1]) and p[1] == 2 for p in pieces)
    np.testing.assert_array_equal(pieces[0][0], whole[:600])
    np.testing.assert_array_equal(pieces[1][0], whole[600:1200])
    np.testing.assert_array_equal(pieces[2][0], whole[-600:])  # the last one ends where the song does
    np.testing.assert_array_equal(pieces[2][2], np.flatnonzero(whole[-600:, BEAT_COLUMN]))
    assert recording_pieces(recording, 30.0, style=0) == []
    assert missing((recording, Recording("not-installed", tmp_path / "absent.ogg"))) == ["not-installed"]
