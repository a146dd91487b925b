"""Errors of the build tool; each message says what is wrong and what to do about it."""

from __future__ import annotations

__all__ = ["BuildError", "ProfileError"]


class BuildError(RuntimeError):
    """An engine could not be built; the message names the input at fault."""


class ProfileError(BuildError, ValueError):
    """A shape profile is malformed or outside what the model's ONNX inputs allow."""
