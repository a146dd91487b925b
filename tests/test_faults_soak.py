"""A short run of bench/soak.py (the full one is 10 minutes): no errors, no lost frames, no leaks in sight."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

SOAK = Path(__file__).resolve().parents[1] / "bench" / "soak.py"


def load_soak() -> Any:
    spec = importlib.util.spec_from_file_location("soak", SOAK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def test_short_soak_has_no_errors_and_no_lost_frames() -> None:
    # 8 sessions for 12 s: small enough for a busy 2-core CI machine to keep up with at 60 Hz.
    report = load_soak().soak(minutes=0.2, sessions=8, face=1)
    assert report.ok, report
    assert report.frames_received >= 6 * 60 * 7  # most of 12 s of 7 motion sessions at 60 fps
    assert report.rss_mb_end < 2 * report.rss_mb_warm
