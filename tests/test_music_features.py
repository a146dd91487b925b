"""Streaming AIST++/FACT music features against librosa and a known beat grid."""

from __future__ import annotations

import numpy as np
import pytest

from bridge.audio.music_features import FEATURE_DIM, MusicFeatureBatch, MusicFeatureStream
from bridge.backends import load_engine
from bridge.media.music import synthesize_music
from tests.conftest import MODELS

FPS = 60.0
SR = 30720  # FACT's analysis rate at 60 FPS: no resampling, rows compare 1:1 with librosa


@pytest.fixture(scope="module")
def song() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pcm, beats = synthesize_music(20.0, bpm=120.0, sample_rate=SR, seed=0)
    rows = MusicFeatureStream(SR, FPS).push(pcm)
    return pcm, beats, rows


def test_row_layout_and_count(song: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    pcm, _, rows = song
    assert rows.dtype == np.float32 and rows.shape[1] == FEATURE_DIM == 35
    # Row j needs audio up to j·512 + 1024 samples: the stream's only latency.
    assert rows.shape[0] == (pcm.size - 1024) // 512 + 1
    assert np.isfinite(rows).all()
    assert set(np.unique(rows[:, 33:35])) <= {0.0, 1.0}
    np.testing.assert_allclose(np.linalg.norm(rows[60:, 21:33], axis=1), 1.0, atol=1e-5)
    assert MusicFeatureStream(SR).latency_ms == pytest.approx(1000 * 1024 / SR)


def test_mfcc_and_envelope_match_librosa(song: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    librosa = pytest.importorskip("librosa")
    pcm, _, rows = song
    mfcc = librosa.feature.mfcc(y=pcm, sr=SR, n_mfcc=20).T
    env = librosa.onset.onset_strength(y=pcm, sr=SR)
    n = rows.shape[0]
    for k in range(20):
        assert np.corrcoef(rows[:, 1 + k], mfcc[:n, k])[0, 1] > 0.99, k
    assert np.corrcoef(rows[:, 0], env[:n])[0, 1] > 0.99


def _clicks(seconds: float, hits: np.ndarray, sr: int) -> np.ndarray:
    """Short decaying noise bursts at the given times: onsets with no ambiguity."""
    rng = np.random.default_rng(3)
    pcm = np.zeros(int(seconds * sr), np.float32)
    burst = (rng.standard_normal(int(0.04 * sr)) * np.exp(-np.arange(int(0.04 * sr)) / (0.008 * sr))).astype(
        np.float32
    )
    for t in hits:
        i = int(t * sr)
        pcm[i : i + burst.size] += 0.5 * burst[: pcm.size - i]
    return pcm


def test_onset_peaks_land_on_drum_hits(song: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    rng = np.random.default_rng(4)
    hits = np.sort(rng.uniform(0.5, 9.5, size=30))
    hits = hits[np.concatenate([[True], np.diff(hits) > 0.12])]
    rows = MusicFeatureStream(48000).push(_clicks(10.0, hits, 48000))
    peaks = np.flatnonzero(rows[:, 33])
    hit_frames = np.round(hits * FPS)
    assert np.mean([np.abs(peaks - h).min() <= 2 for h in hit_frames]) >= 0.9  # recall
    assert np.mean([np.abs(hit_frames - p).min() <= 2 for p in peaks]) >= 0.9  # precision
    # In the synthesized song every drum hit (each beat) gets an onset peak.
    _, beats, song_rows = song
    song_peaks = np.flatnonzero(song_rows[:, 33])
    assert np.mean([np.abs(song_peaks - b).min() <= 2 for b in np.round(beats * FPS)]) >= 0.95


@pytest.mark.parametrize("bpm", [100.0, 120.0, 128.0])
def test_beats_follow_the_grid_after_warm_up(bpm: float) -> None:
    pcm, beats = synthesize_music(16.0, bpm=bpm, sample_rate=48000, seed=1)
    rows = MusicFeatureStream(48000).push(pcm)
    detected = np.flatnonzero(rows[:, 34])
    truth = np.round(beats * FPS)
    truth = truth[(truth >= 3 * FPS) & (truth < rows.shape[0] - 2)]  # after 3 s of warm-up
    recall = np.mean([detected.size > 0 and np.abs(detected - t).min() <= 2 for t in truth])
    late = detected[detected >= 3 * FPS]
    precision = np.mean([np.abs(truth - d).min() <= 2 for d in late])
    assert recall >= 0.8 and precision >= 0.8, (recall, precision)


@pytest.mark.parametrize("rate", [30720, 48000, 44100])
def test_chunking_does_not_change_the_rows(rate: int) -> None:
    pcm, _ = synthesize_music(6.0, bpm=120.0, sample_rate=rate, seed=2)
    whole = MusicFeatureStream(rate).push(pcm)
    stream = MusicFeatureStream(rate)
    rng = np.random.default_rng(rate)
    parts, i = [], 0
    while i < pcm.size:
        k = int(rng.integers(1, 2500))
        parts.append(stream.push(pcm[i : i + k]))
        i += k
    np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_int16_and_silence() -> None:
    pcm, _ = synthesize_music(3.0, bpm=120.0, sample_rate=48000, seed=0)
    as_float = MusicFeatureStream(48000).push(pcm)
    as_int = MusicFeatureStream(48000).push((pcm * 32767).astype(np.int16))
    np.testing.assert_allclose(as_int[:, 1:21], as_float[:, 1:21], atol=1.0)  # MFCC, ±16-bit noise
    np.testing.assert_allclose(as_int[:, 21:33], as_float[:, 21:33], atol=0.05)
    quiet = MusicFeatureStream(48000).push(np.zeros(48000 * 3, np.float32))
    assert np.isfinite(quiet).all() and quiet[:, 33:].sum() == 0
    assert MusicFeatureStream(48000).push(np.zeros(100, np.float32)).shape == (0, 35)
    with pytest.raises(ValueError):
        MusicFeatureStream(48000).push(np.zeros((10, 2), np.float32))


def _chunks(pcm: np.ndarray, rng: np.random.Generator, mean: int) -> list[np.ndarray]:
    """`pcm` cut at random lengths around `mean`, with empty ticks between some."""
    parts, i = [], 0
    while i < pcm.size:
        k = 0 if rng.random() < 0.2 else int(rng.integers(1, 2 * mean))
        parts.append(pcm[i : i + k])
        i += k
    return parts


def test_a_batch_steps_every_stream_as_if_alone() -> None:
    # Streams of different rates, chunk sizes and start ticks, one leaving halfway (its row is reused
    # by one that joins later), all fed tick by tick and computed with one run per tick.
    rng = np.random.default_rng(7)
    rates = [48000, 44100, 30720, 16000, 48000, 22050]
    songs = [synthesize_music(5.0, bpm=100.0 + 10 * i, sample_rate=r, seed=i)[0] for i, r in enumerate(rates)]
    starts = [0, 0, 13, 40, 90, 200]  # ticks
    stop = {4: 150}  # stream 4 leaves at tick 150
    ticks = [_chunks(pcm, rng, r // 60) for pcm, r in zip(songs, rates, strict=True)]
    batch = MusicFeatureBatch(FPS)
    streams: dict[int, MusicFeatureStream] = {}
    got: dict[int, list[np.ndarray]] = {i: [] for i in range(len(rates))}
    for tick in range(max(s + len(t) for s, t in zip(starts, ticks, strict=True))):
        for i, (start, parts) in enumerate(zip(starts, ticks, strict=True)):
            if tick == stop.get(i):
                del streams[i]
            elif start <= tick < start + len(parts) and tick < stop.get(i, 10**9):
                if i not in streams:
                    streams[i] = batch.open(rates[i])
                got[i].append(streams[i].feed(parts[tick - start]))
        batch.run()
    assert batch._pool.size < len(rates)  # the leaver's row went to a later stream
    for i, rate in enumerate(rates):
        fed = stop[i] - starts[i] if i in stop else len(ticks[i])
        pcm = np.concatenate(ticks[i][:fed])
        alone = MusicFeatureStream(rate, FPS).push(pcm)
        rows = np.concatenate(got[i])
        assert rows.shape == alone.shape and rows.shape[0] > 0, i
        np.testing.assert_array_equal(rows, alone)  # bit for bit: no product depends on the batch size


def test_tempo_every_frame_or_every_n_frames_finds_the_same_beat() -> None:
    pcm, beats = synthesize_music(12.0, bpm=128.0, sample_rate=48000, seed=3)
    truth = np.round(beats * FPS)
    for every in (1, 15, 60):
        stream = MusicFeatureStream(48000, FPS, tempo_every=every)
        rows = stream.push(pcm)
        assert abs(stream.meter.tempo_bpm / 128.0 - 1.0) < 0.02, every
        late = np.flatnonzero(rows[:, 34])
        late = late[late >= 4 * FPS]
        assert np.mean([np.abs(truth - d).min() <= 2 for d in late]) >= 0.8, every
    with pytest.raises(ValueError):
        MusicFeatureBatch(FPS, tempo_every=0)
    with pytest.raises(ValueError):
        MusicFeatureStream(48000, 30.0, batch=MusicFeatureBatch(FPS))


def test_the_motion_pipeline_computes_all_sessions_audio_in_one_run() -> None:

    from bridge.pipelines.motion import MotionPipeline
    from bridge.protocol.requests import AudioInput

    manifest = MODELS / "dance_lstm.manifest.json"
    engine = load_engine(manifest, backend="onnxruntime")
    try:
        motion = MotionPipeline(engine)
        rates = [48000, 44100, 16000]
        pcms = [synthesize_music(1.0, sample_rate=r, seed=i)[0] for i, r in enumerate(rates)]
        states = [motion.open_session({}) for _ in rates]
        alone = [MusicFeatureStream(r, motion.fps) for r in rates]
        for tick in range(40):
            steps, want = [], []
            for i, (state, rate, pcm) in enumerate(zip(states, rates, pcms, strict=True)):
                chunk = pcm[tick * rate // 60 : (tick + 1) * rate // 60]
                if chunk.size:
                    steps.append(
                        motion.prepare(state, AudioInput(0, f"{i:016x}", tick, tick, False, rate, chunk))
                    )
                    want.append(alone[i].push(chunk))
            ready = [i for i, s in enumerate(steps) if s]
            if ready:
                # One engine call of one session fills every session's rows of this tick.
                motion.run_batch([states[ready[0]]], [steps[ready[0]][0]])
                for s, w in zip(steps, want, strict=True):
                    got = np.concatenate([step.payload for step in s]) if s else np.zeros((0, 35), np.float32)
                    np.testing.assert_array_equal(got, w)
    finally:
        engine.close()
