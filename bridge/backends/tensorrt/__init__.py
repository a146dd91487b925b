"""TensorRT backend: one deserialized engine, an execution slot (stream + contexts + buffers) per concurrent
caller. Nothing here imports TensorRT or cuda-python at package import; the loader does, on activate."""
