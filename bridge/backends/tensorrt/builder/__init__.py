"""Engine building: ONNX -> TensorRT plan (+ plan manifest), compatibility checks, `doctor`.

Nothing here imports TensorRT at package import; `bridge.backends.tensorrt.builder.flavour.load_flavour` does,
when a build or a check needs it. The CLI entry point is `bridge.cli.build.register_commands`.
"""
