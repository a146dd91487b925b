"""Triton as the engine host: the repository written from the manifests, the backend against a real
Triton server (same outputs as ONNX Runtime here), `serve --backend triton` driven by the harness, and
Triton lost and restarted mid-session."""

from __future__ import annotations

import argparse
import dataclasses
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bridge.backends import create_backend
from bridge.backends.tensorrt.builder.compat import PlanMismatchError
from bridge.backends.tensorrt.builder.plan_manifest import BuildHost, PlanManifest, plan_manifest_path
from bridge.backends.triton.repository import checked_plans, model_config, write_repository
from bridge.backends.triton.runner import TritonUnavailable
from bridge.cli import triton_repo
from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.harness.run import HarnessReport, run_harness
from bridge.runtime.manifest import ModelManifest, load_manifest, sha256_file
from tests.conftest import MODELS
from training.tools.triton_local import LocalTriton

TRITON_MODELS = ["dance_lstm", "face_expression_small"]


def _manifests() -> list[ModelManifest]:
    return [load_manifest(MODELS / f"{name}.manifest.json") for name in TRITON_MODELS]


def test_config_carries_shapes_tiers_and_state() -> None:
    dance = model_config(load_manifest(MODELS / "dance_lstm.manifest.json"))
    assert 'platform: "onnxruntime_onnx"' in dance
    assert "max_batch_size: 64" in dance and "preferred_batch_size: [ 1, 8, 64 ]" in dance
    assert '{ name: "features", data_type: TYPE_FP32, dims: [ -1, 35 ] }' in dance
    assert '{ name: "style", data_type: TYPE_INT64, dims: [ 1 ], reshape: { shape: [ ] } }' in dance
    assert 'name: "h_in"' in dance and 'name: "c_out"' in dance  # state is explicit: in and out
    face = model_config(load_manifest(MODELS / "face_expression_small.manifest.json"), "python", gpu=True)
    assert 'backend: "python"' in face and "KIND_GPU" in face
    assert "dims: [ 3, 224, 224 ]" in face


def _plan(tmp_path: Path, manifest: ModelManifest, *, flavour: str = "tensorrt", cc: str = "9.0") -> Path:
    """A plan file and the manifest `build-engine` would write beside it. The bytes are no real plan:
    nothing here loads it (no TensorRT runtime, no GPU); the repository only checks and copies it."""
    plan = tmp_path / f"{manifest.name}.{flavour}.plan"
    plan.write_bytes(b"plan bytes of " + flavour.encode())
    PlanManifest(
        model=manifest.name,
        plan_file=plan.name,
        plan_sha256=sha256_file(plan),
        onnx_path=str(manifest.onnx_path),
        onnx_sha256=manifest.onnx_sha256,
        model_manifest=None,
        precision="fp16",
        flavour=flavour,
        tensorrt_version="10.13.3.9",
        onnx_parser_version="10.13.3",
        cuda_major=13,
        targets=(cc,),
        build_host=BuildHost("Linux", "x86_64", "NVIDIA H200", cc),
        profiles=manifest.profiles[:2],
        static=False,
        workspace_bytes=None,
        optimization_level=None,
        timing_cache=None,
        built_at="2026-12-02T00:00:00+00:00",
        build_seconds=1.0,
        rebuild_command=("avatar-bridge", "build-engine", str(manifest.onnx_path), "--flavour", flavour),
    ).write(plan_manifest_path(plan))
    return plan


def _repo_args(out: Path, *plans: str, cc: str = "9.0") -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    triton_repo.add_arguments(parser)
    argv = ["--out", str(out), "--models", str(MODELS), "--triton-tensorrt", "10.13.3.9"]
    argv += ["--triton-gpu", cc, "--triton-cuda", "13.0"]
    return parser.parse_args(argv + [a for p in plans for a in ("--plan", p)])


def test_a_tensorrt_plan_is_hosted_with_its_facts_once_it_fits_the_triton_machine(tmp_path: Path) -> None:
    dance = load_manifest(MODELS / "dance_lstm.manifest.json")
    plan = _plan(tmp_path, dance)
    out = tmp_path / "repo"
    assert triton_repo.run(_repo_args(out, f"dance_lstm={plan}")) == 0
    config = (out / "dance_lstm" / "config.pbtxt").read_text()
    assert 'platform: "tensorrt_plan"' in config and "KIND_GPU" in config
    tiers = sorted({p.max_batch for p in dance.profiles[:2]})  # the plan's profiles, not the ONNX's
    assert f"max_batch_size: {tiers[-1]}" in config
    assert f"preferred_batch_size: [ {', '.join(map(str, tiers))} ]" in config
    for fact in ("plan_sha256", "tensorrt_version", "compute_capabilities", "onnx_sha256"):
        assert f'key: "{fact}"' in config
    assert (out / "dance_lstm" / "1" / "model.plan").read_bytes() == plan.read_bytes()
    assert (out / "face_expression_small" / "1" / "model.onnx").is_file()  # the rest stays ONNX


def test_a_plan_that_cannot_run_on_the_triton_machine_is_refused_before_writing(tmp_path: Path) -> None:
    manifests = _manifests()
    dance = manifests[0]
    args = _repo_args(tmp_path / "repo", cc="9.0")
    host = triton_repo._triton_host(args)
    with pytest.raises(PlanMismatchError, match=r"compute capability.*8\.9(?s:.*)build-engine"):
        checked_plans(manifests, {"dance_lstm": _plan(tmp_path, dance, cc="8.9")}, host)
    with pytest.raises(PlanMismatchError, match="TensorRT flavour"):  # Triton runs full TensorRT
        checked_plans(manifests, {"dance_lstm": _plan(tmp_path, dance, flavour="tensorrt_rtx")}, host)
    other = _plan(tmp_path, dataclasses.replace(manifests[1], name="dance_lstm"))
    with pytest.raises(ValueError, match="built from ONNX sha256"):
        checked_plans(manifests, {"dance_lstm": other}, host)
    assert (
        triton_repo.run(_repo_args(tmp_path / "repo", f"dance_lstm={_plan(tmp_path, dance, cc='8.9')}")) == 2
    )
    assert not (tmp_path / "repo").exists()
    assert triton_repo.run(_repo_args(tmp_path / "repo", "dance_lstm")) == 2  # not MODEL=PLAN


@pytest.fixture(scope="module")
def triton(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTriton]:
    work = tmp_path_factory.mktemp("triton")
    write_repository(_manifests(), work / "repository", "python")
    try:
        server = LocalTriton(work / "repository", work, TRITON_MODELS)
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
    stale = dataclasses.replace(manifest, onnx_sha256="0" * 64)  # the repository holds other weights
    with pytest.raises(TritonUnavailable, match="built from ONNX sha256"):
        create_backend("triton", stale, url=triton.url).activate()


def _readyz(bridge: BridgeProcess) -> tuple[int, dict[str, object]]:
    url = f"http://127.0.0.1:{bridge.ports['metrics_port']}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status), json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read())


def _until_ready(bridge: BridgeProcess, status: int, timeout_s: float = 10.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    while (answer := _readyz(bridge))[0] != status and time.monotonic() < deadline:
        time.sleep(0.2)
    assert answer[0] == status, answer
    return answer[1]


def test_serve_on_triton_loses_nothing_and_survives_a_triton_restart(triton: LocalTriton) -> None:
    serve = ("--backend", "triton", "--triton-url", triton.url, "--idle-timeout", "30", "--metrics-port", "0")
    # Two front ends share the one Triton, as a deployment of several bridges does.
    with BridgeProcess(*serve) as bridge, BridgeProcess(*serve) as other:
        client = BridgeClient("127.0.0.1", bridge.request_port, timeout_s=10)
        other_client = BridgeClient("127.0.0.1", other.request_port, timeout_s=10)
        try:
            assert _until_ready(bridge, 200)["backends"] == {m: "ready" for m in TRITON_MODELS}
            reports: list[HarnessReport] = []
            beside = threading.Thread(
                target=lambda: reports.append(run_harness(other_client, "motion", seconds=2.0, sessions=2))
            )
            beside.start()
            reports.append(run_harness(client, "motion", seconds=2.0, sessions=2))
            beside.join()
            for report in reports:
                assert report.frames_lost == 0 and report.invalid_frames == 0 and not report.errors, report
                assert all(track.frames_received > 60 for track in report.tracks)
            assert not client.errors and not other_client.errors
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
            assert "unreachable" in str(_until_ready(bridge, 503)["backends"])  # readiness follows Triton
            triton.start()
            client.errors.clear()
            _until_ready(bridge, 200, timeout_s=30)
            time.sleep(4.5)  # past the longest backoff
            assert feed(1.0) > 20  # served again
        finally:
            client.close()
            other_client.close()
