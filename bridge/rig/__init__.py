"""Rig tables and mappings: ARKit-52 names, FLAME layout, SMPL skeleton, rotations, FK."""
