"""Speech benchmark: viseme accuracy on held-out voices beside an energy-only baseline, lip-sync
offset, CPU cost per session-frame and sessions per core (docs/speech.md).

Every held-out voice (eSpeak NG variants never used in training, five languages) speaks the held-out
sentences; the pipeline runs in-process, in 1/30 s chunks, exactly as the scheduler drives it
(prepare -> run_batch -> finish_batch -> frame decode), once calibrated with the voice's five vowels
and once not. The baseline in the same run says "silence" below a level threshold and the most
frequent spoken viseme above it; its threshold and class are picked on the test data itself (the
most favourable choice for it). Chance is the most frequent class. Cost: one 1/30 s chunk for each
of N sessions per tick, one batched engine call, wall time per session-frame on one core.

    python bench/speech.py [--out bench/results/speech-cpu.json]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from bridge.backends import load_engine
from bridge.clients.harness.run import write_bench_json
from bridge.pipelines.base import Step
from bridge.pipelines.speech import SpeechPipeline, SpeechState
from bridge.protocol.frames import FaceFrame, decode_frame
from bridge.protocol.requests import AudioInput
from bridge.rig.arkit import ARKIT_INDEX
from bridge.runtime.manifest import load_manifest
from bridge.speech.corpus import calibration_clip, sentences, speak, voices
from bridge.speech.espeak import viseme_track
from training.speech import scoring

ROOT = Path(__file__).resolve().parents[1]
JAW = ARKIT_INDEX["JawOpen"]
SESSION_COUNTS = (1, 16, 64)


def run_frames(pipeline: SpeechPipeline, state: SpeechState, pcm: np.ndarray, rate: int) -> list[FaceFrame]:
    frames: list[FaceFrame] = []
    chunk = rate // 30
    for seq, start in enumerate(range(0, len(pcm), chunk)):
        for step in pipeline.prepare(
            state, AudioInput(0, "s", seq, 0, False, rate, pcm[start : start + chunk])
        ):
            result = pipeline.run_batch([state], [step])
            frame = decode_frame(pipeline.finish_batch([state], ["s"], [len(frames)], [step], result)[0][0])
            assert isinstance(frame, FaceFrame)
            frames.append(frame)
    return frames


def accuracy_run(pipeline: SpeechPipeline) -> dict[str, Any]:
    truth, levels, jaw = [], [], []
    predicted: dict[bool, list[np.ndarray]] = {True: [], False: []}
    for voice in voices(held_out=True):
        clip, rate = calibration_clip(voice)
        for text in sentences(voice.language, held_out=True):
            u = speak(voice, text)
            for calibrated in (True, False):
                state = pipeline.open_session({})
                if calibrated:
                    pipeline.calibrate_voice(state, rate, clip)
                frames = run_frames(pipeline, state, u.audio, u.rate)
                predicted[calibrated].append(np.array([int(np.argmax(f.visemes)) for f in frames]))
                if calibrated:
                    truth.append(viseme_track(u, pipeline.fps)[: len(frames)])
                    jaw.append(np.array([f.blendshapes[JAW] for f in frames]))
            levels.append(_levels(u.audio, u.rate, pipeline.fps, len(truth[-1])))
    t = np.concatenate(truth)
    level = np.concatenate(levels)
    chance = scoring.chance(t)
    best = max(
        (scoring.accuracy(scoring.energy_baseline(level, t, th), t), th)
        for th in np.arange(-70.0, -10.0, 1.0)
    )
    offsets = [scoring.lipsync_offset(j, tr) for j, tr in zip(jaw, truth, strict=True)]
    cal = scoring.accuracy(np.concatenate(predicted[True]), t)
    raw = scoring.accuracy(np.concatenate(predicted[False]), t)
    return {
        "voices": len(voices(held_out=True)),
        "frames": len(t),
        "chance": chance,
        "energy_baseline": best[0],
        "energy_threshold_db": float(best[1]),
        "classifier_calibrated": cal,
        "classifier_uncalibrated": raw,
        "above_chance_ratio_calibrated": (cal - chance) / max(best[0] - chance, 1e-9),
        "above_chance_ratio_uncalibrated": (raw - chance) / max(best[0] - chance, 1e-9),
        "lipsync_offset_frames_all": float(scoring.lipsync_offset(np.concatenate(jaw), t)),
        "lipsync_offset_frames_per_utterance_median": float(np.median(offsets)),
        "lipsync_offset_frames_per_utterance_max_abs": int(np.max(np.abs(offsets))),
    }


def _levels(pcm: np.ndarray, rate: int, fps: float, n: int) -> np.ndarray:
    """Level (dB) of the last 1/fps of audio at each frame time: what the energy baseline sees."""
    x = pcm.astype(np.float64) / 32768.0
    hop = rate / fps
    out = np.full(n, -100.0)
    for j in range(1, n):
        seg = x[int((j - 1) * hop) : int(j * hop)]
        if seg.size:
            out[j] = 10 * np.log10(max(float((seg**2).mean()), 1e-10))
    return out


def cost_run(pipeline: SpeechPipeline, seconds: float = 3.0) -> list[dict[str, Any]]:
    u = speak(voices(held_out=True)[0], " ".join(sentences("en-us", held_out=True)))
    chunk = u.rate // 30
    rows = []
    for n in SESSION_COUNTS:
        states = [pipeline.open_session({}) for _ in range(n)]
        ticks = 0
        busy = 0.0
        cpu0 = time.process_time()
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            start = (ticks * chunk) % (len(u.audio) - chunk)
            t0 = time.perf_counter()
            steps: list[Step[Any]] = []
            for i, s in enumerate(states):
                steps += pipeline.prepare(
                    s, AudioInput(0, str(i), ticks, 0, False, u.rate, u.audio[start : start + chunk])
                )
            if len(steps) == n:  # one frame per session this tick (a 1/30 s chunk gives exactly one)
                result = pipeline.run_batch(states, steps)
                pipeline.finish_batch(states, [str(i) for i in range(n)], [ticks] * n, steps, result)
            busy += time.perf_counter() - t0
            ticks += 1
        cpu = time.process_time() - cpu0
        per_frame_us = busy / (ticks * n) * 1e6
        rows.append(
            {
                "sessions": n,
                "ticks": ticks,
                "wall_us_per_session_frame": per_frame_us,
                "cpu_us_per_session_frame": cpu / (ticks * n) * 1e6,
                "sessions_per_core_at_30fps": 1e6 / (per_frame_us * pipeline.fps),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "speech-cpu.json")
    args = parser.parse_args()
    engine = load_engine(load_manifest(ROOT / "models" / "speech_visemes.manifest.json"), intra_op_threads=1)
    pipeline = SpeechPipeline(engine)
    acc = accuracy_run(pipeline)
    cost = cost_run(pipeline)
    print(f"held-out voices: {acc['voices']}, frames: {acc['frames']}")
    print("| method | frame accuracy | above chance |")
    print("|---|---:|---:|")
    print(f"| chance (most frequent class) | {acc['chance']:.3f} | - |")
    print(
        f"| energy-only baseline | {acc['energy_baseline']:.3f} "
        f"| {acc['energy_baseline'] - acc['chance']:+.3f} |"
    )
    for key, label in (
        ("uncalibrated", "classifier, no calibration"),
        ("calibrated", "classifier, calibrated"),
    ):
        a = acc[f"classifier_{key}"]
        ratio = acc[f"above_chance_ratio_{key}"]
        print(f"| {label} | {a:.3f} | {a - acc['chance']:+.3f} ({ratio:.1f}x baseline) |")
    print(
        f"lip-sync offset (jawOpen vs open vowels): {acc['lipsync_offset_frames_all']:+.0f} frames overall, "
        f"per-utterance median {acc['lipsync_offset_frames_per_utterance_median']:+.0f}, "
        f"max |offset| {acc['lipsync_offset_frames_per_utterance_max_abs']}"
    )
    print("| sessions | µs per session-frame (wall) | CPU µs | sessions per core at 30 fps |")
    print("|---:|---:|---:|---:|")
    for r in cost:
        print(
            f"| {r['sessions']} | {r['wall_us_per_session_frame']:.0f} "
            f"| {r['cpu_us_per_session_frame']:.0f} | {r['sessions_per_core_at_30fps']:.0f} |"
        )
    doc = {
        "model": engine.manifest.name,
        "fps": pipeline.fps,
        "accuracy": acc,
        "cost": cost,
    }
    write_bench_json(args.out, doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
