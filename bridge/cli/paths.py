"""Where bundled files live."""

from __future__ import annotations

import os
from pathlib import Path

# A source checkout keeps engines/ beside the package; AVATAR_BRIDGE_ENGINES points elsewhere.
_REPO_ENGINES = Path(__file__).resolve().parents[2] / "engines"


def default_engines_dir() -> Path:
    return Path(os.environ.get("AVATAR_BRIDGE_ENGINES", _REPO_ENGINES))
