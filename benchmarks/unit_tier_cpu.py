"""CPU time of the unit tier, as ``make unit`` runs it: the total over every process, and where it goes.

Runs ``pytest tests/unit_tests -m "not integration"`` (``make unit``'s command: one process) once, in a child
process, and reports

* the CPU time of the whole run (user + system, summed over every process: :func:`resource.getrusage` of the
  finished children), next to its wall time;
* per process, the CPU spent before the first test (start-up, plugins, importing the test modules) and in the
  tests;
* the test files that cost the most CPU (setup + call + teardown, via ``benchmarks/_tier_cpu_plugin.py``);
* the run keeps its temporary files under its own ``--basetemp`` and deletes them after, in a child process
  whose CPU is counted with the run's: left to itself, pytest deletes the oldest of the last runs' trees under
  ``/tmp/pytest-of-<user>`` at exit, which may be any run's (another tier's, another checkout's) on a shared
  machine;
* for comparison, the same tier on ``--compare-workers`` pytest-xdist workers (``-n 2 --dist loadfile``; 0 skips
  it): each worker starts up and collects the whole tier again, and the controller is one more process, so
  the CPU summed over them is higher, for a shorter wall time on an idle machine. ``make unit`` runs the tier
  in one process because the budget is CPU.

The unit tier's budget (issue 21) is 60 s of CPU; this script measures it, it asserts nothing: a run
that fails a test is reported with its exit code. CPU time is less sensitive than wall time to other
load on a shared machine, but not immune (caches, frequency): compare runs made on an idle machine, or
pass ``--baseline DIR`` (a checkout of the commit to compare with, e.g. ``git archive main | tar -x -C DIR``):
the same tier there is measured in the same run, alternating with this checkout's ``--repeat`` times, and the
report gives both and their ratio (this script's interpreter runs both: the checkout's own package and tests are
imported from its directory).

Writes benchmarks/results/unit_tier_cpu.json and .md.

Run: .venv/bin/python benchmarks/unit_tier_cpu.py [--compare-workers 2] [--top 15] [--note "..."]
     [--baseline DIR --repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
BUDGET_S = 60.0
"""Issue 21: the unit tier under 60 s of CPU, summed over the workers."""


def command(workers: int) -> list[str]:
    """``make unit``'s pytest command (``workers`` 0), or the same on that many xdist workers; with the plugin."""
    spread = ["-n", str(workers), "--dist", "loadfile"] if workers else []
    return [
        sys.executable,
        "-m",
        "pytest",
        "tests/unit_tests",
        "-m",
        "not integration",
        *spread,
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "_tier_cpu_plugin",
    ]


def measure(workers: int, root: Path = ROOT) -> dict[str, Any]:
    """Run the unit tier of the checkout at ``root`` once; its CPU and wall time, and each process's report."""
    with tempfile.TemporaryDirectory() as reports, tempfile.TemporaryDirectory() as scratch:
        basetemp = Path(scratch, "basetemp")
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TIER_CPU_DIR": reports,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        }
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [*command(workers), "--basetemp", str(basetemp)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        subprocess.run(["rm", "-rf", str(basetemp)], check=True)  # the run's own files: their deletion is its cost
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        processes = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path(reports).glob("*.json"))]
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return {
        "exit_code": done.returncode,
        "pytest_summary": summary,
        "cpu_user_s": after.ru_utime - before.ru_utime,
        "cpu_system_s": after.ru_stime - before.ru_stime,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "wall_s": wall,
        "processes": processes,
    }


def per_file(processes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """CPU seconds and test counts per test file, summed over the workers that ran its tests."""
    files: dict[str, dict[str, float]] = {}
    for process in processes:
        for path, row in process["files"].items():
            entry = files.setdefault(path, {"cpu_s": 0.0, "tests": 0})
            entry["cpu_s"] += row["cpu_s"]
            entry["tests"] += row["tests"]
    return dict(sorted(files.items(), key=lambda kv: -kv[1]["cpu_s"]))


def _start_up(processes: list[dict[str, Any]]) -> float:
    """CPU before the first test, summed over the processes that ran tests (an xdist controller runs none)."""
    workers_only = [p for p in processes if p["worker"] != "controller"] or processes
    return float(sum(p["cpu_at_collection_s"] or 0.0 for p in workers_only))


def report(
    run: dict[str, Any],
    compared: dict[str, Any] | None,
    workers: int,
    top: int,
    note: str,
    baseline: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], str]:
    """The JSON record and the Markdown page: ``run`` is make unit's, ``compared`` the run on ``workers`` workers."""
    files = per_file(run["processes"])
    start_up = _start_up(run["processes"])
    in_tests = sum(row["cpu_s"] for row in files.values())
    record = {
        "command": " ".join(["pytest", *command(0)[3:]]),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average": os.getloadavg(),
            # Set (as on the machine these numbers come from), every process compiles and assert-rewrites the test
            # modules afresh; unset, the second run reads them from __pycache__ and starts faster.
            "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
        },
        "note": note,
        "budget_cpu_s": BUDGET_S,
        "tests": int(sum(row["tests"] for row in files.values())),
        "worker_start_up_cpu_s": start_up,
        "in_tests_cpu_s": in_tests,
        "files": files,
        **{k: v for k, v in run.items() if k != "processes"},
        "processes": [{k: v for k, v in p.items() if k != "files"} for p in run["processes"]],
        "compared": None
        if compared is None
        else {
            "command": " ".join(["pytest", *command(workers)[3:]]),
            "workers": workers,
            **{k: v for k, v in compared.items() if k != "processes"},
            "worker_start_up_cpu_s": _start_up(compared["processes"]),
        },
        "baseline": baseline,
    }
    lines = [
        "# Unit tier CPU time",
        "",
        f"`{record['command']}` on {record['machine']['cpus']} CPUs, Python {record['machine']['python']}"
        + (f" ({note})" if note else "")
        + f", load average {os.getloadavg()[0]:.1f}"
        + f"; pytest: {run['pytest_summary']} (exit {run['exit_code']}).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| tests run | {record['tests']} |",
        f"| CPU, all processes (user + system) | {run['cpu_s']:.1f} s |",
        f"| budget | {BUDGET_S:.0f} s ({'within' if run['cpu_s'] <= BUDGET_S else 'over'}) |",
        f"| of which start-up and collection (imports, assert rewriting) | {start_up:.1f} s |",
        f"| of which in tests (setup, call, teardown) | {in_tests:.1f} s |",
        f"| wall time | {run['wall_s']:.1f} s |",
    ]
    if compared is not None:
        lines += [
            f"| the same tier on {workers} xdist workers (`-n {workers} --dist loadfile`): CPU | "
            f"{compared['cpu_s']:.1f} s |",
            f"| … of which start-up and collection, summed over the workers | {_start_up(compared['processes']):.1f} s |",
            f"| … wall time | {compared['wall_s']:.1f} s |",
        ]
    if baseline is not None:
        lines += [
            "",
            f"Same-run baseline, {baseline['label']}: the same command in that checkout, alternating with this one's "
            f"{len(baseline['cpu_s'])} time(s) (pytest: {baseline['pytest_summary']}).",
            "",
            "| run | CPU, this checkout | CPU, baseline | ratio |",
            "|---|---|---|---|",
        ]
        for i, (ours, theirs) in enumerate(zip(baseline["ours_cpu_s"], baseline["cpu_s"], strict=True), 1):
            lines.append(f"| {i} | {ours:.1f} s | {theirs:.1f} s | {ours / theirs:.2f} |")
    lines += [
        "",
        f"## The {top} test files that cost the most CPU",
        "",
        "| test file | tests | CPU |",
        "|---|---|---|",
    ]
    for path, row in list(files.items())[:top]:
        lines.append(f"| `{path}` | {int(row['tests'])} | {row['cpu_s']:.1f} s |")
    return record, "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--compare-workers", type=int, default=2, help="also run the tier on this many xdist workers (0: don't)"
    )
    parser.add_argument("--top", type=int, default=15, help="how many test files to list")
    parser.add_argument("--note", default="", help="a note on the machine's state, shown in the report")
    parser.add_argument("--baseline", type=Path, help="a checkout to measure the same tier in, in the same run")
    parser.add_argument("--baseline-label", default="main", help="what the baseline checkout is, for the report")
    parser.add_argument("--repeat", type=int, default=1, help="with --baseline: alternating runs of each")
    args = parser.parse_args()
    runs, base_runs = [], []
    for _ in range(args.repeat if args.baseline else 1):
        runs.append(measure(0))
        if args.baseline:
            base_runs.append(measure(0, args.baseline.resolve()))
    run = min(runs, key=lambda r: r["cpu_s"])  # the least disturbed of this checkout's runs
    baseline = (
        {
            "label": args.baseline_label,
            "cpu_s": [r["cpu_s"] for r in base_runs],
            "ours_cpu_s": [r["cpu_s"] for r in runs],
            "pytest_summary": base_runs[-1]["pytest_summary"],
            "exit_code": base_runs[-1]["exit_code"],
        }
        if base_runs
        else None
    )
    compared = measure(args.compare_workers) if args.compare_workers else None
    record, page = report(run, compared, args.compare_workers, args.top, args.note, baseline)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "unit_tier_cpu.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", "utf-8")
    (RESULTS / "unit_tier_cpu.md").write_text(page, encoding="utf-8")
    print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
