"""The demo's talking voice: a phrase synthesized with eSpeak NG, streamed in 1/30 s chunks at
real-time pace to a speech session, and a plot of the mouth it moved (demo-out/speech.png)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from bridge.clients.harness.client import BridgeClient
from bridge.protocol.frames import FaceFrame
from bridge.rig.arkit import ARKIT_INDEX
from bridge.speech.corpus import TEST_VARIANTS, Voice, calibration_clip, speak
from bridge.speech.espeak import viseme_track
from bridge.speech.visemes import OPEN_VOWELS, VRM_VOWELS

PHRASE = "Hello! I am your avatar, and my mouth moves with my voice."
VOICE = Voice("en-us", TEST_VARIANTS[0])  # a voice the classifier never heard


def talk(port: int, out: Path) -> dict[str, Any]:
    """Run the talking session; returns its summary and writes speech.png when matplotlib is there."""
    try:
        clip, rate = calibration_clip(VOICE)
        u = speak(VOICE, PHRASE)
    except RuntimeError as exc:  # eSpeak NG missing: the rest of the demo still runs
        print(f"speech demo skipped: {exc}")
        return {"skipped": str(exc)}
    client = BridgeClient("127.0.0.1", port)
    try:
        client.hello()  # learns the frames port
        client.subscribe()
        time.sleep(0.05)
        sid = client.open("speech")["session"]
        client.request("calibrate", session=sid, rate=rate, format="s16le", data=clip.tobytes())
        chunk = u.rate // 30
        frames: list[FaceFrame] = []
        t0 = time.perf_counter()
        for seq, start in enumerate(range(0, len(u.audio), chunk)):
            client.send_audio(sid, seq, u.audio[start : start + chunk] / 32768.0, u.rate)
            time.sleep(max(0.0, t0 + (seq + 1) / 30 - time.perf_counter()))  # real-time pace
            frames += _speech_frames(client, sid, 0)
        deadline = time.monotonic() + 2.0
        while len(frames) < len(u.audio) * 30 // u.rate and time.monotonic() < deadline:
            frames += _speech_frames(client, sid, 50)
        client.close_session(sid)
    finally:
        client.close()
    truth = viseme_track(u, 30.0)[: len(frames)]
    jaw = np.array([f.blendshapes[ARKIT_INDEX["JawOpen"]] for f in frames])
    summary = {
        "phrase": PHRASE,
        "voice": VOICE.name,
        "frames": len(frames),
        "jaw_open_max": float(jaw.max(initial=0)),
    }
    try:
        import matplotlib
    except ImportError:
        return summary
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.arange(len(frames)) / 30.0
    fig, ax = plt.subplots(2, 1, figsize=(12, 5), sharex=True, constrained_layout=True)
    ax[0].fill_between(
        t, 0, np.isin(truth, OPEN_VOWELS), color="0.85", step="post", label="open vowel (eSpeak)"
    )
    ax[0].plot(t, jaw, color="tab:red", label="JawOpen")
    ax[0].plot(t, [f.voice for f in frames], ":", color="k", lw=1, label="voice")
    ax[0].set(ylabel="weight", title=f'speech session: "{PHRASE}" ({VOICE.name}, held out)')
    ax[0].legend(loc="upper right", fontsize=8)
    vowels = np.stack([f.vowels for f in frames]) if frames else np.zeros((0, 5))
    for k, name in enumerate(VRM_VOWELS):
        ax[1].plot(t, vowels[:, k], label=f"VRM {name}")
    ax[1].set(xlabel="time (s)", ylabel="weight")
    ax[1].legend(loc="upper right", ncol=5, fontsize=8)
    fig.savefig(out / "speech.png", dpi=100)
    plt.close(fig)
    summary["plot"] = str(out / "speech.png")
    return summary


def _speech_frames(client: BridgeClient, sid: str, timeout_ms: int) -> list[FaceFrame]:
    return [
        r.frame
        for r in client.recv_frames(timeout_ms)
        if isinstance(r.frame, FaceFrame) and r.frame.header.session == sid
    ]
