"""Generated and bundled test media (music with a known beat grid, a moving face video).

A leaf like bridge.protocol: numpy and OpenCV only, so the harness, the demo, the benchmarks and the
tests can all use it without touching the server.
"""
