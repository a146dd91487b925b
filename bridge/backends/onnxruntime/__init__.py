"""ONNX Runtime backend: the CPU default, CUDA EP where onnxruntime-gpu is installed.

Nothing here imports onnxruntime at package import; `runner` and `loader` do, and they are imported
only by the backend registry when an "onnxruntime" backend is created.
"""
