"""The TensorRT backend's data path, driven without a GPU.

TensorRT cannot execute anywhere here (no GPU on CI; TensorRT-RTX refuses the H200). So the runner runs
against two stand-ins: a fake CUDA runtime whose "device" memory is host memory (copies are memmoves in
stream order; stream capture records them and graph launch replays them), and a fake TensorRT engine whose
context executes the model's ONNX with ONNX Runtime, reading and writing the tensor addresses it was given.
Outputs must equal ONNX Runtime's on the same feeds: that proves the buffers, tiers, shapes, addresses,
copies and graph handling line up. The real loader is exercised too, up to where TensorRT needs a GPU.
"""

from __future__ import annotations

import ctypes
import shutil
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from enum import IntEnum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

pytest.importorskip("tensorrt_rtx")

import bridge.backends.tensorrt.loader as loader_mod
import bridge.backends.tensorrt.runner as runner_mod
import bridge.runtime.cuda.api as cuda_api
from bridge.backends import create_backend
from bridge.backends.tensorrt.builder.builder import BuildRequest, BuildResult, build_engine
from bridge.backends.tensorrt.builder.compat import PlanMismatchError
from bridge.backends.tensorrt.builder.flavour import Flavour, load_flavour
from bridge.backends.tensorrt.builder.host import HostSnapshot
from bridge.backends.tensorrt.loader import EngineLoadError, LoadedEngine, find_plans, load_plan
from bridge.backends.tensorrt.runner import TensorRTBackend
from bridge.backends.tensorrt.tiers import select_tier
from bridge.runtime.cuda import CudaEnvironment, CudaError, DeviceInfo, query_environment
from bridge.runtime.manifest import ModelManifest, load_manifest
from tests.conftest import MODELS

# The dance model's realtime feeds: one session, one frame.
DANCE_REALTIME_SHAPES = {
    "features": (1, 1, 35),
    "pose_prev": (1, 75),
    "style": (1,),
    "h_in": (1, 2, 256),
    "c_in": (1, 2, 256),
}
_ORT_DTYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64}


# ---------------------------------------------------------------------------------------------------
# Fake CUDA runtime: host memory, stream-ordered (= immediate) copies, capturable into graphs


class FakeCudart:
    class cudaError_t(IntEnum):
        cudaSuccess = 0
        cudaErrorMemoryAllocation = 2

    class cudaMemcpyKind(IntEnum):
        cudaMemcpyHostToDevice = 1
        cudaMemcpyDeviceToHost = 2

    class cudaStreamCaptureMode(IntEnum):
        cudaStreamCaptureModeThreadLocal = 1

    cudaStreamNonBlocking = 1
    cudaEventDefault = 0
    cudaEventDisableTiming = 2
    LIMIT = 1 << 30

    def __init__(self) -> None:
        self.memory: dict[int, Any] = {}
        self.calls: Counter[str] = Counter()
        self.capturing: dict[int, list[Callable[[], object]]] = {}
        self._ids = iter(range(100, 10**6))
        self._lock = threading.Lock()

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("cuda"):
            object.__getattribute__(self, "calls")[name] += 1
        return object.__getattribute__(self, name)

    ok = cudaError_t.cudaSuccess

    def enqueue(self, stream: int, work: Callable[[], object]) -> None:
        if stream in self.capturing:
            self.capturing[stream].append(work)
        else:
            work()

    def cudaGetErrorName(self, err: Any) -> tuple[Any, bytes]:
        return self.ok, self.cudaError_t(err).name.encode()

    def _alloc(self, n: int) -> tuple[Any, int]:
        if n > self.LIMIT:
            return (self.cudaError_t.cudaErrorMemoryAllocation, 0)
        buf = ctypes.create_string_buffer(n)
        with self._lock:
            self.memory[ctypes.addressof(buf)] = buf
        return self.ok, ctypes.addressof(buf)

    def _free(self, ptr: int) -> tuple[Any]:
        with self._lock:
            del self.memory[ptr]
        return (self.ok,)

    cudaMalloc = cudaMallocHost = _alloc
    cudaFree = cudaFreeHost = _free

    def cudaMemcpyAsync(self, dst: int, src: int, n: int, kind: Any, stream: int) -> tuple[Any]:
        self.enqueue(stream, lambda: ctypes.memmove(dst, src, n))
        return (self.ok,)

    def _new(self, *_: Any) -> tuple[Any, int]:
        with self._lock:
            return self.ok, next(self._ids)

    def _done(self, *_: Any) -> tuple[Any]:
        return (self.ok,)

    cudaStreamCreateWithFlags = cudaEventCreateWithFlags = _new
    cudaStreamSynchronize = cudaStreamWaitEvent = cudaStreamDestroy = _done
    cudaEventSynchronize = cudaEventDestroy = cudaSetDevice = cudaGetLastError = _done
    cudaGraphDestroy = cudaGraphExecDestroy = _done

    def cudaEventRecord(self, event: int, stream: int) -> tuple[Any]:
        return (self.ok,)

    def cudaEventElapsedTime(self, a: int, b: int) -> tuple[Any, float]:
        return self.ok, 0.25

    def cudaStreamBeginCapture(self, stream: int, mode: Any) -> tuple[Any]:
        self.capturing[stream] = []
        return (self.ok,)

    def cudaStreamEndCapture(self, stream: int) -> tuple[Any, list[Callable[[], object]]]:
        return self.ok, self.capturing.pop(stream)

    def cudaGraphInstantiate(self, graph: list[Callable[[], object]], flags: int) -> tuple[Any, Any]:
        return self.ok, list(graph)

    def cudaGraphLaunch(self, graph: list[Callable[[], object]], stream: int) -> tuple[Any]:
        for work in graph:
            self.enqueue(stream, work)
        return (self.ok,)

    def cudaDriverGetVersion(self) -> tuple[Any, int]:
        return self.ok, 13000

    def cudaRuntimeGetVersion(self) -> tuple[Any, int]:
        return self.ok, 13000

    def cudaGetDeviceCount(self) -> tuple[Any, int]:
        return self.ok, 1

    def cudaGetDeviceProperties(self, i: int) -> tuple[Any, Any]:
        return self.ok, SimpleNamespace(name=b"Fake RTX 4090\x00", major=8, minor=9, totalGlobalMem=24 << 30)


# ---------------------------------------------------------------------------------------------------
# Fake TensorRT: an engine over the ONNX file, executed by ONNX Runtime at the addresses it is given


class FakeTrt:
    class TensorIOMode(IntEnum):
        INPUT = 1
        OUTPUT = 2

    class ExecutionContextAllocationStrategy(IntEnum):
        USER_MANAGED = 2

    class CudaGraphStrategy(IntEnum):
        DISABLED = 0
        WHOLE_GRAPH_CAPTURE = 1

    @staticmethod
    def nptype(dtype: Any) -> Any:
        return dtype


class FakeRuntimeConfig:
    def __init__(self) -> None:
        self.cuda_graph_strategy = FakeTrt.CudaGraphStrategy.DISABLED
        self.strategy: Any = None

    def set_execution_context_allocation_strategy(self, s: Any) -> None:
        self.strategy = s


class FakeEngine:
    def __init__(self, onnx_path: Path, loaded_profiles: list[Any], cudart: FakeCudart) -> None:
        self.session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        self.inputs: dict[str, np.dtype[Any]] = {
            i.name: np.dtype(_ORT_DTYPES[i.type]) for i in self.session.get_inputs()
        }
        self.outputs: dict[str, np.dtype[Any]] = {
            o.name: np.dtype(_ORT_DTYPES[o.type]) for o in self.session.get_outputs()
        }
        self.names: list[str] = [*self.inputs, *self.outputs]
        self.profiles = loaded_profiles
        self.cudart = cudart
        self.contexts: list[FakeContext] = []
        self.capturable = True
        self.fail = False  # execute_async_v3 returns False, as TensorRT does on an enqueue error
        self.reject_shapes = False

    num_io_tensors = property(lambda self: len(self.names))
    num_optimization_profiles = property(lambda self: max(1, len(self.profiles)))

    def get_tensor_name(self, i: int) -> str:
        return self.names[i]

    def get_tensor_mode(self, name: str) -> Any:
        return FakeTrt.TensorIOMode.INPUT if name in self.inputs else FakeTrt.TensorIOMode.OUTPUT

    def get_tensor_dtype(self, name: str) -> np.dtype[Any]:
        return self.inputs.get(name, self.outputs.get(name))  # type: ignore[return-value]

    def get_device_memory_size_for_profile_v2(self, i: int) -> int:
        return 4096 * (i + 1)

    def get_tensor_profile_shape(self, name: str, i: int) -> tuple[Any, ...]:
        return tuple(self.profiles[i].shapes[name])

    def create_runtime_config(self) -> FakeRuntimeConfig:
        return FakeRuntimeConfig()

    def create_execution_context(self, arg: Any) -> FakeContext:
        ctx = FakeContext(self, arg)
        self.contexts.append(ctx)
        return ctx


class FakeContext:
    def __init__(self, engine: FakeEngine, how: Any) -> None:
        self.engine = engine
        self.how = how
        self.profile = -1
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.out_shapes: dict[str, tuple[int, ...]] = {}
        self.addresses: dict[str, int] = {}
        self.scratch: tuple[int, int] | None = None
        self.runs = 0

    def set_optimization_profile_async(self, i: int, stream: int) -> bool:
        self.profile = i
        return True

    def set_device_memory(self, ptr: int, size: int) -> None:
        self.scratch = (ptr, size)

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> bool:
        if self.engine.reject_shapes:
            return False
        mn, _, mx = self.engine.profiles[self.profile].shapes[name]
        if not all(a <= s <= b for a, s, b in zip(mn, shape, mx, strict=True)):
            return False
        self.shapes[name] = tuple(shape)
        return True

    def _zeros(self) -> dict[str, np.ndarray]:
        return {n: np.zeros(s, self.engine.inputs[n]) for n, s in self.shapes.items()}

    def infer_shapes(self) -> list[str]:
        outs = self.engine.session.run(None, self._zeros())
        self.out_shapes = {n: o.shape for n, o in zip(self.engine.outputs, outs, strict=True)}
        return []

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        return self.shapes.get(name) or self.out_shapes[name]

    def set_tensor_address(self, name: str, ptr: int) -> bool:
        self.addresses[name] = ptr
        return True

    def _view(self, name: str, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        n = int(np.prod(shape)) * dtype.itemsize
        raw = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(self.addresses[name]))
        return raw.view(dtype).reshape(shape)

    def _execute(self) -> None:
        feeds = {n: self._view(n, s, self.engine.inputs[n]).copy() for n, s in self.shapes.items()}
        for name, out in zip(self.engine.outputs, self.engine.session.run(None, feeds), strict=True):
            self._view(name, out.shape, out.dtype)[...] = out
        self.runs += 1

    def execute_async_v3(self, stream: int) -> bool:
        if self.engine.fail or (stream in self.engine.cudart.capturing and not self.engine.capturable):
            return False
        self.engine.cudart.enqueue(stream, self._execute)
        return True


# ---------------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture
def cudart(monkeypatch: pytest.MonkeyPatch) -> FakeCudart:
    fake = FakeCudart()
    monkeypatch.setattr(cuda_api, "_runtime", lambda: fake)
    return fake


def built(tmp_path: Path, model: str) -> tuple[ModelManifest, BuildResult]:
    for suffix in (".onnx", ".manifest.json"):
        shutil.copy(MODELS / f"{model}{suffix}", tmp_path / f"{model}{suffix}")
    manifest = load_manifest(tmp_path / f"{model}.manifest.json")
    [result] = build_engine(BuildRequest(manifest.path, flavour="rtx", progress=False))
    return manifest, result


def fake_backend(
    monkeypatch: pytest.MonkeyPatch,
    cudart: FakeCudart,
    manifest: ModelManifest,
    result: BuildResult,
    *,
    flavour: str = "tensorrt",
    **options: Any,
) -> tuple[TensorRTBackend, FakeEngine]:
    engine = FakeEngine(manifest.onnx_path, list(result.manifest.profiles), cudart)
    loaded = LoadedEngine(Flavour(flavour, FakeTrt, "0.fake"), None, engine, result.manifest, result.plan)  # type: ignore[arg-type]
    monkeypatch.setattr(runner_mod, "load_plan", lambda *a, **k: loaded)
    backend = create_backend("tensorrt", manifest, plan=result.plan, **options)
    assert isinstance(backend, TensorRTBackend)
    return backend, engine


def face_feeds(batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    return {"image": np.random.default_rng(seed).random((batch, 3, 224, 224), dtype=np.float32)}


def reference(manifest: ModelManifest, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    s = ort.InferenceSession(str(manifest.onnx_path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds), strict=True))


def assert_same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(got) == set(want)
    for name, arr in want.items():
        np.testing.assert_array_equal(got[name], arr, err_msg=name)


# ---------------------------------------------------------------------------------------------------
# Tests


def test_face_tiers_buffers_and_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    backend, engine = fake_backend(monkeypatch, cudart, manifest, result)
    with backend:
        for batch in (1, 4, 1, 8):
            feeds = face_feeds(batch, seed=batch)
            assert_same(backend.infer(feeds), reference(manifest, feeds))
        realtime, batched = engine.contexts
        assert realtime.profile == 0 and batched.profile == 1  # one context per tier, bound once
        assert realtime.runs == 2 and batched.runs == 2
        assert realtime.scratch == batched.scratch  # the slot's tier contexts share scratch memory
        assert realtime.how == FakeTrt.ExecutionContextAllocationStrategy.USER_MANAGED
        assert realtime.addresses == batched.addresses  # fixed buffers, sized for the largest tier
    assert cudart.memory == {}  # deactivate freed every device and pinned buffer


def test_manual_cuda_graph_per_tier_and_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    backend, _ = fake_backend(monkeypatch, cudart, manifest, result, cuda_graphs=True)
    with backend:
        for seed in range(3):  # new data each time: the replayed graph reads the same pinned buffers
            feeds = face_feeds(2, seed)
            assert_same(backend.infer(feeds), reference(manifest, feeds))
        assert cudart.calls["cudaStreamBeginCapture"] == 1 and cudart.calls["cudaGraphLaunch"] == 2
        backend.infer(face_feeds(3))  # a new shape: a second graph
        assert cudart.calls["cudaStreamBeginCapture"] == 2


def test_uncapturable_engine_falls_back_to_plain_enqueue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    backend, engine = fake_backend(monkeypatch, cudart, manifest, result, cuda_graphs=True)
    engine.capturable = False
    with backend:
        for seed in range(3):
            feeds = face_feeds(1, seed)
            assert_same(backend.infer(feeds), reference(manifest, feeds))
    assert cudart.calls["cudaGraphLaunch"] == 0 and cudart.calls["cudaGetLastError"] == 1


def test_rtx_uses_its_builtin_graphs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    backend, engine = fake_backend(
        monkeypatch, cudart, manifest, result, flavour="tensorrt_rtx", cuda_graphs=True
    )
    with backend:
        feeds = face_feeds(1)
        assert_same(backend.infer(feeds), reference(manifest, feeds))
        backend.infer(feeds)
    config = engine.contexts[0].how
    assert isinstance(config, FakeRuntimeConfig)
    assert config.cuda_graph_strategy == FakeTrt.CudaGraphStrategy.WHOLE_GRAPH_CAPTURE
    assert cudart.calls["cudaStreamBeginCapture"] == 0


def test_lanes_serve_concurrent_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    backend, engine = fake_backend(monkeypatch, cudart, manifest, result, lanes=2)
    batches = [face_feeds(1 + i % 3, seed=i) for i in range(8)]
    with backend, ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(backend.infer, batches))
    for feeds, got in zip(batches, outs, strict=True):
        assert_same(got, reference(manifest, feeds))
    assert len(engine.contexts) == 4  # 2 lanes x 2 tiers


def test_dance_state_tensors_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    manifest, result = built(tmp_path, "dance_lstm")
    backend, _ = fake_backend(monkeypatch, cudart, manifest, result)
    rng = np.random.default_rng(3)
    with backend:
        for batch, steps in ((1, 1), (4, 1), (2, 32)):
            feeds: dict[str, np.ndarray] = {
                "features": rng.random((batch, steps, 35), dtype=np.float32),
                "pose_prev": rng.random((batch, 75), dtype=np.float32),
                "style": np.arange(batch, dtype=np.int64) % 3,
                "h_in": rng.random((batch, 2, 256), dtype=np.float32),
                "c_in": rng.random((batch, 2, 256), dtype=np.float32),
            }
            assert_same(backend.infer(feeds), reference(manifest, feeds))
        with pytest.raises(ValueError, match="no shape tier of the plan holds this batch"):
            backend.infer(feeds | {"features": np.zeros((2, 300, 35), np.float32)})


def test_infer_before_activate_and_bad_lane_count(tmp_path: Path) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    with pytest.raises(ValueError, match="lanes"):
        TensorRTBackend(manifest, lanes=0)
    with pytest.raises(RuntimeError, match="before activate"):
        TensorRTBackend(manifest, plan=result.plan).infer(face_feeds(1))


def test_select_tier_prefers_the_tightest() -> None:
    manifest = load_manifest(MODELS / "dance_lstm.manifest.json")
    shapes = dict(DANCE_REALTIME_SHAPES)
    assert [p.name for p in manifest.profiles][select_tier(manifest.profiles, shapes)] == "realtime"
    shapes |= {
        "features": (4, 64, 35),
        "pose_prev": (4, 75),
        "style": (4,),
        "h_in": (4, 2, 256),
        "c_in": (4, 2, 256),
    }
    assert [p.name for p in manifest.profiles][select_tier(manifest.profiles, shapes)] == "offline"
    assert select_tier([], {"x": (1,)}) == 0
    with pytest.raises(ValueError, match="tiers: realtime"):
        select_tier(manifest.profiles, {"features": (1, 35)})


def test_find_plans(tmp_path: Path) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    assert find_plans(manifest) == [result.plan] == TensorRTBackend(manifest).plans
    result.plan.unlink()
    with pytest.raises(FileNotFoundError, match="avatar-bridge build-engine"):
        find_plans(manifest)
    with pytest.raises(FileNotFoundError, match="no TensorRT flavour installed"):
        find_plans(manifest, [])


def test_real_loader_refuses_on_this_gpu_less_machine(tmp_path: Path) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    backend = create_backend("tensorrt", manifest, plan=result.plan)
    with pytest.raises(PlanMismatchError, match="no usable GPU"):
        backend.activate()
    assert not backend.is_active


def test_real_loader_reaches_tensorrt_and_reports_its_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the manifest check satisfied (a GPU described by hand), TensorRT-RTX's own header check runs
    for real and refuses (there is no GPU behind it); the error carries the rebuild command."""
    _, result = built(tmp_path, "face_expression_small")
    rtx = load_flavour("rtx")
    host = HostSnapshot(
        {"tensorrt_rtx": rtx.version},
        "Linux",
        "x86_64",
        CudaEnvironment(13000, 13000, "580", (DeviceInfo(0, "NVIDIA RTX 4090", (8, 9), 24 << 30),)),
    )
    monkeypatch.setattr(loader_mod, "set_device", lambda index: None)
    with pytest.raises(EngineLoadError, match=r"refuses face_expression_small\.rtx\.plan") as e:
        load_plan(result.plan, host=host)
    assert result.manifest.rebuild_command_line in str(e.value)


def test_cuda_module_against_the_fake_runtime(cudart: FakeCudart) -> None:
    env = query_environment()
    assert (
        env.has_gpu and env.devices[0].name == "Fake RTX 4090" and env.devices[0].compute_capability == (8, 9)
    )
    with pytest.raises(CudaError, match=r"cudaMalloc failed: cudaErrorMemoryAllocation \(2\)"):
        cuda_api.DeviceBuffer(2 << 30)
    with cuda_api.Event() as a, cuda_api.Event(timing=False) as b, cuda_api.Stream() as s:
        a.record(s)
        b.record(s)
        b.synchronize()
        assert a.elapsed_ms(b) == 0.25


def test_cuda_module_edges_against_the_fake_runtime(
    cudart: FakeCudart, monkeypatch: pytest.MonkeyPatch
) -> None:
    cuda_api.set_device(0)
    with (
        cuda_api.Stream() as s1,
        cuda_api.Stream() as s2,
        cuda_api.Event() as e,
        cuda_api.PinnedBuffer(16) as p,
    ):
        e.record(s1)
        s2.wait(e)
        with pytest.raises(ValueError, match="does not fit a pinned buffer of 16"):
            p.view(np.float32, (5,))
    assert cudart.calls["cudaSetDevice"] == 1 and cudart.calls["cudaStreamWaitEvent"] == 1
    monkeypatch.setattr(cudart, "cudaDriverGetVersion", lambda: (cudart.ok, 0))
    assert query_environment().problem == "no NVIDIA driver is loaded on this machine"
    monkeypatch.setattr(cudart, "cudaDriverGetVersion", lambda: (cudart.ok, 13000))
    monkeypatch.setattr(
        cudart, "cudaGetDeviceCount", lambda: (cudart.cudaError_t.cudaErrorMemoryAllocation, 0)
    )
    env = query_environment()
    assert not env.has_gpu and env.problem is not None and env.problem.startswith("no usable CUDA device")


def test_tensorrt_refusals_surface_as_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cudart: FakeCudart
) -> None:
    manifest, result = built(tmp_path, "face_expression_small")
    # (cuda_graphs, capturable, good calls first): plain enqueue, the run before a capture, the fallback
    for graphs, capturable, good in ((False, True, 0), (True, True, 0), (True, False, 1)):
        backend, engine = fake_backend(monkeypatch, cudart, manifest, result, cuda_graphs=graphs)
        engine.capturable = capturable
        with backend:
            for _ in range(good):
                backend.infer(face_feeds(1))
            engine.fail = True
            with pytest.raises(RuntimeError, match="TensorRT enqueue failed"):
                backend.infer(face_feeds(1))
    backend, engine = fake_backend(monkeypatch, cudart, manifest, result)
    with backend:
        engine.reject_shapes = True
        with pytest.raises(ValueError, match="outside the plan's tier"):
            backend.infer(face_feeds(2))
