"""Triton as the engine host: the repository written from the manifests, the backend against a real
Triton server (same outputs as ONNX Runtime here), `serve --backend triton` driven by the harness, and
Triton lost and restarted mid-session."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bridge.harness.client import BridgeClient
from bridge.harness.process import BridgeProcess
from bridge.harness.run import run_harness
from bridge.runtime.backend import create_backend
from bridge.runtime.manifest import ModelManifest, load_manifest
from bridge.runtime.triton.local_server import LocalTriton
from bridge.runtime.triton.repository import model_config, write_repository
from bridge.runtime.triton.runner import TritonUnavailable

ENGINES = Path(__file__).resolve().parents[1] / "engines"
MODELS = ["dance_lstm", "face_expression_small"]


def _manifests() -> list[ModelManifest]:
    return [load_manifest(ENGINES / f"{name}.manifest.json") for name in MODELS]


def test_config_carries_shapes_tiers_and_state() -> None:
    dance = model_config(load_manifest(ENGINES / "dance_lstm.manifest.json"))
    assert 'platform: "onnxruntime_onnx"' in dance
    assert "max_batch_size: 64" in dance and "preferred_batch_size: [ 1, 8, 64 ]" in dance
    assert '{ name: "features", data_type: TYPE_FP32, dims: [ -1, 35 ] }' in dance
    assert '{ name: "style", data_type: TYPE_INT64, dims: [ 1 ], reshape: { shape: [ ] } }' in dance
    assert 'name: "h_in"' in dance and 'name: "c_out"' in dance  # state is explicit: in and out
    face = model_config(load_manifest(ENGINES / "face_expression_small.manifest.json"), "python", gpu=True)
    assert 'backend: "python"' in face and "KIND_GPU" in face
    assert "dims: [ 3, 224, 224 ]" in face


@pytest.fixture(scope="module")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTriton]:
    work = tmp_path_factory.mktemp("triton")
    write_repository(_manifests(), work / "repository", "python")
    try:
        server = LocalTriton(work / "repository", work, MODELS)
    except FileNotFoundError as exc:
        pytest.skip(str(exc))  # the test command installs it: scripts/install_triton.sh
    server.start()
    yield server
    server.stop()


def _dance_feeds(batch: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch)
    return {
        "features": rng.standard_normal((batch, 1, 35)).astype(np.float32),
        "pose_prev": (0.1 * rng.standard_normal((batch, 75))).astype(np.float32),
        "style": np.arange(batch, dtype=np.int64) % 10,
        "h_in": rng.standard_normal((batch, 2, 256)).astype(np.float32),
        "c_in": rng.standard_normal((batch, 2, 256)).astype(np.float32),
    }


def test_same_outputs_as_onnxruntime(triton: LocalTriton) -> None:
    for manifest in _manifests():
        remote = create_backend("triton", manifest, url=triton.url)
        local = create_backend("onnxruntime", manifest)
        with remote, local:
            for batch in (1, 3):
                if manifest.task == "motion":
                    feeds = _dance_feeds(batch)
                else:
                    feeds = {"image": np.random.default_rng(batch).random((batch, 3, 224, 224), np.float32)}
                got, want = remote.infer(feeds), local.infer(feeds)
                for name, value in want.items():
                    np.testing.assert_allclose(got[name], value, atol=1e-5)


def test_unreachable_or_missing_model_is_a_clear_error(triton: LocalTriton) -> None:
    manifest = _manifests()[0]
    with pytest.raises(TritonUnavailable, match=r"127\.0\.0\.1:1 unreachable"):
        create_backend("triton", manifest, url="127.0.0.1:1", timeout_s=1.0).activate()
    renamed = dataclasses.replace(manifest, name="no_such_model")
    with pytest.raises(TritonUnavailable, match="does not serve model 'no_such_model'"):
        create_backend("triton", renamed, url=triton.url).activate()


def test_serve_on_triton_loses_nothing_and_survives_a_triton_restart(triton: LocalTriton) -> None:
    with BridgeProcess("--backend", "triton", "--triton-url", triton.url, "--idle-timeout", "30") as bridge:
        client = BridgeClient("127.0.0.1", bridge.request_port, timeout_s=10)
        try:
            report = run_harness(client, "motion", seconds=2.0, sessions=2)
            assert report.frames_lost == 0 and report.invalid_frames == 0 and not report.errors, report
            assert all(track.frames_received > 60 for track in report.tracks)
            assert not client.errors
            client.hello()
            client.subscribe(b"frame/")
            session = client.open("motion")["session"]
            features = np.zeros((1, 35), np.float32)

            def feed(seconds: float) -> int:
                frames, seq, end = 0, feed.seq, time.monotonic() + seconds  # type: ignore[attr-defined]
                while time.monotonic() < end:
                    client.send_features(session, seq, features)
                    seq += 1
                    time.sleep(1 / 60)
                    frames += len(client.recv_frames(0))
                feed.seq = seq  # type: ignore[attr-defined]
                return frames

            feed.seq = 0  # type: ignore[attr-defined]
            assert feed(0.5) > 10
            triton.stop()
            feed(1.0)  # Triton is gone: the steps fail with an error reply, the session stays open
            client.poll_replies()
            assert client.errors, "a lost Triton must be answered, not silent"
            triton.start()
            client.errors.clear()
            time.sleep(4.5)  # past the longest backoff
            assert feed(1.0) > 20  # served again
        finally:
            client.close()
