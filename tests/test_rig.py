"""Rig tables, rotation conversions, forward kinematics and the FLAME→ARKit map."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bridge.rig import arkit, flame, smpl
from bridge.rig.flame_to_arkit import NUM_INPUTS, FlameToArkit, heuristic_matrix
from bridge.rig.forward_kinematics import forward_kinematics, forward_kinematics_quat
from bridge.rig.rotations import (
    axis_angle_to_matrix,
    axis_angle_to_quat,
    normalize_quat,
    quat_multiply,
    quat_rotate,
    quat_to_axis_angle,
    quat_to_matrix,
)


def test_arkit_order_and_names() -> None:
    names = arkit.ARKIT_NAMES
    assert len(names) == arkit.NUM_ARKIT == 52
    assert len(set(names)) == 52
    assert names[0] == "EyeBlinkLeft"
    assert names[17] == "JawOpen"
    assert names[18] == "MouthClose"
    assert names[43] == "BrowInnerUp"
    assert names[51] == "TongueOut"
    assert arkit.ARKIT_APPLE_NAMES[0] == "eyeBlinkLeft"
    assert all(arkit.to_unreal_name(a) == u for a, u in zip(arkit.ARKIT_APPLE_NAMES, names, strict=True))


def test_flame_layout() -> None:
    assert flame.FLAME_DIM == 58
    layout = (flame.EXPRESSION, flame.JAW, flame.HEAD, flame.EYELIDS)
    assert [(s.start, s.stop) for s in layout] == [(0, 50), (50, 53), (53, 56), (56, 58)]
    assert len(flame.FLAME_CHANNEL_NAMES) == 58


def test_smpl_tables() -> None:
    assert len(smpl.JOINT_NAMES) == len(smpl.PARENTS) == len(smpl.UNITY_BONE_NAMES) == 24
    assert smpl.PARENTS[0] == -1
    assert all(0 <= p < j for j, p in enumerate(smpl.PARENTS) if j > 0)
    bones = [b for b in smpl.UNITY_BONE_NAMES if b is not None]
    assert len(bones) == len(set(bones)) == 22
    lim = smpl.JOINT_LIMITS_DEG
    assert lim.shape == (24, 3, 2) and np.all(lim[..., 0] <= lim[..., 1])
    # Left/right pairs are mirror images: mirroring x → -x keeps the x component of an
    # axis-angle vector and negates (and so swaps the bounds of) y and z.
    names = smpl.JOINT_NAMES
    for j, name in enumerate(names):
        if name.startswith("left_"):
            r = names.index("right_" + name[5:])
            np.testing.assert_allclose(lim[r, 0], lim[j, 0])
            np.testing.assert_allclose(lim[r, 1:], -lim[j, 1:, ::-1])
            # Rest offsets mirror too, to within the template's asymmetry (~2 cm).
            mirrored = smpl.REST_OFFSETS[j] * np.array([-1.0, 1.0, 1.0])
            assert np.abs(smpl.REST_OFFSETS[r] - mirrored).max() < 0.035


def test_axis_angle_quat_round_trip_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    aa = rng.normal(size=(500, 3)) * 1.2
    q = axis_angle_to_quat(aa)
    np.testing.assert_allclose(q, Rotation.from_rotvec(aa).as_quat(canonical=False), atol=1e-12)
    back = quat_to_axis_angle(q)
    np.testing.assert_allclose(
        Rotation.from_rotvec(back).as_matrix(), Rotation.from_rotvec(aa).as_matrix(), atol=1e-10
    )
    np.testing.assert_allclose(axis_angle_to_matrix(aa), Rotation.from_rotvec(aa).as_matrix(), atol=1e-12)


def test_rotation_edge_cases_zero_tiny_and_pi() -> None:
    zero = axis_angle_to_quat(np.zeros(3))
    np.testing.assert_array_equal(zero, [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(quat_to_axis_angle([0.0, 0.0, 0.0, 1.0]), np.zeros(3))
    tiny = np.array([1e-9, -2e-9, 3e-9])
    np.testing.assert_allclose(quat_to_axis_angle(axis_angle_to_quat(tiny)), tiny, rtol=1e-9, atol=0)
    for axis in np.eye(3):
        q = axis_angle_to_quat(np.pi * axis)
        np.testing.assert_allclose(q, [*axis, 0.0], atol=1e-15)
        np.testing.assert_allclose(np.abs(quat_to_axis_angle(q)), np.pi * axis, atol=1e-12)
    # Just past π the short way round flips the axis; the angle stays in [0, π].
    near = quat_to_axis_angle(axis_angle_to_quat([0.0, np.pi + 1e-3, 0.0]))
    np.testing.assert_allclose(near, [0.0, -(np.pi - 1e-3), 0.0], atol=1e-9)
    # q and -q are one rotation.
    q = axis_angle_to_quat([0.3, -0.2, 0.9])
    np.testing.assert_allclose(quat_to_axis_angle(-q), quat_to_axis_angle(q), atol=1e-12)
    np.testing.assert_array_equal(normalize_quat(np.zeros(4)), [0.0, 0.0, 0.0, 1.0])


def test_quat_multiply_matrix_and_rotate_match_scipy() -> None:
    rng = np.random.default_rng(1)
    a = Rotation.random(64, random_state=2)
    b = Rotation.random(64, random_state=3)
    prod = quat_multiply(a.as_quat(), b.as_quat())
    np.testing.assert_allclose(quat_to_matrix(prod), (a * b).as_matrix(), atol=1e-12)
    v = rng.normal(size=(64, 3))
    np.testing.assert_allclose(quat_rotate(a.as_quat(), v), a.apply(v), atol=1e-12)


def _reference_fk(aa: np.ndarray, trans: np.ndarray) -> np.ndarray:
    rots = Rotation.from_rotvec(aa).as_matrix()
    world_r = [rots[0]]
    world_p = [smpl.REST_OFFSETS[0] + trans]
    for j in range(1, 24):
        p = smpl.PARENTS[j]
        world_r.append(world_r[p] @ rots[j])
        world_p.append(world_p[p] + world_r[p] @ smpl.REST_OFFSETS[j])
    return np.array(world_p)


def test_forward_kinematics_matches_matrix_reference_and_batches() -> None:
    rng = np.random.default_rng(4)
    aa = rng.normal(size=(3, 24, 3)) * 0.5
    trans = rng.normal(size=(3, 3))
    pos = forward_kinematics(aa, trans)
    assert pos.shape == (3, 24, 3)
    for i in range(3):
        np.testing.assert_allclose(pos[i], _reference_fk(aa[i], trans[i]), atol=1e-12)
    flat = forward_kinematics(aa.reshape(3, 72), trans)
    np.testing.assert_allclose(flat, pos)
    # Bone lengths are preserved by any pose.
    parents = np.array(smpl.PARENTS[1:])
    lengths = np.linalg.norm(pos[:, 1:] - pos[:, parents], axis=-1)
    rest_lengths = np.linalg.norm(smpl.REST_OFFSETS[1:], axis=-1)
    np.testing.assert_allclose(lengths, np.broadcast_to(rest_lengths, (3, 23)))
    _, rot = forward_kinematics_quat(axis_angle_to_quat(np.zeros((24, 3))))
    np.testing.assert_allclose(rot[..., 3], 1.0)


def test_rest_pose_is_a_plausible_adult() -> None:
    pos = forward_kinematics(np.zeros((24, 3)))
    head_to_toe = pos[15, 1] - min(pos[10, 1], pos[11, 1])
    assert 1.4 < head_to_toe < 1.8
    assert pos[16, 0] > 0.0 > pos[17, 0]  # left shoulder on +X


def test_flame_to_arkit_heuristic() -> None:
    m = heuristic_matrix()
    assert m.shape == (52, NUM_INPUTS) == (52, 55)
    mapper = FlameToArkit.default()
    frame = np.zeros(flame.FLAME_DIM, np.float32)
    np.testing.assert_array_equal(mapper.map_flame(frame), np.zeros(52, np.float32))
    frame[flame.JAW.start] = 0.35  # wide open jaw
    frame[flame.EYELIDS.start] = 1.0  # left eye closed
    frame[1] = 5.0  # strong smile, beyond the clamp
    frame[flame.HEAD] = 1.0  # head rotation must not leak into blendshapes
    w = mapper.map_flame(frame)
    idx = arkit.ARKIT_INDEX
    assert w[idx["JawOpen"]] == pytest.approx(1.0)
    assert w[idx["EyeBlinkLeft"]] == pytest.approx(1.0)
    assert w[idx["EyeBlinkRight"]] == 0.0
    assert w[idx["MouthSmileLeft"]] == 1.0 and w[idx["MouthFrownLeft"]] == 0.0
    assert w.min() >= 0.0 and w.max() <= 1.0
    frame[1] = -5.0
    w = mapper.map_flame(frame)
    assert w[idx["MouthFrownRight"]] == 1.0 and w[idx["MouthSmileRight"]] == 0.0


def test_flame_to_arkit_batch_and_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    fitted = rng.normal(size=(52, 55)).astype(np.float32) * 0.1
    path = tmp_path / "fitted.npy"
    np.save(path, fitted)
    mapper = FlameToArkit.from_file(path)
    np.testing.assert_array_equal(mapper.matrix, fitted)
    x = rng.normal(size=(8, 55)).astype(np.float32)
    batch = mapper.map(x)
    assert batch.shape == (8, 52) and batch.dtype == np.float32
    for i in range(8):
        np.testing.assert_allclose(batch[i], np.clip(fitted @ x[i], 0, 1), atol=1e-5)
    out = np.empty((8, 52), np.float32)
    assert mapper.map(x, out=out) is out
    np.save(tmp_path / "bad.npy", np.zeros((51, 103)))
    with pytest.raises(ValueError, match="52, 55"):
        FlameToArkit.from_file(tmp_path / "bad.npy")
