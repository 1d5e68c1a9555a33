"""A pytest plugin for ``benchmarks/unit_tier_cpu.py``: the CPU time each test file costs, per process.

Loaded with ``-p _tier_cpu_plugin`` (``benchmarks/`` on ``PYTHONPATH``), in the controller and in every
xdist worker. Each process writes one JSON file into ``$TIER_CPU_DIR``: its CPU time (user + system,
every thread: :func:`time.process_time`) at the end of collection and at the end of the session, and
the CPU time of each test's setup, call and teardown, per test and summed per test file (a module- or
session-scoped fixture is paid by the first test that requests it, so it lands in that test's file).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest

_files: defaultdict[str, float] = defaultdict(float)
_tests: defaultdict[str, int] = defaultdict(int)
_each: dict[str, float] = {}
_collected: list[float] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note the CPU spent by the end of collection (start-up, plugins, imports of the test modules)."""
    _collected.append(time.process_time())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """Add the CPU time of one test (setup, call, teardown) to its file."""
    start = time.process_time()
    yield
    path = item.nodeid.split("::", 1)[0]
    _each[item.nodeid] = time.process_time() - start
    _files[path] += _each[item.nodeid]
    _tests[path] += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write this process's numbers to ``$TIER_CPU_DIR/<worker>.json``."""
    directory = os.environ.get("TIER_CPU_DIR")
    if not directory:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    report = {
        "worker": worker,
        "cpu_at_collection_s": _collected[0] if _collected else None,
        "cpu_total_s": time.process_time(),
        "files": {path: {"cpu_s": cpu, "tests": _tests[path]} for path, cpu in _files.items()},
        "tests": _each,
    }
    Path(directory, f"{worker}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
