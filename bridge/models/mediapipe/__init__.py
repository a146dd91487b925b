"""Google's MediaPipe FaceLandmarker models (Apache-2.0): find the bundle, convert its networks to ONNX.

The bundle is never committed: `locate` finds it (a user path, the user cache directory, an installed
package) and checks its sha256; `convert` writes our own ONNX conversions and manifests to the cache.
"""
