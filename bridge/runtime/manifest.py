"""Model manifest: the JSON contract beside an ONNX file that says what each tensor means.

`<name>.manifest.json` sits next to `<name>.onnx`. It names the *role* of every input and output tensor
(`image`, `features`, `flame.expression`, `pose.axis_angle`, ...), the recurrent state pairs fed back
from output to input, and the shape profiles (min/opt/max per input tensor) that a TensorRT build turns
into optimization profiles. Pipelines speak roles; only the engine knows tensor names. The format is
documented field by field in docs/models.md.

Only the standard library and numpy-free code lives here, so `import bridge.runtime` stays light; `onnx`
(or, failing that, onnxruntime) is imported lazily by `validate_against_onnx`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec

__all__ = [
    "FOOT_PLANT",
    "FORMAT_VERSION",
    "INPUT_ROLES",
    "MANIFEST_SUFFIX",
    "OUTPUT_ROLES",
    "POST_STAGES",
    "ManifestError",
    "ModelManifest",
    "Profile",
    "RoleSpec",
    "StatePair",
    "TensorSpec",
    "find_manifests",
    "load_manifest",
    "manifest_path_for",
    "sha256_file",
    "validate_against_onnx",
]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
MANIFEST_SUFFIX = ".manifest.json"
# Roles under this prefix are passed through untouched (e.g. DECA's shape, camera, light): a model may
# expose more than the pipelines consume without being rejected as "unknown role".
EXTRA_ROLE_PREFIX = "extra."

Dim = int | str
Shape = tuple[Dim, ...]
StaticShape = tuple[int, ...]
# face_landmarks, face_detector, face_blendshapes: the three networks of the face-tracking pipeline
# (MediaPipe FaceLandmarker's, converted by bridge.models.mediapipe); the mesh model is the one a
# pipeline serves, the other two are loaded beside it. pose_detector, pose_landmarks, hand_recrop,
# hand_landmarks: the body tracker's networks (MediaPipe Pose and Holistic's hands, converted alike),
# loaded by a face tracker for sessions opened with `body: true`.
Task = Literal[
    "face", "motion", "face_landmarks", "face_detector", "face_blendshapes", "speech",
    "pose_detector", "pose_landmarks", "hand_recrop", "hand_landmarks",
]  # fmt: skip
TASKS: tuple[str, ...] = get_args(Task)
# Optional post-processing stages a manifest may ask for, and the task whose pipeline runs each:
# foot_plant = both feet pinned while in contact (leg IK) and the root from the stance foot
# (bridge.motion.foot_plant, run by bridge.motion.post).
FOOT_PLANT = "foot_plant"
POST_STAGES: dict[str, str] = {FOOT_PLANT: "motion"}


class ManifestError(ValueError):
    """A manifest is malformed or does not match its ONNX file. The message names the tensor."""


@dataclass(frozen=True)
class RoleSpec:
    """What a role means: which task uses it, its rank, its fixed trailing dims and allowed dtypes."""

    task: Task
    rank: int
    trailing: StaticShape  # the fixed dims after batch (and time); the last one is the role's width
    dtypes: tuple[str, ...]
    required: bool
    description: str


_FLOAT = ("float32", "float16")
INPUT_ROLES: dict[str, RoleSpec] = {
    "image": RoleSpec("face", 4, (3, 224, 224), _FLOAT, True, "RGB crop, NCHW, values in [0,1]"),
    "features": RoleSpec("motion", 3, (35,), _FLOAT, True, "music features per frame [B,T,35] (AIST++/FACT)"),
    "pose.previous": RoleSpec("motion", 2, (75,), _FLOAT, False, "previous output pose [B,75]"),
    "style": RoleSpec("motion", 1, (), ("int64", "int32"), False, "style/genre index [B]"),
    "face.detector_image": RoleSpec(
        "face_detector", 4, (3, 128, 128), _FLOAT, True, "letterboxed frame, RGB, NCHW, values in [0,1]"
    ),
    "face.mesh_image": RoleSpec(
        "face_landmarks", 4, (3, 256, 256), _FLOAT, True, "rotated face crop, RGB, NCHW, values in [0,1]"
    ),
    "face.landmark_subset": RoleSpec(
        "face_blendshapes", 3, (146, 2), _FLOAT, True, "146 mesh landmarks (x, y), image pixels"
    ),
    "speech.features": RoleSpec("speech", 2, (104,), _FLOAT, True, "8 x 13 causal MFCC frames [B,104]"),
    "body.detector_image": RoleSpec(
        "pose_detector", 4, (3, 224, 224), _FLOAT, True, "letterboxed frame, RGB, NCHW, values in [0,1]"
    ),
    "body.pose_image": RoleSpec(
        "pose_landmarks", 4, (3, 256, 256), _FLOAT, True, "rotated body crop, RGB, NCHW, values in [0,1]"
    ),
    "hand.recrop_image": RoleSpec(
        "hand_recrop", 4, (3, 256, 256), _FLOAT, True, "rotated hand search crop, RGB, NCHW, in [0,1]"
    ),
    "hand.image": RoleSpec(
        "hand_landmarks", 4, (3, 224, 224), _FLOAT, True, "rotated hand crop, RGB, NCHW, values in [0,1]"
    ),
}
OUTPUT_ROLES: dict[str, RoleSpec] = {
    "flame.expression": RoleSpec("face", 2, (50,), _FLOAT, True, "FLAME expression psi, first 50"),
    "flame.jaw": RoleSpec("face", 2, (3,), _FLOAT, True, "jaw rotation, axis-angle, radians"),
    "flame.head": RoleSpec("face", 2, (3,), _FLOAT, True, "global head rotation, axis-angle, radians"),
    "flame.eyelids": RoleSpec("face", 2, (2,), _FLOAT, False, "left/right eyelid closure in [0,1]"),
    "pose.axis_angle": RoleSpec("motion", 3, (72,), _FLOAT, True, "24 SMPL joints x axis-angle, radians"),
    "pose.root_translation": RoleSpec("motion", 3, (3,), _FLOAT, False, "root translation, metres"),
    "face.detections": RoleSpec(
        "face_detector", 3, (896, 16), _FLOAT, True, "per anchor: box and 6 keypoints, input pixels"
    ),
    "face.detection_scores": RoleSpec("face_detector", 2, (896,), _FLOAT, True, "per anchor: score logit"),
    "face.landmarks": RoleSpec("face_landmarks", 2, (1434,), _FLOAT, True, "478 x (x, y, z), crop pixels"),
    "face.presence": RoleSpec("face_landmarks", 2, (1,), _FLOAT, True, "face presence probability"),
    "arkit.blendshapes": RoleSpec(
        "face_blendshapes", 2, (52,), _FLOAT, True, "_neutral + 51 ARKit blendshapes in [0,1]"
    ),
    "speech.visemes": RoleSpec("speech", 2, (15,), _FLOAT, True, "15 Oculus viseme probabilities [B,15]"),
    "body.detections": RoleSpec(
        "pose_detector", 3, (2254, 12), _FLOAT, True, "per anchor: box and 4 keypoints, input pixels"
    ),
    "body.detection_scores": RoleSpec("pose_detector", 2, (2254,), _FLOAT, True, "per anchor: score logit"),
    "body.landmarks": RoleSpec(
        "pose_landmarks", 2, (195,), _FLOAT, True, "39 x (x, y, z, visibility, presence logits), crop px"
    ),
    "body.presence": RoleSpec("pose_landmarks", 2, (1,), _FLOAT, True, "body presence probability"),
    "body.world_landmarks": RoleSpec(
        "pose_landmarks", 2, (117,), _FLOAT, True, "39 x (x, y, z) metres, hip-centred, crop axes"
    ),
    "body.heatmap": RoleSpec(
        "pose_landmarks", 4, (64, 64, 39), _FLOAT, True, "per landmark heatmap logits, crop / 4, HWC"
    ),
    "hand.recrop": RoleSpec("hand_recrop", 2, (4,), _FLOAT, True, "hand centre and scale points, crop px"),
    "hand.landmarks": RoleSpec("hand_landmarks", 2, (63,), _FLOAT, True, "21 x (x, y, z), crop pixels"),
    "hand.presence": RoleSpec("hand_landmarks", 2, (1,), _FLOAT, True, "hand presence probability"),
    "hand.handedness": RoleSpec("hand_landmarks", 2, (1,), _FLOAT, True, "probability of a right hand"),
    "hand.world_landmarks": RoleSpec(
        "hand_landmarks", 2, (63,), _FLOAT, True, "21 x (x, y, z) metres, crop axes"
    ),
}

# ONNX TensorProto element types -> numpy dtype names (the subset a manifest may use).
_ONNX_DTYPES: dict[int, str] = {
    1: "float32",
    2: "uint8",
    3: "int8",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    16: "bfloat16",
}
# onnxruntime NodeArg.type strings -> numpy dtype names (fallback when the onnx package is absent).
_ORT_DTYPES: dict[str, str] = {
    "tensor(float)": "float32",
    "tensor(uint8)": "uint8",
    "tensor(int8)": "int8",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(bool)": "bool",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(bfloat16)": "bfloat16",
}
_DTYPES = frozenset(_ONNX_DTYPES.values())


@dataclass(frozen=True)
class TensorSpec:
    """One role bound to one ONNX tensor. `slice` picks [start, end) of the last axis."""

    role: str
    tensor: str
    shape: Shape
    dtype: str
    slice: tuple[int, int] | None = None

    @property
    def width(self) -> int | str:
        """Size of the role along the last axis (the slice width when sliced)."""
        if self.slice is not None:
            return self.slice[1] - self.slice[0]
        return self.shape[-1]


@dataclass(frozen=True)
class StatePair:
    """Recurrent state: the engine feeds tensor `output` of step n to tensor `input` of step n+1."""

    input: str
    output: str
    shape: Shape
    dtype: str
    batch_axis: int = 0

    def zeros_shape(self, batch: int) -> StaticShape:
        """The concrete state shape for `batch` sessions (all non-batch dims are static)."""
        return tuple(batch if i == self.batch_axis else int(d) for i, d in enumerate(self.shape))


@dataclass(frozen=True)
class Profile:
    """min/opt/max shape per input tensor name; maps 1:1 onto a TensorRT optimization profile."""

    name: str
    shapes: dict[str, tuple[StaticShape, StaticShape, StaticShape]]

    def __hash__(self) -> int:
        # `shapes` is a dict (the agreed API), so hash its items: keeps manifests usable as cache keys.
        return hash((self.name, tuple(self.shapes.items())))

    @property
    def max_batch(self) -> int:
        """Largest batch of the profile: axis 0 of the first tensor's max shape.

        The loader orders role inputs (whose axis 0 is always batch) before state inputs, and
        `validate_against_onnx` checks every tensor of a profile agrees on the batch range.
        """
        first = next(iter(self.shapes.values()))
        return first[2][0]

    @property
    def min_batch(self) -> int:
        first = next(iter(self.shapes.values()))
        return first[0][0]


@dataclass(frozen=True)
class ModelManifest:
    """Everything the bridge needs to know about one ONNX model. `onnx_path` is absolute once loaded."""

    name: str
    task: Task
    onnx_path: Path
    onnx_sha256: str
    trained: bool
    fps: float
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    state: tuple[StatePair, ...]
    profiles: tuple[Profile, ...]
    description: str
    styles: tuple[str, ...] = ()
    # Post-processing stages the model asks for beyond its task's default ones (POST_STAGES).
    post_processing: tuple[str, ...] = ()
    # Motion: every step conditions on the previous frame's pose, so calls run at time length 1.
    steps_on_previous_pose: bool = False
    # How a trained model was made (data, seed, command, code version): free-form, written as given.
    training: dict[str, Any] = field(default_factory=dict, compare=False)
    # The PyTorch definition the torch backend runs instead of the ONNX graph: "module:callable" taking
    # a seed (reference weights), and, for a trained model, "module:callable" taking the path of the
    # weights beside the ONNX file. Empty: the torch backend runs the ONNX graph itself.
    torch_module: str = ""
    torch_weights: str = ""
    _by_input_role: dict[str, TensorSpec] = field(init=False, repr=False, compare=False)
    _by_output_role: dict[str, TensorSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Frozen dataclass: build the role lookups once, through object.__setattr__.
        object.__setattr__(self, "_by_input_role", {s.role: s for s in self.inputs})
        object.__setattr__(self, "_by_output_role", {s.role: s for s in self.outputs})

    def input_for(self, role: str) -> TensorSpec | None:
        return self._by_input_role.get(role)

    def output_for(self, role: str) -> TensorSpec | None:
        return self._by_output_role.get(role)

    @property
    def path(self) -> Path:
        """Where the manifest file lives: `<onnx stem>.manifest.json` beside the ONNX file."""
        return manifest_path_for(self.onnx_path)

    def profile(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise KeyError(f"{self.name}: no profile {name!r} (have {[p.name for p in self.profiles]})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "task": self.task,
            "description": self.description,
            "trained": self.trained,
            "fps": self.fps,
            "onnx_path": self.onnx_path.name,
            "onnx_sha256": self.onnx_sha256,
            "styles": list(self.styles),
            **({"post_processing": list(self.post_processing)} if self.post_processing else {}),
            **({"steps_on_previous_pose": True} if self.steps_on_previous_pose else {}),
            **({"training": self.training} if self.training else {}),
            **({"torch_module": self.torch_module} if self.torch_module else {}),
            **({"torch_weights": self.torch_weights} if self.torch_weights else {}),
            "inputs": [_spec_to_dict(s) for s in self.inputs],
            "outputs": [_spec_to_dict(s) for s in self.outputs],
            "state": [
                {
                    "input": p.input,
                    "output": p.output,
                    "shape": list(p.shape),
                    "dtype": p.dtype,
                    "batch_axis": p.batch_axis,
                }
                for p in self.state
            ],
            "profiles": [
                {
                    "name": p.name,
                    "shapes": {
                        t: {"min": list(mn), "opt": list(op), "max": list(mx)}
                        for t, (mn, op, mx) in p.shapes.items()
                    },
                }
                for p in self.profiles
            ],
        }

    def to_json(self) -> str:
        """Stable text (fixed key order, trailing newline) so exports are byte-reproducible; lists of
        scalars (shapes, slices) stay on one line so the file reads like the docs."""
        return _dump(self.to_dict(), 0) + "\n"

    def write(self) -> Path:
        self.path.write_text(self.to_json(), encoding="utf-8")
        return self.path


def _dump(obj: Any, indent: int) -> str:
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(obj, dict) and obj:
        items = [f"{inner}{json.dumps(k)}: {_dump(v, indent + 2)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        return "[\n" + ",\n".join(inner + _dump(v, indent + 2) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj)


def _spec_to_dict(s: TensorSpec) -> dict[str, Any]:
    d: dict[str, Any] = {"role": s.role, "tensor": s.tensor, "shape": list(s.shape), "dtype": s.dtype}
    if s.slice is not None:
        d["slice"] = list(s.slice)
    return d


def manifest_path_for(onnx_path: Path) -> Path:
    return onnx_path.with_name(onnx_path.stem + MANIFEST_SUFFIX)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------
# Parsing


def load_manifest(path: str | Path) -> ModelManifest:
    """Load `<name>.manifest.json`; given `<name>.onnx`, load the manifest beside it."""
    p = Path(path)
    if p.suffix == ".onnx":
        p = manifest_path_for(p)
    if not p.is_file():
        raise ManifestError(f"manifest not found: {p}")
    data = p.read_bytes()
    try:
        raw = msgspec.json.decode(data, type=_RawManifest)
    except msgspec.ValidationError as e:
        raise ManifestError(f"{p}: {_where(e, data)}") from None
    except msgspec.DecodeError as e:
        raise ManifestError(f"{p}: not valid JSON: {e}") from None
    try:
        return _build(raw, p)
    except ManifestError as e:
        raise ManifestError(f"{p}: {e}") from None


def find_manifests(directory: str | Path) -> list[ModelManifest]:
    """All manifests in `directory` (not recursive), sorted by file name."""
    return [load_manifest(p) for p in sorted(Path(directory).glob("*" + MANIFEST_SUFFIX))]


# The file's schema (docs/models.md). Unknown fields are refused, so a typo never passes silently.
# The same names as the values of _ONNX_DTYPES (tests/test_manifest.py checks they agree).
_DType = Literal["float32", "uint8", "int8", "int32", "int64", "bool", "float16", "float64", "bfloat16"]


class _RawSpec(msgspec.Struct, forbid_unknown_fields=True):
    role: str
    tensor: str
    shape: list[int | str]
    dtype: _DType
    slice: Annotated[list[int], msgspec.Meta(min_length=2, max_length=2)] | None = None


class _RawState(msgspec.Struct, forbid_unknown_fields=True):
    input: str
    output: str
    shape: list[int | str]
    dtype: _DType
    batch_axis: int = 0


class _RawRange(msgspec.Struct, forbid_unknown_fields=True):
    min: list[int]
    opt: list[int]
    max: list[int]


class _RawProfile(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    shapes: dict[str, _RawRange]


class _RawManifest(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    task: Task
    trained: bool
    fps: float
    onnx_path: str
    inputs: list[_RawSpec]
    outputs: list[_RawSpec]
    format_version: int = FORMAT_VERSION
    description: str = ""
    onnx_sha256: str = ""
    styles: list[str] = []
    state: list[_RawState] = []
    profiles: list[_RawProfile] = []
    post_processing: list[str] = []
    steps_on_previous_pose: bool = False
    training: dict[str, Any] = {}
    torch_module: str = ""
    torch_weights: str = ""


def _where(error: msgspec.ValidationError, data: bytes) -> str:
    """msgspec's message with the tensor named where the path points into a tensor list."""
    message = str(error)
    path = re.search(r"`\$\.(inputs|outputs|state)\[(\d+)\]", message)
    if path is None:
        return message
    try:
        entry = msgspec.json.decode(data)[path.group(1)][int(path.group(2))]
        name = entry.get("tensor", entry.get("input"))
    except (msgspec.DecodeError, LookupError, AttributeError, TypeError):
        return message
    return f"{path.group(1)} tensor {name!r}: {message}"


def _build(raw: _RawManifest, manifest_file: Path) -> ModelManifest:
    if raw.format_version != FORMAT_VERSION:
        raise ManifestError(
            f"format_version {raw.format_version} is not supported (this bridge reads {FORMAT_VERSION})"
        )
    for stage in raw.post_processing:
        if POST_STAGES.get(stage) != raw.task:
            known = ", ".join(f"{k} ({t})" for k, t in POST_STAGES.items())
            raise ManifestError(f"post_processing {stage!r} is not a {raw.task} stage (known: {known})")
    inputs = tuple(_spec(d) for d in raw.inputs)
    outputs = tuple(_spec(d) for d in raw.outputs)
    state = tuple(StatePair(d.input, d.output, tuple(d.shape), d.dtype, d.batch_axis) for d in raw.state)
    # Role inputs first, then state inputs: Profile.max_batch reads the first tensor's axis 0.
    order = {name: i for i, name in enumerate([s.tensor for s in inputs] + [p.input for p in state])}
    profiles = []
    for d in raw.profiles:
        if not d.shapes:
            raise ManifestError(f"profile {d.name!r} has no shapes")
        ordered = sorted(d.shapes.items(), key=lambda kv: order.get(kv[0], len(order)))
        shapes = {t: (tuple(r.min), tuple(r.opt), tuple(r.max)) for t, r in ordered}
        profiles.append(Profile(name=d.name, shapes=shapes))
    return ModelManifest(
        name=raw.name,
        task=raw.task,
        onnx_path=(manifest_file.parent / raw.onnx_path).resolve(),
        onnx_sha256=raw.onnx_sha256,
        trained=raw.trained,
        fps=raw.fps,
        inputs=inputs,
        outputs=outputs,
        state=state,
        profiles=tuple(profiles),
        description=raw.description,
        styles=tuple(raw.styles),
        post_processing=tuple(raw.post_processing),
        steps_on_previous_pose=raw.steps_on_previous_pose,
        training=raw.training,
        torch_module=raw.torch_module,
        torch_weights=raw.torch_weights,
    )


def _spec(d: _RawSpec) -> TensorSpec:
    slice_ = None if d.slice is None else (d.slice[0], d.slice[1])
    return TensorSpec(d.role, d.tensor, tuple(d.shape), d.dtype, slice_)


# ---------------------------------------------------------------------------------------------------
# Validation against the ONNX graph


@dataclass(frozen=True)
class _GraphTensor:
    shape: tuple[int | str | None, ...]  # int static, str named dynamic, None anonymous dynamic
    dtype: str


def validate_against_onnx(manifest: ModelManifest, *, check_hash: bool = True) -> None:
    """Check the manifest against its ONNX graph; raise ManifestError naming the offending tensor.

    A sha256 mismatch is an error (the hash is what built TensorRT plans are keyed on, and a manifest
    describing an older export is how roles silently drift); an empty `onnx_sha256` means "not pinned"
    and only logs a warning. `check_hash=False` skips the hash (useful while iterating on a model).
    """
    m = manifest
    problems = _check_self_consistency(m)
    if problems:
        raise ManifestError(f"manifest {m.name!r}: " + "; ".join(problems))
    if not m.onnx_path.is_file():
        raise ManifestError(f"manifest {m.name!r}: ONNX file not found: {m.onnx_path}")
    data = m.onnx_path.read_bytes()  # read once: hashed and parsed from the same bytes
    if check_hash:
        if not m.onnx_sha256:
            log.warning("manifest %s: onnx_sha256 is empty; the ONNX file is not pinned", m.name)
        else:
            actual = hashlib.sha256(data).hexdigest()
            if actual != m.onnx_sha256:
                raise ManifestError(
                    f"manifest {m.name!r}: sha256 mismatch for {m.onnx_path.name}: manifest says "
                    f"{m.onnx_sha256[:12]}..., file is {actual[:12]}... (re-export or update the manifest)"
                )
    graph_in, graph_out = _read_graph(m.onnx_path, data)
    problems = _check_against_graph(m, graph_in, graph_out)
    if problems:
        raise ManifestError(f"manifest {m.name!r} does not match {m.onnx_path.name}: " + "; ".join(problems))


def _check_self_consistency(m: ModelManifest) -> list[str]:
    """Checks that need only the manifest: roles, widths, slices, state shapes, profiles."""
    out: list[str] = []
    for specs, table, kind in ((m.inputs, INPUT_ROLES, "input"), (m.outputs, OUTPUT_ROLES, "output")):
        seen: set[str] = set()
        for s in specs:
            where = f"{kind} tensor {s.tensor!r} (role {s.role!r})"
            if s.role in seen:
                out.append(f"{where}: role declared twice")
            seen.add(s.role)
            if s.slice is not None:
                last = s.shape[-1] if s.shape else None
                a, b = s.slice
                if not isinstance(last, int):
                    out.append(f"{where}: slice needs a static last dim, shape is {list(s.shape)}")
                elif not 0 <= a < b <= last:
                    out.append(f"{where}: slice [{a}, {b}] is outside the last dim of size {last}")
            if s.role.startswith(EXTRA_ROLE_PREFIX):
                continue
            role = table.get(s.role)
            if role is None:
                out.append(f"{where}: unknown role (known {kind} roles: {sorted(table)}, or 'extra.*')")
                continue
            if role.task != m.task:
                out.append(f"{where}: role belongs to task {role.task!r}, manifest task is {m.task!r}")
            if len(s.shape) != role.rank:
                out.append(f"{where}: rank {len(s.shape)}, role needs rank {role.rank}")
            elif role.trailing:
                if s.slice is None:
                    got = tuple(s.shape[len(s.shape) - len(role.trailing) :])
                else:
                    got = (*s.shape[len(s.shape) - len(role.trailing) : -1], s.width)
                if got != role.trailing:
                    out.append(f"{where}: trailing dims {list(got)}, role needs {list(role.trailing)}")
            if s.dtype not in role.dtypes:
                out.append(f"{where}: dtype {s.dtype}, role needs one of {list(role.dtypes)}")
        for name, role in table.items():
            if role.required and role.task == m.task and name not in seen:
                out.append(f"required {kind} role {name!r} is missing")
    for p in m.state:
        where = f"state tensor {p.input!r}"
        if not 0 <= p.batch_axis < len(p.shape):
            out.append(f"{where}: batch_axis {p.batch_axis} outside rank {len(p.shape)}")
        elif any(not isinstance(d, int) for i, d in enumerate(p.shape) if i != p.batch_axis):
            out.append(f"{where}: only the batch axis may be dynamic, shape is {list(p.shape)}")
    batch_axes = {s.tensor: 0 for s in m.inputs} | {p.input: p.batch_axis for p in m.state}
    for prof in m.profiles:
        batch_ranges: set[tuple[int, int]] = set()
        for t, (mn, op, mx) in prof.shapes.items():
            where = f"profile {prof.name!r} tensor {t!r}"
            if t not in batch_axes:
                out.append(f"{where}: not an input or state input of the manifest")
                continue
            if not len(mn) == len(op) == len(mx):
                out.append(f"{where}: min/opt/max ranks differ")
                continue
            if any(not 1 <= a <= b <= c for a, b, c in zip(mn, op, mx, strict=True)):
                out.append(f"{where}: needs 1 <= min <= opt <= max per dim, got {mn} {op} {mx}")
                continue
            ax = batch_axes[t]
            if ax < len(mn):
                batch_ranges.add((mn[ax], mx[ax]))
        if len(batch_ranges) > 1:
            out.append(f"profile {prof.name!r}: tensors disagree on the batch range {sorted(batch_ranges)}")
        if prof.shapes and next(iter(prof.shapes)) not in {s.tensor for s in m.inputs}:
            out.append(f"profile {prof.name!r}: must list a role input (batch on axis 0)")
    return out


def _read_graph(path: Path, data: bytes) -> tuple[dict[str, _GraphTensor], dict[str, _GraphTensor]]:
    """Graph inputs (initializers excluded) and outputs of the model `data` read from `path`, via `onnx`
    or else onnxruntime metadata."""
    try:
        import onnx
    except ImportError:
        return _read_graph_ort(path)
    model = onnx.load_from_string(data)  # external data, if any, is not loaded
    inits = {i.name for i in model.graph.initializer}

    def conv(vi: Any) -> _GraphTensor:
        tt = vi.type.tensor_type
        dims: list[int | str | None] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param"):
                dims.append(str(d.dim_param))
            else:
                dims.append(None)
        return _GraphTensor(tuple(dims), _ONNX_DTYPES.get(tt.elem_type, f"onnx-type-{tt.elem_type}"))

    ins = {vi.name: conv(vi) for vi in model.graph.input if vi.name not in inits}
    outs = {vi.name: conv(vi) for vi in model.graph.output}
    return ins, outs


def _read_graph_ort(path: Path) -> tuple[dict[str, _GraphTensor], dict[str, _GraphTensor]]:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def conv(args: Iterable[Any]) -> dict[str, _GraphTensor]:
        return {
            a.name: _GraphTensor(
                tuple(d if isinstance(d, (int, str)) else None for d in a.shape),
                _ORT_DTYPES.get(a.type, a.type),
            )
            for a in args
        }

    return conv(sess.get_inputs()), conv(sess.get_outputs())


def _check_tensor(where: str, declared: Sequence[Dim], dtype: str, g: _GraphTensor) -> list[str]:
    out: list[str] = []
    if g.dtype != dtype:
        out.append(f"{where}: dtype {dtype} in manifest, {g.dtype} in ONNX")
    if len(declared) != len(g.shape):
        out.append(f"{where}: rank {len(declared)} in manifest, {len(g.shape)} in ONNX {list(g.shape)}")
        return out
    for axis, (d, gd) in enumerate(zip(declared, g.shape, strict=True)):
        if isinstance(gd, int) and isinstance(d, int) and d != gd:
            out.append(f"{where}: dim {axis} is {d} in manifest, {gd} in ONNX")
        elif isinstance(gd, int) and isinstance(d, str):
            out.append(f"{where}: dim {axis} is dynamic ({d!r}) in manifest but fixed to {gd} in ONNX")
    return out


def _check_against_graph(
    m: ModelManifest, graph_in: Mapping[str, _GraphTensor], graph_out: Mapping[str, _GraphTensor]
) -> list[str]:
    out: list[str] = []
    for specs, graph, side in ((m.inputs, graph_in, "input"), (m.outputs, graph_out, "output")):
        for s in specs:
            g = graph.get(s.tensor)
            if g is None:
                out.append(f"{side} tensor {s.tensor!r} (role {s.role!r}) is missing from the ONNX {side}s")
            else:
                out += _check_tensor(f"{side} tensor {s.tensor!r}", s.shape, s.dtype, g)
    for p in m.state:
        for name, table, side in ((p.input, graph_in, "input"), (p.output, graph_out, "output")):
            g = table.get(name)
            if g is None:
                out.append(f"state {side} tensor {name!r} is missing from the ONNX {side}s")
            else:
                out += _check_tensor(f"state {side} tensor {name!r}", p.shape, p.dtype, g)
    described = {s.tensor for s in m.inputs} | {p.input for p in m.state}
    for name in graph_in:
        if name not in described:
            out.append(f"ONNX input {name!r} is not described by any input role or state pair")
    dynamic = [n for n, g in graph_in.items() if not all(isinstance(d, int) for d in g.shape)]
    for prof in m.profiles:
        # TensorRT needs a range for every dynamic input in every profile.
        out += [
            f"profile {prof.name!r}: dynamic input {n!r} has no shape range"
            for n in dynamic
            if n not in prof.shapes
        ]
        for t, (mn, _, mx) in prof.shapes.items():
            g = graph_in.get(t)
            if g is None or len(mn) != len(g.shape):
                if g is not None:
                    out.append(
                        f"profile {prof.name!r} tensor {t!r}: rank {len(mn)}, ONNX rank {len(g.shape)}"
                    )
                continue
            for axis, gd in enumerate(g.shape):
                if isinstance(gd, int) and not mn[axis] == mx[axis] == gd:
                    out.append(f"profile {prof.name!r} tensor {t!r}: dim {axis} is fixed to {gd} in ONNX")
    return out
