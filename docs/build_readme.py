"""Assemble README.md from the sections in docs/readme/ (each owned and tested with its feature).

Run ``python docs/build_readme.py``; ``tests/unit_tests/test_readme.py`` fails when README.md is
out of date, so a section cannot change without the README changing with it.

Numbers are never typed into a section: a line ``<!-- results: NAME.md -->`` (or
``<!-- results: NAME.md # HEADING -->``) is replaced by the first table of
``benchmarks/results/NAME.md`` (after the heading that starts with ``HEADING``), exactly
as the benchmark script wrote it. Re-running a benchmark and rebuilding the README is the
only way a number in it changes.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
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
_MARKER = re.compile(r"^<!-- results: (?P<name>[\w.-]+\.md)(?: # (?P<heading>[^>]+?))? -->$", re.M)


def results_table(name: str, heading: str | None = None) -> str:
    """The first Markdown table of a results file (after ``heading`` when given)."""
    lines = (RESULTS / name).read_text(encoding="utf-8").splitlines()
    start = 0
    if heading:
        start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip().startswith(heading.strip()))
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[first:end])


def _expand(text: str) -> str:
    return _MARKER.sub(lambda m: results_table(m["name"], m["heading"]), text)


def build() -> str:
    """The README text."""
    parts = [_expand((ROOT / "docs" / "readme" / name).read_text(encoding="utf-8").strip()) for name in SECTIONS]
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    (ROOT / "README.md").write_text(build(), encoding="utf-8")
