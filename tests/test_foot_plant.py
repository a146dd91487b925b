"""Served foot planting (bridge.motion.foot_plant.FootPlanter, the motion post's `foot_plant` stage): a foot
on the floor stays put while the model slides it (two-bone leg IK), a foot let go eases back to the
model's without a jump, rows are independent, and the IK reaches what it can without stretching."""

from __future__ import annotations

import numpy as np

from bridge.motion.foot_plant import DRIFT_OFF_M, FLOOR_Y, LEG_ROTATIONS, FootPlanter, leg_ik, leg_joints
from bridge.motion.moves import MOVES, base_pose
from bridge.rig.forward_kinematics import forward_kinematics_quat
from bridge.rig.rotations import axis_angle_to_quat

TOES = [10, 11]


def _slide(frames: int, amp: float) -> np.ndarray:
    """Both feet flat on the floor, the left hip swinging amp·sin (2 s period): the model's left foot
    slides forward and back at floor height (its toe rises < 1.5 cm at amp 0.08, 5 cm at 0.25)."""
    p = base_pose(frames)
    p[:, 1, 0] += amp * np.sin(2 * np.pi * np.arange(frames) / 120.0)
    return axis_angle_to_quat(p).astype(np.float32)


def _run(planter: FootPlanter, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q (B, T, 24, 4) frame by frame → planted quats, roots (B, T, 3) and contact (B, T, 2)."""
    b, t = q.shape[:2]
    out, roots, down = np.empty_like(q), np.empty((b, t, 3), np.float32), np.empty((b, t, 2), bool)
    for i in range(t):
        out[:, i], roots[:, i] = planter.step(slice(0, b), q[:, i])
        down[:, i] = planter.contact[:b]
    return out, roots, down


def _planter(rows: int) -> FootPlanter:
    planter = FootPlanter(1 / 60)
    planter.grow(rows)
    planter.reset(np.arange(rows))
    return planter


def _heading(pos: np.ndarray) -> np.ndarray:
    forward = pos[..., TOES, :] - pos[..., [7, 8], :]
    heading: np.ndarray = np.arctan2(forward[..., 0], forward[..., 2])
    return heading


def test_a_foot_on_the_floor_stays_put_while_the_model_slides_it() -> None:
    q = _slide(240, 0.08)[None]
    out, roots, down = _run(_planter(1), q)
    assert down[0].all()  # both feet carry weight throughout
    model, _ = forward_kinematics_quat(q[0], roots[0])
    shown, _ = forward_kinematics_quat(out[0], roots[0])
    slid = np.abs(model[:, 10, [0, 2]] - model[0, 10, [0, 2]]).max()
    assert slid > 0.05, slid  # the model moves the left foot 5+ cm over the floor ...
    moved = np.linalg.norm(np.diff(shown[:, TOES][..., [0, 2]], axis=0), axis=-1)
    assert moved.max() < 1e-4, moved.max()  # ... the shown one moves < 0.1 mm a frame
    assert np.abs(np.diff(_heading(shown), axis=0)).max() < 1e-4
    # Heights are the model's: the lowest contact stays on the floor.
    contact = np.minimum(shown[:, TOES, 1], shown[:, [7, 8], 1]).min(axis=1)
    np.testing.assert_allclose(contact, FLOOR_Y, atol=1e-5)
    np.testing.assert_allclose(shown[:, TOES, 1], model[:, TOES, 1], atol=1e-5)


def test_a_foot_let_go_eases_back_without_a_jump() -> None:
    q = _slide(240, 0.25)[None]  # the model's foot slides further than DRIFT_OFF_M from its pin
    out, roots, down = _run(_planter(1), q)
    model, _ = forward_kinematics_quat(q[0], roots[0])
    shown, _ = forward_kinematics_quat(out[0], roots[0])
    step = np.linalg.norm(np.diff(shown[:, 10, [0, 2]], axis=0), axis=-1)
    held = down[0, 1:, 0] & down[0, :-1, 0]
    assert held.sum() > 30 and step[held].max() < 1e-3  # held: < 1 mm a frame
    lifts = np.flatnonzero(down[0, :-1, 0] & ~down[0, 1:, 0]) + 1
    assert len(lifts) >= 2
    gap = np.linalg.norm(model[:, 10, [0, 2]] - shown[:, 10, [0, 2]], axis=-1)
    for frame in lifts:
        assert gap[frame] > 0.8 * DRIFT_OFF_M  # let go far from the model's foot
        assert step[frame - 1] < 1e-3  # the frame it is let go it is still where it was held
        assert step[frame] < 5e-3  # it starts from rest (velocity continuous), then eases:
        assert step[frame : frame + 30].max() < DRIFT_OFF_M / 4  # no snap onto the model's foot
        assert gap[frame + 30] < 0.01 or down[0, frame + 30, 0]  # back on the model's within 0.5 s


def test_a_stepping_foot_never_jumps() -> None:
    """Step-touch: a foot lifts every other beat, lifts off (height) and lands again."""
    b = np.arange(360) / 30.0
    pose, _ = MOVES["step_touch"](b, np.full(360, 1.0))
    q = axis_angle_to_quat(pose).astype(np.float32)[None]
    out, roots, down = _run(_planter(1), q)
    assert (np.diff(down[0].astype(int), axis=0) != 0).sum() >= 8  # feet land and lift
    model, _ = forward_kinematics_quat(q[0], roots[0])
    shown, _ = forward_kinematics_quat(out[0], roots[0])
    step = np.linalg.norm(np.diff(shown[:, TOES], axis=0), axis=-1)
    model_step = np.linalg.norm(np.diff(model[:, TOES], axis=0), axis=-1)
    assert step.max() < 1.2 * model_step.max() + 1e-3, (step.max(), model_step.max())
    held = down[0, 1:] & down[0, :-1]
    horizontal = np.linalg.norm(np.diff(shown[:, TOES][..., [0, 2]], axis=0), axis=-1)
    assert horizontal[held].max() < 1e-3


def test_rows_are_independent_and_a_reset_row_starts_again() -> None:
    q = np.stack([_slide(90, 0.25), _slide(90, 0.08)])
    q[1, :, 0] = axis_angle_to_quat(np.array([0.0, 0.3, 0.0]))  # the second dancer faces elsewhere
    planter = _planter(2)
    out, roots, _ = _run(planter, q)
    out1, roots1, _ = _run(_planter(1), q[1:])
    np.testing.assert_allclose(out[1], out1[0], atol=1e-6)
    np.testing.assert_allclose(roots[1], roots1[0], atol=1e-6)
    planter.reset(np.array([0]))
    again, roots_again, _ = _run(planter, q[:, :1])
    np.testing.assert_allclose(roots_again[0, 0, [0, 2]], 0.0, atol=1e-6)
    np.testing.assert_array_equal(again[0, 0], q[0, 0])  # nothing pinned yet: the model's legs


def test_leg_ik_reaches_a_target_in_reach_and_points_at_one_beyond() -> None:
    rng = np.random.default_rng(3)
    pose, _ = MOVES["kick"](np.arange(40) / 17.0, np.full(40, 1.0))
    q = np.asarray(axis_angle_to_quat(pose + rng.normal(0, 0.05, pose.shape)), np.float64)
    legs = leg_joints(q)  # (40, 2 legs, hip knee ankle toe, 3)
    hips, ankles = legs[:, :, 0], legs[:, :, 2]
    target = ankles + rng.normal(0, 0.01, ankles.shape)
    yaw = rng.normal(0, 0.3, (40, 2))
    far = rng.random(40) < 0.25
    target[far, 0] = hips[far, 0] + [0.0, -2.0, 0.0]  # two metres below the left hip
    out = q.copy()
    out[:, LEG_ROTATIONS.ravel()] = leg_ik(q, target, yaw).reshape(40, 6, 4)
    before, _ = forward_kinematics_quat(q)
    after, _ = forward_kinematics_quat(out)
    reach = np.linalg.norm(before[:, [4, 5]] - before[:, [1, 2]], axis=-1)
    reach += np.linalg.norm(before[:, [7, 8]] - before[:, [4, 5]], axis=-1)
    hip_to = target - after[:, [1, 2]]
    inside = np.linalg.norm(hip_to, axis=-1) < reach - 1e-3
    assert inside.sum() > 40 and (~inside).sum() >= 5
    np.testing.assert_allclose(after[:, [7, 8]][inside], target[inside], atol=1e-9)
    # Beyond reach: the straight leg (no bone stretched) points at the target.
    leg = after[:, [7, 8]] - after[:, [1, 2]]
    np.testing.assert_allclose(np.linalg.norm(leg, axis=-1)[~inside], reach[~inside], atol=1e-3)
    cos = np.einsum("...k,...k", leg, hip_to) / np.linalg.norm(leg, axis=-1) / np.linalg.norm(hip_to, axis=-1)
    assert cos[~inside].min() > 0.9999
    # The foot turns by yaw about the vertical and keeps its pitch; nothing else moves.
    turn = _heading(after) - _heading(before) - yaw
    np.testing.assert_allclose((turn + np.pi) % (2 * np.pi) - np.pi, 0.0, atol=1e-9)
    pitch = (after[:, TOES] - after[:, [7, 8]])[..., 1] - (before[:, TOES] - before[:, [7, 8]])[..., 1]
    np.testing.assert_allclose(pitch, 0.0, atol=1e-9)
    others = [j for j in range(24) if j not in LEG_ROTATIONS]
    np.testing.assert_array_equal(out[:, others], q[:, others])
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, atol=1e-9)
    # A target on the hip itself (no direction to turn to): finite unit rotations still.
    odd = leg_ik(q, hips.copy(), yaw)
    assert np.isfinite(odd).all()
    np.testing.assert_allclose(np.linalg.norm(odd, axis=-1), 1.0, atol=1e-9)
