"""Write the console screenshots ``docs/console.md`` shows: ``docs/img/console-*.png``.

Runs the same seeded console the browser tests drive (``tests/integration_tests/ui/test_console_browser.py``:
an embedded store with the fake n-gram embedder, served on a free loopback port) and photographs each
page in the system Chromium with Playwright (no browser download). From the repository root::

    PYTHONPATH=. python docs/screenshots/make_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.integration_tests.ui.test_console_browser import CHROMIUM, TEXTS, running_console

OUT = Path(__file__).resolve().parents[1] / "img"
VIEWPORT = {"width": 1000, "height": 640}


def main() -> int:
    """Photograph each page (zh, the English search too) into ``docs/img``."""
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, running_console(Path(tmp) / "store") as s, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{s.base}/?token={s.token}")
        shots = {
            "memories": "/memories?lang=zh",
            "search": f"/memories?lang=zh&q={TEXTS['zh']['query']}",
            "search-en": f"/memories?lang=en&q={TEXTS['en']['query']}",
            "memory": f"/memories/{s.ids['zh:search']}?lang=zh",
            "review": "/review?lang=zh",
            "run": "/runs/run-wrong-zh?lang=zh",
            "forget": f"/memories/{s.ids['zh:forget']}/forget?lang=zh",
            "plots": "/plots?lang=zh",
        }
        for name, path in shots.items():
            page.goto(s.base + path)
            target = OUT / f"console-{name}.png"
            page.screenshot(path=str(target))
            sys.stdout.write(f"{target.relative_to(OUT.parents[1])}: {target.stat().st_size // 1024} KB\n")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
