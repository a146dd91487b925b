"""Headless Chromium for the viewer's screenshots, tests and benchmark: Debian's own browser, driven by
Playwright through `executable_path`, so nothing downloads a browser."""

from __future__ import annotations

import shutil

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# Software WebGL: headless here has no GPU; SwiftShader is the renderer Chromium falls back to, and
# it must be asked for by name since Chromium 137 (--enable-unsafe-swiftshader).
_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
)


def launch_args() -> list[str]:
    return list(_ARGS)
