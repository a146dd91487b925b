"""`demo --viewer` and the demo's pictures of the real avatar: the viewer on the demo's bridge, and a
screenshot (viewer.png) and a short clip (viewer.mp4, where ffmpeg is) of it from headless Chromium
(where Chromium and Playwright are installed) beside the plots."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import subprocess
import threading
import time
import webbrowser
from pathlib import Path
from typing import Any

from bridge.clients.viewer.browser import CHROMIUM, launch_args
from bridge.clients.viewer.cli import parse_address, start_viewer
from bridge.clients.viewer.clip import ScreencastClip, can_encode
from bridge.clients.viewer.process import ViewerProcess

log = logging.getLogger(__name__)
SIZE = (1280, 720)  # the page's viewport for the pictures
CLIP_S = 4.0  # viewer.mp4's length, or less where the demo's sessions end first


def add_demo_viewer_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--viewer",
        type=parse_address,
        metavar="[HOST:]PORT",
        help="also serve the live 3D viewer page here while the demo runs (and open a browser on it)",
    )


def can_screenshot() -> bool:
    return Path(CHROMIUM).exists() and importlib.util.find_spec("playwright") is not None


class DemoViewer:
    """The viewer while the demo runs; `finish()` returns the pictures written."""

    def __init__(self, viewer: ViewerProcess, out: Path, at_s: float, shoot: bool) -> None:
        self.viewer = viewer
        self.written: list[Path] = []
        self._out = out
        self._at_s = at_s
        self._done = threading.Event()  # the demo's sessions are over
        self.page_ready = threading.Event()  # the page is up with its avatar parsed: sessions may start
        self._thread = threading.Thread(target=self._shoot, name="viewer screenshots", daemon=True)
        if shoot:
            self._thread.start()

    def _shoot(self) -> None:
        from playwright.sync_api import Error, sync_playwright

        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=launch_args())
                page = browser.new_page(viewport={"width": SIZE[0], "height": SIZE[1]}, bypass_csp=True)
                page.goto(self.viewer.url)
                page.wait_for_function("window.__viewer && window.__viewer.avatarUrl", timeout=60_000)
                self.page_ready.set()
                # Avatars shown and moving (the demo's sessions start together), then the picture; a
                # demo that ends first (finish()) ends the wait.
                moving = (
                    "(() => { const s = Object.values(window.__viewer.sessions);"
                    " return s.filter((e) => e.loaded && e.applied > 5).length >= 2; })()"
                )
                while not page.evaluate(moving):
                    if self._done.wait(0.2):
                        browser.close()
                        return
                time.sleep(min(self._at_s, 1.0))  # a moment of motion
                path = self._out / "viewer.png"
                page.screenshot(path=str(path))
                self.written.append(path)
                if can_encode():
                    self._record(page)
                else:
                    print("viewer.mp4 skipped: needs the ffmpeg command")
                browser.close()
        except Error as exc:
            log.warning("viewer screenshot skipped: %s", exc)
        finally:
            self.page_ready.set()

    def _record(self, page: Any) -> None:
        """viewer.mp4: the page for CLIP_S seconds, or until the demo's sessions end."""
        clip = ScreencastClip(page, SIZE)
        clip.start()
        deadline = time.monotonic() + CLIP_S + 5.0  # a page too slow to send frames does not hold the demo
        while clip.seconds < CLIP_S and not self._done.is_set() and time.monotonic() < deadline:
            page.wait_for_timeout(100)  # Playwright delivers the screencast's frames while it waits
        clip.stop()
        try:
            self.written.append(clip.write(self._out / "viewer.mp4"))
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            log.warning("viewer.mp4 skipped: %s", exc)

    def finish(self) -> list[Path]:
        """After the demo's sessions: the picture taken, if they lasted long enough for one."""
        self._done.set()
        if self._thread.ident is not None:
            self._thread.join(30)
        self.viewer.stop()
        return self.written


def start_demo_viewer(
    address: tuple[str, int] | None, frames_endpoint: str, out: Path, seconds: float
) -> DemoViewer | None:
    """The demo's viewer: on `address` (`--viewer`, a browser opened on it), or on a free loopback port
    just for the screenshots; None when there is neither."""
    shoot = can_screenshot()
    if address is None and not shoot:
        print("viewer.png skipped: needs Debian's chromium and playwright (scripts/install.sh --dev)")
        return None
    args = argparse.Namespace(viewer=address or ("127.0.0.1", 0), avatar=None)
    viewer = start_viewer(args, frames_endpoint, insecure_remote=False)
    assert viewer is not None
    if address is not None:
        print(f"viewer {viewer.url}", flush=True)
        webbrowser.open(viewer.url)
    demo = DemoViewer(viewer, out, at_s=seconds * 0.5, shoot=shoot)
    if shoot:  # the avatars must be on screen while the demo's sessions run
        demo.page_ready.wait(90)
    return demo
