"""Developer tools: TensorRT type stubs, a local Triton server for tests and benchmarks."""
