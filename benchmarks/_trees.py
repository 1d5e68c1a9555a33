"""Measuring two checkouts in turn: a benchmark's ``measure`` run in a process importing another tree's package."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
MACHINE = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared)"
"""The machine line of an A/B report."""


def arms(baseline: Path | None) -> dict[str, Path]:
    """The checkouts to measure in turn: ``baseline`` (when given), then this one."""
    here = BENCHMARKS.parent
    return {"baseline": baseline, "this tree": here} if baseline else {"this tree": here}


def measure_in(tree: Path, module: str, call: str) -> Any:
    """``module.call`` (a benchmark module of this checkout) in a fresh interpreter importing ``tree``'s package.

    The call's value is printed as JSON by the child, which runs in ``tree`` with ``tree`` on ``PYTHONPATH``.
    """
    code = (
        f"import sys, json; sys.path.insert(0, {str(BENCHMARKS)!r}); import {module} as m; print(json.dumps(m.{call}))"
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def save(name: str, results: dict[str, Any], render: Callable[[dict[str, Any]], str]) -> None:
    """Write ``results/<name>.json`` and ``results/<name>.md`` (``render(results)``), then print the Markdown."""
    out = BENCHMARKS / "results"
    out.mkdir(exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    text = render(results)
    (out / f"{name}.md").write_text(text, encoding="utf-8")
    print(text)
