"""NVIDIA Triton Inference Server as a backend (runner) and the model repository it serves (repository)."""
