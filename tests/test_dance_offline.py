"""`avatar-bridge dance`: whole songs in one batch with the committed model (bridge.cli.dance), through the
motion pipeline's offline mode (MotionPipeline.dance)."""

from __future__ import annotations

import json
import wave
from pathlib import Path

import numpy as np
import pytest

from bridge.backends import load_engine
from bridge.cli.dance import dance_songs, read_song
from bridge.cli.main import main
from bridge.paths import default_models_dir
from bridge.pipelines.motion import MotionPipeline
from bridge.protocol.codec import ProtocolError
from training.songs.synthetic import synthesize_song


def _wav(path: Path, seconds: float, bpm: float, seed: int) -> Path:
    song = synthesize_song(seconds, bpm, seed, sample_rate=22050)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(song.sample_rate)
        w.writeframes((np.clip(song.pcm, -1, 1) * 32767).astype(np.int16).tobytes())
    return path


def test_two_songs_of_different_lengths_batched_equal_alone(tmp_path: Path) -> None:
    a, b = _wav(tmp_path / "a.wav", 2.0, 120.0, 9101), _wav(tmp_path / "b.wav", 3.5, 96.0, 9102)
    out = tmp_path / "out"
    assert main(["dance", str(a), str(b), "--out", str(out), "--text", "energetic hip hop"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["style"] == "middle_hiphop"
    frames = [s["frames"] for s in summary["songs"]]
    assert frames == [120, 210]  # one frame per 1/60 s of audio
    for name, n in zip(("a", "b"), frames, strict=True):
        text = (out / f"{name}.bvh").read_text()
        assert f"Frames: {n}\n" in text
        assert len(text.split("Frame Time:")[1].strip().splitlines()[1:]) == n

    engine = load_engine(default_models_dir() / "dance_lstm.manifest.json", warmup=False)
    songs = [read_song(a), read_song(b)]
    batched = dance_songs(engine, songs, "middle_hiphop")
    for song, together in zip(songs, batched, strict=True):
        (alone,) = dance_songs(engine, [song], "middle_hiphop")
        np.testing.assert_allclose(together.joints, alone.joints, atol=1e-4)
        np.testing.assert_allclose(together.root, alone.root, atol=1e-4)
        assert np.abs(np.diff(alone.joints, axis=0)).max() > 1e-3  # it dances, not a still pose


def test_unreadable_song_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.wav"
    bad.write_text("not audio")
    assert main(["dance", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert main(["dance", str(tmp_path / "missing.wav"), "--out", str(tmp_path / "o")]) == 2


def test_the_motion_pipelines_offline_mode() -> None:
    """MotionPipeline.dance, the public entry under the CLI: ceil(fps * seconds) frames per song,
    progress counted up to every frame, options refused as `open` refuses them, every row given back."""
    engine = load_engine(default_models_dir() / "dance_lstm.manifest.json", warmup=False)
    pipeline = MotionPipeline(engine)
    songs = [
        (np.asarray(synthesize_song(seconds, 110.0, seed, sample_rate=22050).pcm, np.float32), 22050)
        for seconds, seed in ((1.0, 9103), (1.5, 9104))
    ]
    seen: list[tuple[int, int]] = []
    danced = pipeline.dance(
        songs, {"style": "middle_hiphop", "energy": 1.25}, lambda d, t: seen.append((d, t))
    )
    assert [len(d.joints) for d in danced] == [60, 90] and [len(d.root) for d in danced] == [60, 90]
    assert seen[-1] == (150, 150) and len(seen) == 90  # one call per frame step, the shorter song leaves
    assert all(np.isfinite(d.joints).all() and d.held == 0 for d in danced)
    assert pipeline.slot_pool.in_use == 0  # the offline sessions' rows are free again
    with pytest.raises(ProtocolError):
        pipeline.dance(songs, {"style": "no such style"})
