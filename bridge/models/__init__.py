"""Reference models (PyTorch) with deterministic seeded, UNTRAINED weights, and their ONNX export.

These exist so the bridge, its backends and its benchmarks have real architectures to run before
anyone brings trained weights. Their outputs are not meaningful face or dance estimates. This package
imports torch; nothing outside bridge/models may import it.
"""
