"""PyTorch backend: the reference modules on CUDA (FP16/BF16, CUDA graphs per batch tier, pinned host
buffers, copy and compute streams, device-resident state slots), or eager on the CPU for tests.

Nothing here imports torch at package import of `bridge`; the backend registry imports `runner` when a
"torch" backend is created.
"""
