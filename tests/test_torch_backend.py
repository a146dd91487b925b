"""The torch backend on the CPU: same outputs as ONNX Runtime, device slots == host slots, tiers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bridge.backends import available_backends
from bridge.runtime.engine import Engine
from bridge.runtime.images import rgb_planes
from bridge.runtime.state_rows import HostStateSlots, create_state_slots
from bridge.state.slots import SlotPool
from tests.conftest import MODELS

pytest.importorskip("torch")

from bridge.backends import load_engine
from bridge.backends.torch.runner import TorchBackend
from bridge.backends.torch.state_slots import DeviceStateSlots

DANCE = MODELS / "dance_lstm.manifest.json"
FACE = MODELS / "face_expression_small.manifest.json"


@pytest.fixture(scope="module")
def dance() -> Iterator[tuple[Engine, Engine]]:
    ort, pt = load_engine(DANCE), load_engine(DANCE, backend="torch")
    yield ort, pt
    ort.close()
    pt.close()


def dance_inputs(rng: np.random.Generator, batch: int, time: int = 1) -> dict[str, np.ndarray]:
    return {
        "features": rng.standard_normal((batch, time, 35)).astype(np.float32),
        "pose.previous": (0.3 * rng.standard_normal((batch, 75))).astype(np.float32),
        "style": rng.integers(0, 10, batch).astype(np.int64),
    }


def test_registered_and_available() -> None:
    assert "torch" in available_backends()


def test_dance_matches_onnxruntime(dance: tuple[Engine, Engine]) -> None:
    ort, pt = dance
    rng = np.random.default_rng(0)
    for batch, time in ((1, 1), (5, 1), (3, 17)):
        inputs = dance_inputs(rng, batch, time)
        state = {
            k: (0.5 * rng.standard_normal(v.shape)).astype(np.float32)
            for k, v in ort.initial_state(batch).items()
        }
        want, want_state = ort.run(inputs, state)
        got, got_state = pt.run(inputs, state)
        for role in want:
            np.testing.assert_allclose(got[role], want[role], atol=1e-5)
        for name in want_state:
            np.testing.assert_allclose(got_state[name], want_state[name], atol=1e-5)


def test_face_matches_onnxruntime() -> None:
    ort, pt = load_engine(FACE), load_engine(FACE, backend="torch")
    image = np.random.default_rng(1).random((3, 3, 224, 224), dtype=np.float32)
    want, _ = ort.run({"image": image})
    got, _ = pt.run({"image": image})
    assert isinstance(pt.backend, TorchBackend)
    staged = pt.input_buffer("image", image.shape)  # the backend's staging buffer, reused per call
    assert staged.ctypes.data == pt.input_buffer("image", image.shape).ctypes.data
    staged[...] = image
    from_staging, _ = pt.run({"image": staged})
    fresh = ort.input_buffer("image", image.shape)  # onnxruntime has none: a new array
    assert fresh.shape == image.shape and fresh.dtype == np.float32
    with pytest.raises(ValueError, match="no input role 'pixels'"):
        ort.input_buffer("pixels", image.shape)
    for role in want:
        np.testing.assert_allclose(got[role], want[role], atol=1e-4)
        np.testing.assert_array_equal(from_staging[role], got[role])
    ort.close()
    pt.close()


def test_device_slots_match_host_slots(dance: tuple[Engine, Engine]) -> None:
    """Gather/scatter by slot on the backend's device == numpy rows, through growth and fresh rows."""
    ort, pt = dance
    host, device = create_state_slots(ort), create_state_slots(pt)
    assert isinstance(host, HostStateSlots) and isinstance(device, DeviceStateSlots)
    pool = SlotPool()
    leases = [pool.acquire() for _ in range(20)]  # more rows than the first allocation (16)
    rng = np.random.default_rng(2)
    for step in range(6):
        slots = rng.choice(20, size=7, replace=False).astype(np.int64)
        if step == 3:
            pool.reset(leases[int(slots[0])])  # a hot restart: that row starts over from zeros
        fresh = pool.take_fresh()
        inputs = dance_inputs(rng, 7)
        want = host.step(inputs, slots, pool.size, fresh)
        got = device.step(inputs, slots, pool.size, fresh)
        for role in want:
            np.testing.assert_allclose(got[role], want[role], atol=1e-5)
    for slot in range(20):
        for name, rows in host.read(slot).items():
            np.testing.assert_allclose(device.read(slot)[name], rows, atol=1e-5)
    assert device.capacity >= 20 and host.capacity >= 20


def test_slot_pool_reuses_lowest_free_row() -> None:
    pool = SlotPool()
    a, b, c = pool.acquire(), pool.acquire(), pool.acquire()
    assert (a.index, b.index, c.index) == (0, 1, 2) and sorted(pool.take_fresh()) == [0, 1, 2]
    b.release()
    b.release()  # idempotent
    del c  # garbage-collected leases free their rows too
    assert pool.in_use == 1
    d, e = pool.acquire(), pool.acquire()
    assert (d.index, e.index, pool.size) == (1, 2, 3)
    assert sorted(pool.take_fresh()) == [1, 2] and len(pool.take_fresh()) == 0
    assert a.alive and d.alive and e.alive


def test_tiers_and_precision() -> None:
    manifest = load_engine(DANCE, warmup=False).manifest
    backend = TorchBackend(manifest, device="cpu")
    assert backend.batch_tiers == (1, 2, 4, 8, 16, 32, 64)  # powers of two up to the largest profile
    assert backend.tier_for(5) == 5  # no CUDA graphs on the CPU: exact batches
    # --torch-max-batch: the batch axis is dynamic, the manifest only sets the default top tier
    assert TorchBackend(manifest, device="cpu", max_batch=256).batch_tiers[-3:] == (64, 128, 256)
    assert TorchBackend(manifest, device="cpu", max_batch=24).batch_tiers == (1, 2, 4, 8, 16, 24)
    with pytest.raises(ValueError, match="max_batch"):
        TorchBackend(manifest, device="cpu", max_batch=0)
    tiered = TorchBackend(manifest, device="cpu", batch_tiers=(1, 8, 64))
    tiered.cuda_graphs = True  # what a CUDA device turns on: batches pad to the next tier
    assert [tiered.tier_for(n) for n in (1, 2, 8, 9, 64, 65)] == [1, 8, 8, 64, 64, 65]
    # Engine.warmup makes a plan per tier at the realtime step's shape, not the manifest's two sizes.
    assert backend.profiles == ()
    warm = tiered.profiles
    assert [p.max_batch for p in warm] == [1, 8, 64] and [p.min_batch for p in warm] == [1, 8, 64]
    assert warm[1].shapes["features"] == ((8, 1, 35),) * 3 and warm[2].shapes["h_in"][0] == (64, 2, 256)
    bf16 = Engine(manifest, TorchBackend(manifest, device="cpu", precision="bfloat16"))
    bf16.backend.activate()
    rng = np.random.default_rng(3)
    inputs = dance_inputs(rng, 4)
    want, _ = load_engine(DANCE).run(inputs)
    got, _ = bf16.run(inputs)
    np.testing.assert_allclose(got["pose.axis_angle"], want["pose.axis_angle"], atol=0.05)


def test_batch_norm_is_folded_into_convolutions(tmp_path: Path) -> None:
    """A ResNet (EMOCA-size, shrunk) runs with its batch norms folded in, giving the module's outputs."""
    import torch

    from bridge.models.face import build_emoca_size
    from training.export import export_emoca_size

    manifest = export_emoca_size(tmp_path, layers=(1, 1, 1, 1), base_width=8)
    net = build_emoca_size(layers=(1, 1, 1, 1), base_width=8).eval()
    generator = torch.Generator().manual_seed(3)
    for m in net.modules():  # statistics other than the fresh ones, so folding has something to fold
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2, generator=generator)
            m.running_var.uniform_(0.5, 2.0, generator=generator)
            m.weight.data.uniform_(0.5, 1.5, generator=generator)
            m.bias.data.uniform_(-0.1, 0.1, generator=generator)
    image = np.random.default_rng(2).random((2, 3, 224, 224), dtype=np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(image)).numpy()
    engine = load_engine(manifest, backend="torch", module=net)
    assert isinstance(engine.backend, TorchBackend) and engine.backend._net is not None
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in engine.backend._net.modules())
    got, _ = engine.run({"image": image})
    np.testing.assert_allclose(got["extra.flame.shape"], want[:, :100], atol=1e-4)
    np.testing.assert_allclose(got["flame.expression"], want[:, 150:200], atol=1e-4)
    engine.close()


def test_a_module_torch_fx_cannot_trace_runs_unfolded(caplog: pytest.LogCaptureFixture) -> None:
    import torch

    from bridge.backends.torch.runner import _fused_conv_bn

    class Branchy(torch.nn.Module):  # control flow on a tensor's value: not traceable
        def __init__(self) -> None:
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.bn(self.conv(x)) if x.sum() > 0 else x

    net = Branchy().eval()
    assert _fused_conv_bn(net) is net and "not folded" in caplog.text


def test_an_image_fed_as_bytes_is_the_image_as_planes() -> None:
    """[N, H, W, 3] uint8 = [N, 3, H, W] float32 in [0, 1] (bridge.runtime.images), on onnxruntime (the
    engine converts on the host) and torch (the backend does, after the copy), staged bytes included."""
    ort, pt = load_engine(FACE), load_engine(FACE, backend="torch")
    rgb = np.random.default_rng(2).integers(0, 256, (3, 224, 224, 3), dtype=np.uint8)
    want, _ = ort.run({"image": rgb_planes(rgb)})
    from_bytes, _ = ort.run({"image": rgb})
    on_torch, _ = pt.run({"image": rgb})
    staged = pt.input_buffer("image", rgb.shape, np.uint8)
    assert (
        staged.dtype == np.uint8
        and staged.ctypes.data == pt.input_buffer("image", rgb.shape, np.uint8).ctypes.data
    )
    staged[...] = rgb
    from_staging, _ = pt.run({"image": staged})
    float_path, _ = pt.run({"image": rgb_planes(rgb)})
    for role in want:
        np.testing.assert_array_equal(from_bytes[role], want[role])
        np.testing.assert_allclose(on_torch[role], want[role], atol=1e-4)
        np.testing.assert_array_equal(from_staging[role], on_torch[role])
        np.testing.assert_array_equal(float_path[role], on_torch[role])  # the same planes, the same plan
    with pytest.raises(ValueError, match=r"or uint8 \[N,H,W,3\]"):
        ort.run({"image": rgb[:, :200]})  # bytes of another size
    with pytest.raises(ValueError, match="expects float32"):
        ort.run({"image": rgb.astype(np.int32)})
    ort.close()
    pt.close()


def test_only_an_image_input_takes_bytes() -> None:
    dance = load_engine(MODELS / "dance_lstm.manifest.json")
    role = dance.manifest.inputs[0].role
    with pytest.raises(ValueError, match="is not an image"):
        dance.input_buffer(role, (1, 35), np.uint8)
    dance.close()


def test_compiled_module_matches_eager(dance: tuple[Engine, Engine]) -> None:
    """compile=True: torch.compile (Inductor, dynamic batch) gives the eager module's outputs."""
    compiled = load_engine(DANCE, backend="torch", compile=True)
    assert isinstance(compiled.backend, TorchBackend)
    assert compiled.backend._net is not compiled.backend._eager  # really the compiled one
    rng = np.random.default_rng(4)
    for batch in (1, 5):
        inputs = dance_inputs(rng, batch)
        want, want_state = dance[1].run(inputs)
        got, got_state = compiled.run(inputs)
        for role in want:
            np.testing.assert_allclose(got[role], want[role], atol=1e-5)
        for name in want_state:
            np.testing.assert_allclose(got_state[name], want_state[name], atol=1e-5)
    compiled.close()


def test_a_failing_compile_falls_back_to_eager(
    dance: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import torch

    def broken(net: torch.nn.Module, **_: object) -> object:
        def fail(*args: object) -> object:
            raise RuntimeError("no C++ compiler")  # what Inductor raises at the first call

        return fail

    monkeypatch.setattr(torch, "compile", broken)
    engine = load_engine(DANCE, backend="torch", compile=True)
    inputs = dance_inputs(np.random.default_rng(5), 3)
    got, _ = engine.run(inputs)
    want, _ = dance[1].run(inputs)
    np.testing.assert_array_equal(got["pose.axis_angle"], want["pose.axis_angle"])
    assert "torch.compile failed" in caplog.text
    assert isinstance(engine.backend, TorchBackend) and engine.backend._net is engine.backend._eager
    engine.close()
