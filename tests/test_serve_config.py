"""The serve config file: typed keys, and a start that fails naming the key that is wrong."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bridge.cli.serve import add_arguments, config_from_args
from bridge.cli.serve_config import (
    ConfigError,
    ServeTable,
    TensorRTTable,
    TorchTable,
    load_serve_table,
)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bridge.toml"
    path.write_text(text)
    return path


def test_file_values_apply_and_flags_win(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[serve]\nrequest_port = 6000\nidle_timeout = 3\nmax_sessions = 8\nosc = "vmc://127.0.0.1:39539"\n',
    )
    config = config_from_args(_args("--config", str(path), "--max-sessions", "4"))
    assert config.transport.request_port == 6000
    assert config.idle_timeout_s == 3.0
    assert config.max_sessions == 4  # the flag wins
    assert load_serve_table(path).present()["osc"] == "vmc://127.0.0.1:39539"


def test_gpu_metrics_off_by_flag_or_key(tmp_path: Path) -> None:
    assert config_from_args(_args()).gpu_metrics
    assert not config_from_args(_args("--no-gpu-metrics")).gpu_metrics
    assert not config_from_args(
        _args("--config", str(_write(tmp_path, "[serve]\ngpu_metrics = false\n")))
    ).gpu_metrics


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[serve]\nrequest_prot = 6000\n", "request_prot"),  # a typo is not silently ignored
        ('[serve]\nrequest_port = "6000"\n', "request_port"),
        ("[serve]\nmax_sessions = 2.5\n", "max_sessions"),
        ('[serve]\ninsecure_remote = "yes"\n', "insecure_remote"),
        ("[serv]\nhost = '127.0.0.1'\n", "serv"),
        ("[serve]\nosc = [1, 2]\n", "osc"),
    ],
)
def test_unknown_key_or_wrong_type_names_the_key(tmp_path: Path, text: str, named: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=named):
        config_from_args(_args("--config", str(path)))


def test_unreadable_or_not_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not TOML"):
        load_serve_table(_write(tmp_path, "[serve\n"))
    with pytest.raises(ConfigError, match=r"missing\.toml"):
        load_serve_table(tmp_path / "missing.toml")


def test_every_key_is_a_serve_flag() -> None:
    """Each file key has the flag of the same name, so `pick` finds both ([serve.tensorrt]: --tensorrt-X)."""
    flags = vars(_args())
    assert set(ServeTable.__struct_fields__) - {"tensorrt", "torch"} <= set(flags)
    assert {f"tensorrt_{k}" for k in TensorRTTable.__struct_fields__} <= set(flags)
    assert {f"torch_{k}" for k in TorchTable.__struct_fields__} <= set(flags)


def test_torch_table_and_flags_reach_the_backend(tmp_path: Path) -> None:
    path = _write(
        tmp_path, '[serve]\nbackend = "torch"\n[serve.torch]\ncompile = true\nprecision = "bfloat16"\n'
    )
    config = config_from_args(_args("--config", str(path), "--torch-precision", "float32"))
    assert config.backend_options == {"compile": True, "precision": "float32"}  # the flag wins
    config = config_from_args(_args("--config", str(path), "--torch-max-batch", "256"))
    assert config.backend_options == {"compile": True, "precision": "bfloat16", "max_batch": 256}
    config = config_from_args(_args("--torch-device-post", "--backend-for", "dance_lstm=torch"))
    assert config.backend_for("dance_lstm") == ("torch", {"device_post": True})
    assert config.backend_for("face_expression_small") == ("onnxruntime", {})
    with pytest.raises(ConfigError, match="compile"):
        config_from_args(_args("--config", str(_write(tmp_path, '[serve.torch]\ncompile = "yes"\n'))))


def test_backend_per_model_from_the_file_and_flags(tmp_path: Path) -> None:
    path = _write(tmp_path, '[serve]\nbackend_for = { dance_lstm = "choreographer", x = "torch" }\n')
    config = config_from_args(
        _args("--config", str(path), "--backend-for", "x=triton", "--backend-for", "y=onnxruntime")
    )
    assert config.backend == "onnxruntime"
    assert config.model_backends == {"dance_lstm": "choreographer", "x": "triton", "y": "onnxruntime"}
    assert config.backend_for("x") == ("triton", {"url": "127.0.0.1:8001"})  # its own options
    assert config.backend_for("face_expression_small") == ("onnxruntime", {})
    with pytest.raises(SystemExit):
        _args("--backend-for", "dance_lstm")  # not MODEL=BACKEND
    with pytest.raises(ConfigError, match="backend_for"):
        config_from_args(_args("--config", str(_write(tmp_path, "[serve]\nbackend_for = 'torch'\n"))))


def test_choreographer_dances_while_onnxruntime_serves_the_faces(tmp_path: Path) -> None:
    """`serve --backend choreographer` alone refuses the face engines (the choreographer only runs the
    dance manifest); per model, both serve."""
    import numpy as np

    from bridge.clients.harness.client import BridgeClient
    from bridge.pipelines.motion import FEATURE_COLS
    from bridge.protocol import FaceFrame, MotionFrame
    from bridge.serving.server import Bridge

    from .conftest import MODELS, start_bridge, stop_bridge

    argv = ["--models", str(MODELS), "--backend", "choreographer"]
    for model in ("face_expression_small", "speech_visemes"):
        argv += ["--backend-for", f"{model}=onnxruntime"]
    config = config_from_args(_args(*argv))
    with pytest.raises(ValueError, match="nope"):
        Bridge(replace(config, model_backends={"nope": "onnxruntime"}))  # a typo is not ignored
    server, thread = start_bridge(
        backend=config.backend, model_backends=config.model_backends, models_dir=config.models_dir
    )
    client = BridgeClient("127.0.0.1", server.sockets.request_port, timeout_s=10.0)
    try:
        client.hello()
        backends = {m["name"]: m["backend"] for m in client.request("list")["models"]}
        assert backends == {
            "dance_lstm": "choreographer",
            "face_expression_small": "onnxruntime",
            "speech_visemes": "onnxruntime",
        }
        client.subscribe()
        time.sleep(0.05)
        dance = client.open("motion")["session"]
        face = client.open("face")["session"]
        client.send_features(dance, 0, np.zeros((4, FEATURE_COLS), np.float32))
        client.send_image(face, 0, np.full((256, 256, 3), 128, np.uint8))
        got: set[type] = set()
        deadline = time.monotonic() + 10
        while got != {MotionFrame, FaceFrame} and time.monotonic() < deadline:
            got |= {type(r.frame) for r in client.recv_frames(100)}
        assert got == {MotionFrame, FaceFrame}
    finally:
        client.close()
        stop_bridge(server, thread)
