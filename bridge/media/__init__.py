"""Generated and bundled test media (music with a known beat grid, a moving face video) and the real
recordings read from Debian packages (recordings).

A leaf like bridge.protocol: numpy, OpenCV and soundfile only, so the harness, the demo, the
benchmarks and the tests can all use it without touching the server.
"""
