"""Write the console screenshots ``docs/console.md`` shows: ``docs/screenshots/<page>-<lang>-<size>.png``.

Runs the same seeded console the browser tests drive (``tests/integration_tests/ui/test_console_browser.py``:
an embedded store with the fake n-gram embedder, served on a free loopback port) and photographs every
page in zh and en, at desktop (1280 × 800) and phone (390 × 844) size, in the system Chromium with
Playwright (no browser download). From the repository root::

    PYTHONPATH=. .venv/bin/python docs/screenshots/make_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.integration_tests.ui.test_console_browser import CHROMIUM, PHONE, VIEWPORT, login, pages, running_console

OUT = Path(__file__).resolve().parent
SIZES = {"desktop": VIEWPORT, "phone": PHONE}
SHOWN = ("memories", "search", "memory", "review", "run", "runs", "plots", "forget")
"""The pages photographed, in the order the docs show them."""


def main() -> int:
    """Photograph every page, both languages, both sizes, into ``docs/screenshots``."""
    for old in OUT.glob("*.png"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp, running_console(Path(tmp) / "store") as s, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport=VIEWPORT)
        prefix = login(page, s)
        for lang in ("zh", "en"):
            every = pages(s, lang)
            for name in SHOWN:
                path, _ = every[name]
                for size, viewport in SIZES.items():
                    page.set_viewport_size(viewport)
                    page.goto(f"{s.base}{prefix}{path}{'&' if '?' in path else '?'}lang={lang}")
                    target = OUT / f"{name}-{lang}-{size}.png"
                    page.screenshot(path=str(target))
                    sys.stdout.write(f"{target.relative_to(OUT.parents[1])}: {target.stat().st_size // 1024} KB\n")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
