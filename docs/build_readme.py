"""Assemble README.md from the sections in docs/readme/ (each owned and tested with its feature).

Run ``python docs/build_readme.py``; ``tests/unit_tests/test_readme.py`` fails when README.md is
out of date, so a section cannot change without the README changing with it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = [
    "00_intro.md",
    "quickstart.md",
    "adapters.md",
    "recall.md",
    "capture.md",
    "lifecycle.md",
    "cli.md",
    "embeddings.md",
    "sharing_mcp.md",
    "guarantees.md",
    "90_benchmarks.md",
    "99_development.md",
]


def build() -> str:
    """The README text."""
    parts = [(ROOT / "docs" / "readme" / name).read_text(encoding="utf-8").strip() for name in SECTIONS]
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    (ROOT / "README.md").write_text(build(), encoding="utf-8")
