"""Manifest: round trip, lookups, and every validation failure naming the offending tensor."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bridge.runtime.manifest import (
    ManifestError,
    ModelManifest,
    find_manifests,
    load_manifest,
    validate_against_onnx,
)
from tests.conftest import MODELS

FACE = MODELS / "face_expression_small.manifest.json"
DANCE = MODELS / "dance_lstm.manifest.json"


def test_round_trip_is_byte_identical() -> None:
    for path in (FACE, DANCE):
        m = load_manifest(path)
        assert m.to_json() == path.read_text(encoding="utf-8")
        assert m.path == path
        assert m.onnx_path == path.with_name(path.name.replace(".manifest.json", ".onnx"))


def test_round_trip_through_another_folder(tmp_path: Path) -> None:
    m = load_manifest(DANCE)
    moved = dataclasses.replace(m, onnx_path=tmp_path / m.onnx_path.name)
    moved.write()
    again = load_manifest(tmp_path / "dance_lstm.onnx")  # the .onnx path finds its sibling manifest
    assert again == moved
    assert hash(again) == hash(moved)  # usable as a cache key
    assert again.to_json() == m.to_json()


def test_lookups_and_profiles() -> None:
    face, dance = load_manifest(FACE), load_manifest(DANCE)
    assert face.task == "face" and not face.trained and "UNTRAINED" in face.description
    image = face.input_for("image")
    assert image is not None and image.shape == ("batch", 3, 224, 224)
    assert face.output_for("pose.axis_angle") is None
    aa = dance.output_for("pose.axis_angle")
    assert aa is not None and aa.slice == (0, 72) and aa.width == 72
    assert [p.input for p in dance.state] == ["h_in", "c_in"]
    assert dance.styles[0] == "break" and len(dance.styles) == 10
    assert {p.name: p.max_batch for p in face.profiles} == {"realtime": 1, "batched": 8}
    assert {p.name: p.max_batch for p in dance.profiles} == {"realtime": 1, "batched": 64, "offline": 8}
    assert dance.profile("offline").shapes["features"] == ((1, 16, 35), (4, 64, 35), (8, 128, 35))
    assert [m.name for m in find_manifests(MODELS)] == [
        "dance_lstm",
        "face_expression_small",
        "speech_visemes",
    ]


def test_committed_manifests_validate() -> None:
    for path in (FACE, DANCE):
        validate_against_onnx(load_manifest(path))


def test_validation_without_onnx_package_uses_onnxruntime(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # makes `import onnx` raise ImportError
    validate_against_onnx(load_manifest(DANCE))
    with pytest.raises(ManifestError, match="'h_missing'"):
        validate_against_onnx(_mutated_manifest(DANCE, _set_state_output("h_missing"), tmp_path))


# --- mutations: each returns nothing and edits the raw manifest dict in place ------------------------

Mutation = Callable[[dict[str, Any]], None]


def _mutated_manifest(source: Path, mutate: Mutation, tmp: Path) -> ModelManifest:
    """Copy the ONNX file to `tmp` and load an edited copy of the manifest beside it."""
    raw = json.loads(source.read_text(encoding="utf-8"))
    onnx_name = raw["onnx_path"]
    mutate(raw)
    if not (tmp / onnx_name).exists():
        shutil.copy(source.with_name(onnx_name), tmp / onnx_name)
    path = tmp / source.name
    path.write_text(json.dumps(raw), encoding="utf-8")
    return load_manifest(path)


def _output(which: str, **changes: Any) -> Mutation:
    def f(raw: dict[str, Any]) -> None:
        next(o for o in raw["outputs"] if o["role"] == which).update(changes)

    return f


def _input(which: str, **changes: Any) -> Mutation:
    def f(raw: dict[str, Any]) -> None:
        next(o for o in raw["inputs"] if o["role"] == which).update(changes)

    return f


def _set_state_output(name: str) -> Mutation:
    def f(raw: dict[str, Any]) -> None:
        raw["state"][0]["output"] = name

    return f


def _set(key: str, value: Any) -> Mutation:
    def f(raw: dict[str, Any]) -> None:
        raw[key] = value

    return f


def _drop_state(index: int) -> Mutation:
    def f(raw: dict[str, Any]) -> None:
        dropped = raw["state"].pop(index)
        for p in raw["profiles"]:
            del p["shapes"][dropped["input"]]

    return f


def _drop_from_profile(profile: str, tensor: str) -> Mutation:
    def f(raw: dict[str, Any]) -> None:
        del next(p for p in raw["profiles"] if p["name"] == profile)["shapes"][tensor]

    return f


def _state_shape(shape: list[Any]) -> Mutation:
    def f(raw: dict[str, Any]) -> None:
        raw["state"][0]["shape"] = shape

    return f


def _drop_output(role: str) -> Mutation:
    def f(raw: dict[str, Any]) -> None:
        raw["outputs"] = [o for o in raw["outputs"] if o["role"] != role]

    return f


CASES: list[tuple[str, Path, Mutation, list[str]]] = [
    ("missing tensor", FACE, _output("flame.jaw", tensor="jaw_angles"), ["'jaw_angles'", "missing"]),
    ("wrong rank", DANCE, _input("pose.previous", shape=["batch", 1, 75]), ["'pose_prev'", "rank"]),
    ("wrong static dim", DANCE, _state_shape(["batch", 3, 256]), ["'h_in'", "dim 1"]),
    ("wrong dtype", DANCE, _input("pose.previous", dtype="float16"), ["'pose_prev'", "float16"]),
    ("wrong dim of a role", FACE, _input("image", shape=["batch", "c", 224, 224]), ["'image'", "3, 224"]),
    (
        "dynamic in manifest, fixed in ONNX",
        FACE,
        _output("flame.eyelids", role="extra.eyelids", shape=["batch", "k"]),
        ["'eyelids'", "fixed to 2"],
    ),
    (
        "wrong rank in ONNX",
        FACE,
        _output("flame.eyelids", role="extra.eyelids", shape=["batch", 2, 1]),
        ["'eyelids'", "rank 3"],
    ),
    ("slice outside dim", DANCE, _output("pose.root_translation", slice=[72, 76]), ["'pose'", "outside"]),
    ("slice of the wrong width", DANCE, _output("pose.axis_angle", slice=[0, 71]), ["'pose'", "72"]),
    ("state output missing", DANCE, _set_state_output("h_missing"), ["'h_missing'", "missing"]),
    (
        "unknown role",
        FACE,
        _output("flame.eyelids", role="flame.nose"),
        ["'eyelids'", "'flame.nose'", "unknown"],
    ),
    ("role of the other task", FACE, _output("flame.eyelids", role="pose.root_translation"), ["'eyelids'"]),
    ("sha256 mismatch", FACE, _set("onnx_sha256", "0" * 64), ["face_expression_small.onnx", "sha256"]),
    ("undescribed ONNX input", DANCE, _drop_state(1), ["'c_in'", "not described"]),
    ("profile misses a dynamic input", DANCE, _drop_from_profile("batched", "style"), ["'style'", "batched"]),
    ("required role missing", FACE, _drop_output("flame.head"), ["'flame.head'", "required"]),
]


@pytest.mark.parametrize(("source", "mutate", "needles"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation_failure_names_the_tensor(
    tmp_path: Path, source: Path, mutate: Mutation, needles: list[str]
) -> None:
    m = _mutated_manifest(source, mutate, tmp_path)
    with pytest.raises(ManifestError) as info:
        validate_against_onnx(m)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_empty_sha_is_a_warning_not_an_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    m = _mutated_manifest(FACE, _set("onnx_sha256", ""), tmp_path)
    validate_against_onnx(m)
    assert "not pinned" in caplog.text
    validate_against_onnx(_mutated_manifest(FACE, _set("onnx_sha256", "0" * 64), tmp_path), check_hash=False)


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (_set("task", "juggling"), "task"),
        (_set("trainde", True), "trainde"),  # a typo is refused, not ignored
        (_set("fps", "60"), "fps"),
        (_input("image", dtype="float33"), "'image'"),
        (_input("image", slice=[1]), "'image'"),
        (_set("format_version", 99), "format_version"),
    ],
)
def test_malformed_manifest(tmp_path: Path, mutate: Mutation, needle: str) -> None:
    with pytest.raises(ManifestError, match=needle):
        _mutated_manifest(FACE, mutate, tmp_path)


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="not found"):
        load_manifest(tmp_path / "nothing.onnx")


def test_schema_dtypes_are_the_onnx_ones() -> None:
    from typing import get_args

    from bridge.runtime import manifest

    assert set(get_args(manifest._DType)) == manifest._DTYPES
